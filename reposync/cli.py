"""The ``reposync`` command line: parse, call a service, render. Nothing else.

Each subcommand is one block of ``build_parser`` and one handler ``main`` calls.
reposync's own options (``--data-dir``, ``-v``, ``--version``) are accepted before the
subcommand and after it: ``_accept_global_options`` gives them to every subcommand, one
added later too. ``worker`` and ``beat`` hand every other argument to Celery.

Why ~630 lines: the parser of every subcommand is read as one table (``reposync
--help`` mirrors it); the reads, the owners' commands and the rendering already live in
``cli_reads``, ``cli_owners`` and ``console``, and what is left is each handler's few lines.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from reposync import __version__, cli_owners, logs, signals
from reposync.config import CREDENTIAL_URLS, Settings, read_env_file, url_has_password
from reposync.errors import RecordNotFound, ReposyncError, UsageError
from reposync.lifecycle import RunStatus
from reposync.sync.vocabulary import RefConflictPolicy

if TYPE_CHECKING:
    from reposync.models.db import Database
    from reposync.service.context import ServiceContext
    from reposync.service.embedded import Progress

log = logging.getLogger("reposync.cli")

CONFIRM_HELP = (
    "confirm that TARGET may be more public than SOURCE: required to bind such a pair "
    "(a later visibility change withdraws the confirmation)"
)
#: Subcommands that run a Celery program: the arguments reposync does not know are its.
CELERY_COMMANDS = ("worker", "beat")
#: Commands whose servers (Celery, gunicorn) have signal handling of their own.
SERVING_COMMANDS = (*CELERY_COMMANDS, "api")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reposync", description="Keep two Git forge repositories in sync."
    )
    _global_options(parser, subcommand=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # --- sync ---
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
    for side in ("source", "target"):
        sync.add_argument(
            f"--{side}-connection",
            metavar="CONNECTION",
            help=f"open the {side} with this connection (github:installation:ID: that "
            "installation of the App) instead of the configured credentials",
        )

    # --- bind-all ---
    cli_owners.add_parser(commands)

    # --- handoff ---
    handoff = commands.add_parser(
        "handoff", help="make TARGET the authority of the pair, in-process (after a full sync)"
    )
    handoff.add_argument("source", metavar="SOURCE", help="the current authority")
    handoff.add_argument("target", metavar="TARGET", help="the standby that takes over")
    handoff.add_argument("--json", action="store_true", help="print the outcome as JSON")
    handoff.add_argument("--confirm-visibility", action="store_true", help=CONFIRM_HELP)
    handoff.add_argument(
        "--confirm-writes-stopped",
        action="store_true",
        help="confirm nobody writes to SOURCE any more (required when reposync cannot "
        "freeze it: a GitHub repository)",
    )

    # --- runs ---
    runs = commands.add_parser("runs", help="list, show, follow and cancel Runs")
    runs_commands = runs.add_subparsers(dest="runs_command", required=True, metavar="ACTION")
    listing = runs_commands.add_parser("list", help="the Runs, newest first")
    listing.add_argument("--binding", type=int, metavar="ID", help="only this Binding's")
    listing.add_argument("--status", choices=[s.value for s in RunStatus])
    _page_options(listing, "continue below this run id (the last one shown)")
    show = runs_commands.add_parser("show", help="one Run: its status, progress and report")
    show.add_argument("run_id", type=int, metavar="RUN")
    _json_option(show)
    events = runs_commands.add_parser("events", help="what happened during a Run, in order")
    events.add_argument("run_id", type=int, metavar="RUN")
    events.add_argument(
        "--after-seq", type=int, default=0, metavar="SEQ", help="only the events after this one"
    )
    events.add_argument("--limit", type=int, metavar="N", help="at most N events")
    events.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing events as they are appended, until the Run ends",
    )
    _json_option(events)
    cancel = runs_commands.add_parser(
        "cancel", help="ask an active Run to stop (a running push within about a second)"
    )
    cancel.add_argument("run_id", type=int, metavar="RUN")
    _json_option(cancel)

    # --- bindings ---
    bindings = commands.add_parser("bindings", help="list and show Bindings")
    bindings_commands = bindings.add_subparsers(
        dest="bindings_command", required=True, metavar="ACTION"
    )
    listing = bindings_commands.add_parser("list", help="the Bindings, oldest first")
    listing.add_argument("--repository-id", metavar="ID", help="only those with this repository")
    _page_options(listing, "continue after this binding id (the last one shown)")
    show = bindings_commands.add_parser("show", help="one Binding and its latest Runs")
    show.add_argument("binding_id", type=int, metavar="BINDING")
    _json_option(show)

    # --- worker, beat, api: the distributed mode's processes ---
    commands.add_parser(
        "worker",
        help="run a Celery worker (distributed mode); every other option is Celery's "
        "(--concurrency, --queues, --loglevel, ...: `reposync worker --help`)",
        add_help=False,
        allow_abbrev=False,
    )
    commands.add_parser(
        "beat",
        help="run celery beat: the recovery and schedule tick; every other option is Celery's",
        add_help=False,
        allow_abbrev=False,
    )
    api = commands.add_parser("api", help="serve the HTTP API with gunicorn")
    api.add_argument("--bind", help="host:port (default: $REPOSYNC_API_BIND)")

    # --- user ---
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
    hooks = commands.add_parser(
        "hooks", help="make a local repository report its changes (event-driven Runs)"
    )
    hook_commands = hooks.add_subparsers(dest="hooks_command", required=True, metavar="ACTION")
    install = hook_commands.add_parser(
        "install",
        help="install a post-receive hook (and the notify script the local forge's "
        "authoring API runs) that report each change to reposync",
    )
    install.add_argument("locator", metavar="local:PATH")
    install.add_argument(
        "--env-file",
        type=Path,
        help="a file of REPOSYNC_NAME=value lines (mode 600) the hook reads its settings "
        "from, instead of carrying them; required when the database or broker URL holds "
        "a password",
    )
    notify = hook_commands.add_parser(
        "notify", help="report a change of the repository (what the installed hooks run)"
    )
    notify.add_argument("locator", metavar="local:PATH")
    notify.add_argument("--env-file", type=Path, help="read REPOSYNC_* settings from this file")
    notify.add_argument(
        "event",
        choices=["push", "forge"],
        help="push: git's '<old> <new> <ref>' lines on standard input; forge: an edit "
        "of the object types that follow",
    )
    notify.add_argument("object_types", nargs="*", metavar="TYPE")

    # --- db ---
    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    db_commands.add_parser("upgrade", help="apply every pending migration")

    _accept_global_options(parser)
    return parser


def _global_options(parser: argparse.ArgumentParser, *, subcommand: bool) -> None:
    """reposync's own options. A subcommand's copies default to nothing, so that a value
    given before the subcommand is not reset by its parser."""
    parser.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS if subcommand else None,
        help="data directory of the embedded mode "
        "(default: $REPOSYNC_DATA_DIR or the user's data directory)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if subcommand else 0,
        help="log what it does to stderr (-vv: in detail)",
    )
    parser.add_argument("--version", action="version", version=f"reposync {__version__}")


def _accept_global_options(parser: argparse.ArgumentParser) -> None:
    """Give reposync's own options to every subcommand, at every depth."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subcommands = {id(sub): sub for sub in action.choices.values()}  # aliases once
            for sub in subcommands.values():
                _global_options(sub, subcommand=True)
                _accept_global_options(sub)


