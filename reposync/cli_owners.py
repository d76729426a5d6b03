"""``reposync bind-all SOURCE_OWNER TARGET_OWNER``: bind two owners whole.

The pass runs in this process, as ``reposync sync`` runs its Run. What comes after
depends on the mode: in the distributed mode (``REPOSYNC_DATABASE_URL``) the new
Bindings' first Runs go to the workers and later passes run on the owner binding's cron;
in the embedded mode this command is the worker, so it then syncs every Binding of the
owner binding in turn (a new one with a full audit), and running it again is the next
pass. The command line builds its parser from here at every start, so the service is
imported only when ``bind-all`` runs (inside ``bind_all``: the start-up of every other
command stays free of it).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reposync.config import Settings
from reposync.sync.vocabulary import RefConflictPolicy

if TYPE_CHECKING:
    from reposync.models.db import Database
    from reposync.service.context import Dispatcher, ServiceContext
    from reposync.service.owner_pass import PassReport

#: When passes run by themselves (``service.owners.DEFAULT_PASS_CRON``, repeated here:
#: see above; a test keeps the two equal).
DEFAULT_PASS_CRON = "0 * * * *"


def add_parser(commands: Any) -> None:
    """The ``bind-all`` subcommand, on the command line's subparsers."""
    parser = commands.add_parser(
        "bind-all",
        help="bind every repository of SOURCE_OWNER to its namesake of TARGET_OWNER, "
        "creating missing targets; again: bind the new ones",
    )
    parser.add_argument("source", metavar="SOURCE_OWNER", help="e.g. local:/srv/forge")
    parser.add_argument("target", metavar="TARGET_OWNER", help="e.g. github:acme")
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be bound; write nothing"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object: the pass and its Runs"
    )
    parser.add_argument(
        "--schedule",
        metavar="CRON",
        help="give each Binding made this schedule (UTC; slots spread over its period, "
        "sync switched on after its first full apply)",
    )
    passes = parser.add_mutually_exclusive_group()
    passes.add_argument(
        "--pass-schedule",
        metavar="CRON",
        help="when workers look for new source repositories (default: as before, "
        f"{DEFAULT_PASS_CRON!r} for a new owner binding)",
    )
    passes.add_argument(
        "--no-pass-schedule",
        action="store_true",
        help="look for new source repositories only when this command runs again",
    )
    parser.add_argument(
        "--conflict-policy",
        choices=[p.value for p in RefConflictPolicy],
        help="for same-named target branches Git cannot prove are behind",
    )
    parser.add_argument(
        "--confirm-visibility",
        action="store_true",
        help="confirm that existing targets may be more public than their sources (a "
        "created target never is)",
    )
    for side in ("source", "target"):
        parser.add_argument(
            f"--{side}-connection",
            metavar="CONNECTION",
            help=f"open the {side} owner's repositories with this connection",
        )


@dataclass(frozen=True, slots=True)
class Synced:
    """One Binding's Run in the embedded mode (or why it could not run)."""

    binding_id: int
    run_id: int | None
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {"binding_id": self.binding_id, "run_id": self.run_id, "status": self.status}


def bind_all(settings: Settings, db: Database, args: argparse.Namespace) -> int:
    """Exit 0 when every repository is bound (and, embedded, synced); 1 when one needs
    the operator (a clash, a target that cannot be created, a failure, a Run that did
    not complete)."""
    from reposync.service import owners
    from reposync.service.context import ServiceContext

    distributed = bool(settings.database_url)
    ctx = ServiceContext(settings=settings, db=db, dispatcher=_dispatcher(distributed))
    request = owners.OwnerRequest(
        args.source,
        args.target,
        dry_run=args.dry_run,
        conflict_policy=RefConflictPolicy(args.conflict_policy) if args.conflict_policy else None,
        schedule_cron=args.schedule,
        pass_cron=_pass_cron(args),
        confirm_visibility=args.confirm_visibility,
        source_connection=args.source_connection,
        target_connection=args.target_connection,
    )
    row, report = owners.bind_all(ctx, request, queue_runs=distributed)
    assert report is not None
    synced: list[Synced] = []
    if row is not None and not distributed:
        synced = _sync_members(ctx, row.id, report)
    if args.json:
        print(
            json.dumps(
                {
                    "owner_binding_id": row.id if row is not None else None,
                    "pass": report.to_dict(),
                    "runs": [run.to_dict() for run in synced],
                },
                sort_keys=True,
            )
        )
    else:
        print(render(report, synced))
    unfinished = any(run.status != "completed" for run in synced)
    return 1 if report.needs_action() or unfinished else 0


