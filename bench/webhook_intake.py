"""Benchmark: one large webhook delivery through ``POST /webhooks/github`` (issue 22).

An App uninstalled from an organization with many repositories sends one
``installation`` delivery listing every one of them (up to GitHub's 25 MB). It must not
hold one request and one transaction for the whole list: on SQLite every worker waits
for the writer. The bench signs such a delivery (``--repositories``, default 100,000),
binds ``--bindings`` of its repositories (default 1,000) and posts it through the API
(Flask's test client, the embedded SQLite database by default, ``--postgres`` for a
PostgreSQL started from this machine's binaries), then prints the request's time, the
number of write transactions and the longest one (goal: none over ~1 s on SQLite), and
checks that every bound repository got its notice.

    python bench/webhook_intake.py
    python bench/webhook_intake.py --repositories 200000 --bindings 5000 --postgres
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reposync.config import Settings  # noqa: E402
from reposync.models import Binding  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.web.app import create_app  # noqa: E402
from tests import webhooks  # noqa: E402
from tests.servers import PostgresServer  # noqa: E402

SECRET = "bench webhook secret"
INSTALLATION = 4242


class NoDispatch:
    """The Runs the delivery owes are not the bench's subject: nothing is sent."""

    def dispatch(self, step: Any) -> None:
        pass

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        pass

    def dispatch_event_run(self, binding_id: int, countdown: float) -> None:
        pass


class TransactionClock:
    """Wall time of every transaction that wrote, from its first write to its end."""

    def __init__(self, db: Database) -> None:
        self.started: float | None = None
        self.durations: list[float] = []
        engine = db.engine
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._end)
        event.listen(engine, "rollback", self._end)

    def _statement(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper()
        if self.started is None and verb in ("INSERT", "UPDATE", "DELETE"):
            self.started = time.perf_counter()

    def _end(self, conn: Any) -> None:
        if self.started is not None:
            self.durations.append(time.perf_counter() - self.started)
            self.started = None


def payload(repositories: int) -> dict[str, Any]:
    body = webhooks.payload("installation", "deleted")
    body["installation"]["id"] = INSTALLATION
    body["repositories"] = [
        {
            "id": 10_000_000 + i,
            "node_id": f"R_{i}",
            "name": f"repo-{i}",
            "full_name": f"big-org/repo-{i}",
            "private": True,
        }
        for i in range(repositories)
    ]
    return body


def bind(ctx: ServiceContext, count: int, repositories: int) -> None:
    step = max(1, repositories // max(count, 1))
    with ctx.db.transaction() as session:
        for n in range(count):
            session.add(
                Binding(
                    a_provider="github",
                    a_repository_id=str(10_000_000 + n * step),
                    a_locator=f"big-org/repo-{n * step}",
                    a_connection_id=f"github:installation:{INSTALLATION}",
                    b_provider="local",
                    b_repository_id=f"local-{n}",
                    b_locator=f"/srv/forge/repo-{n}.git",
                    authority_side="a",
                    sync_enabled=True,
                )
            )


def run(database_url: str | None, repositories: int, bindings: int, data: Path) -> None:
    settings = Settings(data_dir=data, github_webhook_secret=SECRET)
    if database_url:
        settings = settings.with_overrides(database_url=database_url)
    db = Database(settings.effective_database_url)
    db.upgrade()
    ctx = ServiceContext(settings=settings, db=db)
    ctx.dispatcher = NoDispatch()
    bind(ctx, bindings, repositories)
    client = create_app(settings, ctx=ctx).test_client()
    raw = json.dumps(payload(repositories)).encode()
    headers = webhooks.headers("installation", raw, SECRET, str(uuid.uuid4()))
    clock = TransactionClock(db)
    started = time.perf_counter()
    response = client.post("/api/ext/v1/sync/webhooks/github", data=raw, headers=headers)
    elapsed = time.perf_counter() - started
    assert response.status_code == 202, response.get_data(as_text=True)[:500]
    with ctx.db.session() as session:
        noticed = session.execute(
            select(func.count()).select_from(Binding).where(Binding.access_notice.is_not(None))
        ).scalar_one()
    db.dispose()
    longest = max(clock.durations) if clock.durations else 0.0
    print(
        f"{'postgresql' if database_url else 'sqlite':10} {repositories:>7} repositories "
        f"({len(raw) / 1e6:.1f} MB), {bindings} bound: request {elapsed:.2f} s, "
        f"{len(clock.durations)} write transactions, longest {longest * 1000:.0f} ms, "
        f"{noticed}/{bindings} Bindings noticed"
    )
    if noticed != bindings:
        raise SystemExit("some bound repositories were not told they lost access")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repositories", type=int, default=100_000)
    parser.add_argument("--bindings", type=int, default=1_000)
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(None, args.repositories, args.bindings, Path(tmp) / "sqlite")
        if args.postgres:
            server = PostgresServer.start()
            try:
                server.admin("CREATE DATABASE bench")
                run(server.database_url("bench"), args.repositories, args.bindings, Path(tmp))
            finally:
                server.stop()


if __name__ == "__main__":
    main()
