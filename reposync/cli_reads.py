"""The command line's reads: ``reposync runs`` and ``reposync bindings``.

The API's own queries and schemas, as the command line's user (``service.users.operator``:
whoever can open the database), so ``--json`` prints what the matching API call answers
and a table otherwise. Imported only when one of these commands runs: ``reposync sync``
never pays for the web schemas.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from marshmallow import Schema

from reposync.console import (
    BINDING_COLUMNS,
    EVENT_HEADER,
    RUN_COLUMNS,
    dump,
    event_line,
    render_binding,
    render_run,
    render_table,
)
from reposync.errors import UsageError
from reposync.lifecycle import RunStatus
from reposync.models import User
from reposync.service import queries
from reposync.service.accounts.users import operator
from reposync.service.context import ServiceContext
from reposync.service.queries import MAX_PAGE, run_events
from reposync.service.runs import request_cancel
from reposync.web.pagination import page
from reposync.web.schemas.bindings import BindingPageSchema, BindingSchema
from reposync.web.schemas.events import RunEventSchema
from reposync.web.schemas.runs import (
    RunPageSchema,
    RunProgressSchema,
    RunSchema,
    RunSummarySchema,
)

#: How often ``reposync runs events --follow`` asks for more.
FOLLOW_POLL_SECONDS = 1.0


def runs(ctx: ServiceContext, args: argparse.Namespace) -> int:
    """``reposync runs list|show|events|cancel``."""
    user = operator()
    command = args.runs_command
    if command == "list":
        _check_page_size(args.limit)
        rows = queries.list_runs(
            ctx,
            user,
            status=args.status,
            binding_id=args.binding,
            after_id=args.after_id,
            limit=args.limit,
        )
        _print_page(RunPageSchema(), page(rows, args.limit), RUN_COLUMNS, args.json)
    elif command == "show":
        run = dump(RunSchema(), queries.get_run_for(ctx, user, args.run_id))
        if args.json:
            print(json.dumps(run))
        else:
            binding = _binding_dump(queries.get_binding_for(ctx, user, run["binding_id"]))
            progress = dump(RunProgressSchema(), queries.run_progress(ctx, user, run["id"]))
            print(render_run(run, binding, progress))
    elif command == "events":
        return _events(ctx, user, args)
    else:
        run = dump(RunSchema(), request_cancel(ctx, args.run_id))
        if args.json:
            print(json.dumps(run))
        elif run.get("interrupted"):
            print(
                f"run {run['id']}: cancel requested; nothing executes it now, so it ends "
                f"cancelled when the next `reposync sync` of the pair (or a worker) resumes "
                f"it (it is {run['status']} in stage {run['stage']})"
            )
        elif RunStatus(run["status"]).is_active:
            print(
                f"run {run['id']}: cancel requested; it stops at its next cancellation "
                f"point, a running push within seconds (it is {run['status']} in stage "
                f"{run['stage']})"
            )
        else:
            print(f"run {run['id']} already ended: {run['status']}")
    return 0


def _events(ctx: ServiceContext, user: User, args: argparse.Namespace) -> int:
    """Page through a Run's events; ``--follow`` goes on until the Run has ended."""
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be at least 1, not {args.limit}")
    schema = RunEventSchema(many=True)
    items: list[Any] = []
    after: int | None = args.after_seq
    header_shown = False
    while after is not None:
        want = MAX_PAGE if args.limit is None else min(MAX_PAGE, args.limit - len(items))
        if want <= 0:
            break
        found = run_events(ctx, user, args.run_id, after_seq=after, limit=want)
        shown = dump(schema, found.items)
        if not args.json:
            # A poll that found nothing prints nothing: a follower's terminal or log
            # shows events, never the empty lines of waiting.
            lines = [event_line(event) for event in shown]
            if not header_shown:
                lines.insert(0, EVENT_HEADER)
                header_shown = True
            if lines:
                print("\n".join(lines), flush=True)
        items += shown
        after = found.next_after_seq
        if len(found.items) < want and after is not None:  # caught up with an active Run
            if not args.follow:
                break
            time.sleep(FOLLOW_POLL_SECONDS)
    if args.json:
        print(json.dumps({"items": items, "next_after_seq": after}))
    elif after is not None and not args.follow:
        _more(f"--after-seq {after}")
    return 0


def bindings(ctx: ServiceContext, args: argparse.Namespace) -> int:
    """``reposync bindings list|show``."""
    user = operator()
    if args.bindings_command == "list":
        _check_page_size(args.limit)
        rows = queries.list_bindings(
            ctx,
            user,
            repository_id=args.repository_id,
            after_id=args.after_id,
            limit=args.limit,
        )
        _print_page(BindingPageSchema(), page(rows, args.limit), BINDING_COLUMNS, args.json)
    else:
        binding = _binding_dump(queries.get_binding_for(ctx, user, args.binding_id))
        if args.json:
            print(json.dumps(binding))
        else:
            latest = queries.list_runs(ctx, user, binding_id=binding["id"], limit=5)
            runs = dump(RunSummarySchema(many=True), latest)
            print(render_binding(binding, runs))
    return 0


def _binding_dump(binding: Any) -> Any:
    return dump(BindingSchema(), binding)


def _check_page_size(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"--limit must be between 1 and {MAX_PAGE}, not {limit}")


def _print_page(
    schema: Schema,
    shown_page: dict[str, Any],
    columns: Sequence[tuple[str, Callable[[Any], Any]]],
    as_json: bool,
) -> None:
    """One page of a listing as the API shows it (``--json``) or as a table, and on
    stderr how to get the next one."""
    shown = dump(schema, shown_page)
    if as_json:
        print(json.dumps(shown))
        return
    print(render_table(columns, shown["items"]))
    if shown["next_after_id"] is not None:
        _more(f"--after-id {shown['next_after_id']}")


def _more(option: str) -> None:
    """Tell the reader of a listing how to go on (on stderr: stdout stays the listing)."""
    print(f"reposync: there is more: run the same command with {option}", file=sys.stderr)