def _pass_cron(args: argparse.Namespace) -> str | None:
    """The pass schedule the command line names (None: none), else ``UNSET``: the owner
    binding keeps its own."""
    from reposync.service.bindings import UNSET

    if args.no_pass_schedule:
        return None
    if args.pass_schedule is not None:
        return str(args.pass_schedule)
    result: str | None = UNSET
    return result


def _dispatcher(distributed: bool) -> Dispatcher:
    from reposync.service.context import NoDispatch

    if not distributed:
        return NoDispatch()
    from reposync.tasks.base import CeleryDispatcher  # Celery only for the distributed mode

    return CeleryDispatcher()


def _sync_members(ctx: ServiceContext, owner_binding_id: int, report: PassReport) -> list[Synced]:
    """Each member Binding synced in this process, as ``reposync sync`` of its pair: a
    full audit for those this pass bound, a checkpoint for the others."""
    from reposync.errors import ReposyncError
    from reposync.models import Binding
    from reposync.service import owners
    from reposync.service.bindings import SyncRequest
    from reposync.service.embedded import sync
    from reposync.service.owner_pass import Outcome

    fresh = {
        repo.binding_id
        for repo in report.repositories
        if repo.outcome in (Outcome.CREATED, Outcome.BOUND)
    }
    done = []
    for member in owners.members_of(ctx, owner_binding_id):
        if member.binding_id is None:
            continue
        with ctx.db.session() as session:
            binding = session.get(Binding, member.binding_id)
            assert binding is not None
            source = binding.side(binding.authority)
            target = binding.side(binding.authority.other)
        request = SyncRequest(
            f"{source[0]}:{source[2]}",
            f"{target[0]}:{target[2]}",
            full_audit=member.binding_id in fresh,
            source_connection=source[3],
            target_connection=target[3],
        )
        try:
            run = sync(ctx, request)
        except ReposyncError as error:
            done.append(Synced(member.binding_id, None, error.code))
            continue
        done.append(Synced(member.binding_id, run.id, run.status))
    return done


def render(report: PassReport, synced: list[Synced]) -> str:
    """The pass, one line per repository, then the Runs of the embedded mode."""
    lines = [
        f"{'dry run: ' if report.dry_run else ''}{report.source} -> {report.target}"
        f"{f' (owner binding {report.owner_binding_id})' if report.owner_binding_id else ''}: "
        f"{report.found} source repositories"
    ]
    width = max((len(repo.name) for repo in report.repositories), default=0)
    for repo in report.repositories:
        where = f" -> {repo.target}" if repo.target else ""
        facts = [f"binding {repo.binding_id}"] if repo.binding_id else []
        if repo.run_id:
            facts.append(f"run {repo.run_id}")
        detail = f" ({', '.join(facts)})" if facts else ""
        why = f": {repo.message}" if repo.message else ""
        code = f" [{repo.error_code}]" if repo.error_code else ""
        lines.append(f"  {repo.outcome.value:<14} {repo.name:<{width}}{where}{detail}{why}{code}")
    if report.error_code:
        lines.append(f"the pass stopped: {report.message} [{report.error_code}]")
    counts = ", ".join(f"{count} {outcome}" for outcome, count in report.counts().items())
    lines.append(counts or "no source repository")
    for run in synced:
        what = f"run {run.run_id}" if run.run_id is not None else "no run"
        lines.append(f"  binding {run.binding_id}: {what} {run.status}")
    if report.dry_run:
        lines.append("dry run: nothing was written")
    return "\n".join(lines)
