"""The ``reposync`` command line: parse, call a service, render. Nothing else."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from reposync.config import Settings
from reposync.errors import RecordNotFound, ReposyncError
from reposync.sync.vocabulary import RefConflictPolicy

CONFIRM_HELP = (
    "confirm that TARGET may be more public than SOURCE (a later visibility change "
    "withdraws the confirmation)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reposync", description="Keep two Git forge repositories in sync."
    )
    parser.add_argument(
        "--data-dir",
        help="data directory of the embedded mode "
        "(default: $REPOSYNC_DATA_DIR or the user's data directory)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sync = commands.add_parser("sync", help="run one sync from SOURCE to TARGET in-process")
    sync.add_argument("source", metavar="SOURCE", help="e.g. local:/srv/forge/app.git")
    sync.add_argument("target", metavar="TARGET", help="e.g. local:/backup/app.git")
    sync.add_argument(
        "--dry-run", action="store_true", help="plan and report; write nothing to the target"
    )
    sync.add_argument(
        "--full-audit",
        action="store_true",
        help="read back every managed object on the target and repair drift",
    )
    sync.add_argument(
        "--json", action="store_true", help="print exactly one JSON object: the final Run report"
    )
    sync.add_argument(
        "--conflict-policy",
        choices=[p.value for p in RefConflictPolicy],
        help="for same-named target branches Git cannot prove are behind",
    )
    sync.add_argument("--confirm-visibility", action="store_true", help=CONFIRM_HELP)

    handoff = commands.add_parser(
        "handoff", help="make TARGET the authority of the pair, in-process (after a full sync)"
    )
    handoff.add_argument("source", metavar="SOURCE", help="the current authority")
    handoff.add_argument("target", metavar="TARGET", help="the standby that takes over")
    handoff.add_argument("--json", action="store_true", help="print the outcome as JSON")
    handoff.add_argument("--confirm-visibility", action="store_true", help=CONFIRM_HELP)

    commands.add_parser("worker", help="run a Celery worker (distributed mode)")
    commands.add_parser("beat", help="run celery beat: the recovery and schedule tick")
    api = commands.add_parser("api", help="serve the HTTP API with gunicorn")
    api.add_argument("--bind", help="host:port (default: $REPOSYNC_API_BIND)")
    user = commands.add_parser("user", help="API users, their tokens and repository grants")
    user_commands = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    add = user_commands.add_parser("add", help="create a user and print its first API token")
    add.add_argument("login")
    add.add_argument("--role", choices=["admin", "member"], default="member")
    add.add_argument("--days", type=int, help="lifetime of its token (0: until revoked)")
    token = user_commands.add_parser("token", help="print a new API token for a user")
    token.add_argument("login")
    token.add_argument("--name", default="", help="what the token is for")
    token.add_argument(
        "--days", type=int, help="lifetime (default: $REPOSYNC_API_TOKEN_DAYS; 0: until revoked)"
    )
    tokens = user_commands.add_parser("tokens", help="list a user's tokens (never the secrets)")
    tokens.add_argument("login")
    revoke = user_commands.add_parser("revoke", help="revoke one token for good")
    revoke.add_argument("token_id", type=int, help="as `reposync user tokens` shows it")
    remove = user_commands.add_parser("delete", help="delete a user, its tokens and grants")
    remove.add_argument("login")
    for action, text in (
        ("grant", "let a member see the Bindings of one repository"),
        ("ungrant", "take a repository grant back"),
    ):
        grant = user_commands.add_parser(action, help=text)
        grant.add_argument("login")
        grant.add_argument("provider", help="e.g. local, github")
        grant.add_argument("repository_id", help="the immutable id a Binding shows for it")
    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_commands.add_parser("upgrade", help="apply every pending migration")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = Settings.from_env(data_dir=args.data_dir)
        if args.command == "sync":
            return _sync(settings, args)
        if args.command == "db":
            return _db_upgrade(settings)
        if args.command == "handoff":
            return _handoff(settings, args)
        if args.command == "user":
            return _user(settings, args)
        if args.command == "worker":
            from reposync.tasks.app import run_worker

            return run_worker(settings)
        if args.command == "beat":
            from reposync.tasks.app import run_beat

            return run_beat(settings)
        if args.command == "api":
            from reposync.web.server import serve

            return serve(settings, bind=args.bind)
    except ReposyncError as error:
        if getattr(args, "json", False):
            print(json.dumps({"status": "error", **error.to_dict()}))
        print(f"reposync: error: {error.message} [{error.code}]", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("reposync: interrupted; the Run resumes on the next invocation", file=sys.stderr)
        return 130
    return 0


def _sync(settings: Settings, args: argparse.Namespace) -> int:
    from reposync.console import ProgressLine, render_report
    from reposync.models.db import Database
    from reposync.service.bindings import SyncRequest
    from reposync.service.context import ServiceContext
    from reposync.service.embedded import sync

    request = SyncRequest(
        source=args.source,
        target=args.target,
        dry_run=args.dry_run,
        full_audit=args.full_audit,
        conflict_policy=RefConflictPolicy(args.conflict_policy) if args.conflict_policy else None,
        confirm_visibility=args.confirm_visibility,
    )
    db = Database(settings.effective_database_url)
    progress = None if args.json else ProgressLine()
    try:
        run = sync(ServiceContext(settings=settings, db=db), request, progress)
    finally:
        if progress is not None:
            progress.close()
        db.dispose()
    if run.status == "queued" and run.retry_at is not None:  # deferred by a rate limit
        message = (
            f"run {run.id} is deferred by the target's rate limit until "
            f"{run.retry_at.isoformat()}; run the same command again to resume it"
        )
        if args.json:
            print(
                json.dumps(
                    {"run_id": run.id, "status": "deferred", "retry_at": run.retry_at.isoformat()}
                )
            )
        else:
            print(message)
        return 1
    if args.json:
        print(json.dumps(run.report, sort_keys=True))
    else:
        print(render_report(run.report, args.source, args.target))
    return 0 if run.status == "completed" else 1


def _handoff(settings: Settings, args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from reposync.models.db import Database
    from reposync.service.bindings import SyncRequest, bind
    from reposync.service.context import ServiceContext
    from reposync.service.handoff import handoff

    db = Database(settings.effective_database_url)
    try:
        ctx = ServiceContext(settings=settings, db=db)
        request = SyncRequest(args.source, args.target, confirm_visibility=args.confirm_visibility)
        outcome = handoff(ctx, bind(ctx, request).id)
    finally:
        db.dispose()
    if args.json:
        print(json.dumps(asdict(outcome), sort_keys=True))
    elif outcome.switched:
        print(
            f"{args.target} is now the authority (epoch {outcome.authority_epoch}); "
            f"sync with `reposync sync {args.target} {args.source}`"
        )
    else:
        print(
            f"handoff aborted, {args.source} stays the authority: {outcome.reason} "
            f"(run {outcome.forward_run_id})"
        )
    return 0 if outcome.switched else 1


def _user(settings: Settings, args: argparse.Namespace) -> int:
    from reposync.models.db import Database
    from reposync.service import users
    from reposync.service.context import ServiceContext

    db = Database(settings.effective_database_url)
    try:
        db.ensure_current()
        ctx = ServiceContext(settings=settings, db=db)
        command = args.user_command
        if command == "add":
            created = users.create_user(ctx, args.login, args.role)
            print(users.issue_token(ctx, created.id, "initial", days=args.days))
        elif command == "token":
            found = users.find_user(ctx, args.login)
            print(users.issue_token(ctx, found.id, args.name, days=args.days))
        elif command == "tokens":
            for row in users.list_tokens(ctx, users.find_user(ctx, args.login).id):
                print(_token_line(row))
        elif command == "revoke":
            print(_token_line(users.revoke_token(ctx, args.token_id)))
        elif command == "delete":
            users.delete_user(ctx, users.find_user(ctx, args.login).id)
            print(f"deleted {args.login} with its tokens and grants")
        elif command == "ungrant":
            member = users.find_user(ctx, args.login)
            if not users.revoke_grant(ctx, member.id, args.provider, args.repository_id):
                raise RecordNotFound(
                    f"{args.login} has no grant on {args.provider} {args.repository_id}"
                )
            print(f"{args.login} no longer sees Bindings of {args.provider} {args.repository_id}")
        else:
            member = users.find_user(ctx, args.login)
            users.grant(ctx, member.id, args.provider, args.repository_id)
            print(f"{args.login} may see Bindings of {args.provider} {args.repository_id}")
    finally:
        db.dispose()
    return 0


def _token_line(token: Any) -> str:
    """One token as ``reposync user tokens`` lists it: id, state, name and dates."""
    from reposync.service.users import token_state

    def when(value: Any) -> str:
        return value.isoformat(timespec="seconds") if value is not None else "-"

    return (
        f"{token.id}\t{token_state(token)}\t{token.name or '-'}"
        f"\tcreated {when(token.created_at)}"
        f"\texpires {when(token.expires_at)}\tlast used {when(token.last_used_at)}"
    )


def _db_upgrade(settings: Settings) -> int:
    from reposync.models.db import Database

    db = Database(settings.effective_database_url)
    try:
        db.upgrade()
    finally:
        db.dispose()
    print("database schema is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