def _json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object, as the API shows it"
    )


def _page_options(parser: argparse.ArgumentParser, after_help: str) -> None:
    parser.add_argument("--after-id", type=int, metavar="ID", help=after_help)
    parser.add_argument("--limit", type=int, default=50, metavar="N", help="page size, 1 to 200")
    _json_option(parser)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command in CELERY_COMMANDS:
        if "--" in extra:
            extra.remove("--")
        args.celery_args = extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logs.configure("text", level)
    if args.command in SERVING_COMMANDS:  # Celery and gunicorn handle their own signals
        return _main(args, level)
    with signals.terminations_interrupt():
        return _main(args, level)


def _main(args: argparse.Namespace, level: int) -> int:
    try:
        if args.command == "hooks" and args.hooks_command == "notify" and args.env_file:
            os.environ.update(read_env_file(args.env_file))  # before the settings are read
        settings = Settings.from_env(data_dir=args.data_dir)
        logs.configure(settings.log_format, level)
        if args.command == "sync":
            return _sync(settings, args)
        if args.command == "db":
            return _db_upgrade(settings)
        if args.command == "handoff":
            return _handoff(settings, args)
        if args.command == "bind-all":
            return _bind_all(settings, args)
        if args.command == "runs":
            return _runs(settings, args)
        if args.command == "bindings":
            return _bindings(settings, args)
        if args.command == "user":
            return _user(settings, args)
        if args.command == "hooks":
            return _hooks(settings, args)
        if args.command == "worker":
            from reposync.tasks.app import run_worker

            return run_worker(settings, args.celery_args)
        if args.command == "beat":
            from reposync.tasks.app import run_beat

            return run_beat(settings, args.celery_args)
        if args.command == "api":
            from reposync.web.server import serve

            return serve(settings, bind=args.bind)
    except ReposyncError as error:
        if getattr(args, "json", False):
            print(json.dumps({"status": "error", **error.to_dict()}))
        print(f"reposync: error: {error.message} [{error.code}]", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt as interrupt:
        _say(f"reposync: {signals.describe(interrupt)}")
        return signals.exit_status(interrupt)
    return 0


def _say(line: str) -> None:
    """A last word on stderr, which a closed terminal (SIGHUP) may no longer take."""
    with suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def run() -> NoReturn:
    """The process's entry point (``reposync``, ``python -m reposync``): ``main``, then an
    exit without the interpreter's teardown.

    By then the database is disposed and every thread we start is done; what teardown
    would still do is free SQLAlchemy's and the models' objects one by one, ~0.1 s of
    every command (measured; a tenth of a one-commit sync). The streams are flushed and
    logging shut down here instead. A reader that went away (``reposync runs list | head``)
    makes the status 120, as a failed flush at Python's own exit does, without a
    traceback. Tests call ``main``, which returns.
    """
    try:
        status = main()
    except BrokenPipeError:
        status = 120
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        status = status or 120
    logging.shutdown()
    os._exit(status)


@contextmanager
def _database(settings: Settings) -> Iterator[Database]:
    """The database of ``settings``; the first use of an embedded data directory (the
    invocation that writes its database first) says where it is, once, on stderr."""
    from reposync.models.db import Database, redact

    path = None if settings.database_url else settings.data_dir / "reposync.db"
    new = path is not None and not _holds_data(path)
    db = Database(settings.effective_database_url)
    log.info("database %s (data directory %s)", redact(db.url), settings.data_dir)
    try:
        yield db
    finally:
        db.dispose()  # SQLite moves what its write-ahead log holds into the file
        if new and path is not None and _holds_data(path):
            print(
                f"reposync: first use of data directory {settings.data_dir}; its database "
                f"is {path} (--data-dir or REPOSYNC_DATA_DIR chooses another)",
                file=sys.stderr,
            )


def _holds_data(path: Path) -> bool:
    """Whether an SQLite file was ever written (created empty, it holds nothing yet)."""
    wal = path.with_name(path.name + "-wal")
    return (path.exists() and path.stat().st_size > 0) or (wal.exists() and wal.stat().st_size > 0)


def _context(settings: Settings, db: Database) -> ServiceContext:
    from reposync.service.context import ServiceContext

    return ServiceContext(settings=settings, db=db)


def _sync(settings: Settings, args: argparse.Namespace) -> int:
    from reposync.console import progress_reporter, render_deferral, render_report
    from reposync.service.bindings import SyncRequest
    from reposync.service.embedded import sync

    request = SyncRequest(
        source=args.source,
        target=args.target,
        dry_run=args.dry_run,
        full_audit=args.full_audit,
        conflict_policy=RefConflictPolicy(args.conflict_policy) if args.conflict_policy else None,
        confirm_visibility=args.confirm_visibility,
        source_connection=args.source_connection,
        target_connection=args.target_connection,
    )
    with _database(settings) as db:
        progress = progress_reporter(sys.stderr, interval=settings.progress_interval)
        seen: list[int] = []  # the Run the progress was last about

        def report(step: Progress) -> None:
            seen[:] = [step.run_id]
            progress(step)

        try:
            ctx = _context(settings, db)
            run = sync(ctx, request, report)
            deferred = run.status == "queued" and run.retry_at is not None  # a rate limit
            if deferred:  # the reads of the API: loaded only for the rare deferred Run
                from reposync.service.queries import deferrals

                why = deferrals(ctx, [run.id]).get(run.id)
        except KeyboardInterrupt as interrupt:
            progress.close()
            how = signals.describe(interrupt)
            _say(
                f"reposync: {how}; run {seen[0]} resumes on the next `reposync sync` of this pair"
                if seen
                else f"reposync: {how} before a Run started; nothing was queued"
            )
            return signals.exit_status(interrupt)
        finally:
            progress.close()
    if deferred and run.retry_at is not None:
        print(render_deferral(run.id, run.retry_at, why, as_json=args.json))
        return 1
    if args.json:
        print(json.dumps(run.report, sort_keys=True))
    else:
        print(render_report(run.report, args.source, args.target))
    return 0 if run.status == "completed" else 1


def _bind_all(settings: Settings, args: argparse.Namespace) -> int:
    with _database(settings) as db:
        return cli_owners.bind_all(settings, db, args)


def _handoff(settings: Settings, args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from reposync.service.bindings import SyncRequest, bind
    from reposync.service.handoff import handoff

    with _database(settings) as db:
        ctx = _context(settings, db)
        request = SyncRequest(args.source, args.target, confirm_visibility=args.confirm_visibility)
        outcome = handoff(ctx, bind(ctx, request).id, writes_stopped=args.confirm_writes_stopped)
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


def _runs(settings: Settings, args: argparse.Namespace) -> int:
    """``reposync runs``: the API's Run reads and cancel, as the command line's user."""
    from reposync import cli_reads

    with _database(settings) as db:
        db.ensure_current()
        return cli_reads.runs(_context(settings, db), args)


def _bindings(settings: Settings, args: argparse.Namespace) -> int:
    """``reposync bindings``: the API's Binding reads, as the command line's user."""
    from reposync import cli_reads

    with _database(settings) as db:
        db.ensure_current()
        return cli_reads.bindings(_context(settings, db), args)


def _user(settings: Settings, args: argparse.Namespace) -> int:
    from reposync.service.accounts import users

    with _database(settings) as db:
        db.ensure_current()
        ctx = _context(settings, db)
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
    return 0


#: The settings an installed hook passes on to ``reposync hooks notify``: where the
#: database and the broker are (no credential of any forge).
HOOK_SETTINGS = ("DATABASE_URL", "BROKER_URL", "WEBHOOK_DEBOUNCE_SECONDS", "LOCAL_BUSY_TIMEOUT")


def _hooks(settings: Settings, args: argparse.Namespace) -> int:

    from reposync.models.db import Database
    from reposync.providers.notifications import RefMove
    from reposync.service.context import ServiceContext
    from reposync.service.webhooks import intake

    if args.hooks_command == "install":
        environment = {"REPOSYNC_DATA_DIR": str(settings.data_dir)}
        command = [sys.executable, "-m", "reposync.cli", "hooks", "notify", args.locator]
        if args.env_file:  # the hook reads the settings where the operator keeps them
            env_file = args.env_file.resolve()
            read_env_file(env_file)  # readable, owner-only and well-formed, or refused now
            command += ["--env-file", str(env_file)]
        else:
            for name in HOOK_SETTINGS:
                value = os.environ.get(f"REPOSYNC_{name}")
                if value:
                    environment[f"REPOSYNC_{name}"] = value
            carrying = [n for n in CREDENTIAL_URLS if url_has_password(environment.get(n, ""))]
            if carrying:
                raise UsageError(
                    f"{' and '.join(carrying)} hold a password, which the installed hook "
                    "would carry in the repository's hooks directory; put the REPOSYNC_* "
                    "settings in a file only the hook's user may read (mode 600) and pass "
                    "--env-file FILE"
                )
        if os.environ.get("PYTHONPATH"):  # a checkout run in place: the hook runs it too
            environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
        ctx = ServiceContext(settings=settings, db=Database(settings.effective_database_url))
        try:
            written = intake.install_hooks(ctx, args.locator, command, environment)
        finally:
            ctx.db.dispose()
        for path in written:
            print(f"installed {path}")
        return 0
    db = Database(settings.effective_database_url)
    try:
        ctx = ServiceContext(settings=settings, db=db, dispatcher=_hook_dispatcher(settings))
        refs = []
        if args.event == "push":
            for line in sys.stdin.read().splitlines():
                old, new, ref = [*line.split(" ", 2), "", "", ""][:3]
                if ref:
                    refs.append(RefMove(ref, _sha_or_none(old), _sha_or_none(new)))
        receipt = intake.receive_local(
            ctx, args.locator, event=args.event, refs=refs, object_types=args.object_types
        )
    finally:
        db.dispose()
    done = ", ".join(f"binding {k}: {v}" for k, v in receipt.bindings.items()) or "no Binding"
    print(f"reposync: {args.event} of {args.locator} reported ({done})")
    return 0


def _hook_dispatcher(settings: Settings) -> Any:
    """Celery in the distributed mode. In the embedded mode no queue reaches the process
    that runs Runs: the change is recorded, and the owed Run is started by a running
    ``reposync api``'s tick, or else by the next ``reposync sync`` of the pair."""
    if not settings.database_url:
        from reposync.service.context import NoDispatch

        return NoDispatch()
    from reposync.tasks.base import CeleryDispatcher

    return CeleryDispatcher()


def _sha_or_none(value: str) -> str | None:
    return None if not value.strip("0") else value


def _token_line(token: Any) -> str:
    """One token as ``reposync user tokens`` lists it: id, state, name and dates."""
    from reposync.service.accounts.users import token_state

    def when(value: Any) -> str:
        return value.isoformat(timespec="seconds") if value is not None else "-"

    return (
        f"{token.id}\t{token_state(token)}\t{token.name or '-'}"
        f"\tcreated {when(token.created_at)}"
        f"\texpires {when(token.expires_at)}\tlast used {when(token.last_used_at)}"
    )


def _db_upgrade(settings: Settings) -> int:
    with _database(settings) as db:
        db.upgrade()
    print("database schema is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
