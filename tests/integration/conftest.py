"""Fixtures of the integration tests: PostgreSQL, Redis, Celery dispatch, real workers,
and the command line's data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from sqlalchemy import select

from reposync.models import Run, RunEvent
from reposync.service.context import ServiceContext
from reposync.tasks.base import CeleryDispatcher
from tests.workers import WorkerProcess, wait_for, worker_environment

TERMINAL = (
    "completed",
    "completed_with_pending_changes",
    "requires_attention",
    "blocked",
    "failed",
    "cancelled",
)


@pytest.fixture
def sender(broker_url: str) -> Iterator[Celery]:
    app = Celery("reposync-test-sender", broker=broker_url)
    app.conf.task_default_queue = "reposync"
    yield app
    app.close()


@pytest.fixture
def dctx(pg_ctx: ServiceContext, sender: Celery) -> ServiceContext:
    """Service context of the distributed mode: PostgreSQL + Celery dispatch."""
    pg_ctx.dispatcher = CeleryDispatcher(sender)
    return pg_ctx


@pytest.fixture
def env(pg_url: str, broker_url: str, tmp_path: Path) -> dict[str, str]:
    """Worker environment: shrunk timings, and batches small enough to crash between."""
    return worker_environment(
        pg_url,
        broker_url,
        tmp_path / "worker-data",
        REPOSYNC_GIT_BATCH_MAX_ITEMS="150",
        REPOSYNC_BATCH_MAX_ITEMS="200",
        REPOSYNC_LOCAL_ROOTS=str(tmp_path),  # the API binds the test's repositories
        REPOSYNC_LOCAL_TARGET_HOOKS="1",  # tests hold pushes with the target's hooks
    )


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


def run_row(ctx: ServiceContext, run_id: int) -> Run:
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run


def wait_terminal(ctx: ServiceContext, run_id: int, timeout: float = 90) -> Run:
    wait_for(lambda: run_row(ctx, run_id).status in TERMINAL, timeout, f"run {run_id}")
    return run_row(ctx, run_id)


def event_messages(ctx: ServiceContext, run_id: int, event_type: str) -> list[str]:
    """The messages of a Run's events of one type, in the order they were written."""
    with ctx.db.session() as session:
        said = session.execute(
            select(RunEvent.message)
            .where(RunEvent.run_id == run_id, RunEvent.type == event_type)
            .order_by(RunEvent.seq)
        )
        return list(said.scalars())


def run_events(ctx: ServiceContext, run_id: int) -> list[tuple[str, dict[str, Any]]]:
    """A Run's events as ``(type, counts)``, in the order they were written."""
    with ctx.db.session() as session:
        rows = session.execute(
            select(RunEvent.type, RunEvent.counts)
            .where(RunEvent.run_id == run_id)
            .order_by(RunEvent.seq)
        ).all()
    return [(kind, dict(counts or {})) for kind, counts in rows]


def completed_transitions(ctx: ServiceContext, run_id: int) -> int:
    """How many item completions the append-only event history recorded."""
    with ctx.db.session() as session:
        events = session.execute(
            select(RunEvent.counts).where(
                RunEvent.run_id == run_id,
                RunEvent.type.in_(["batch_settled", "items_recovered"]),
            )
        ).scalars()
        return sum(int(counts.get("completed", 0)) for counts in events)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The command line's data directory for one test (the embedded mode's database in
    it: no REPOSYNC_DATABASE_URL from the environment)."""
    directory = tmp_path / "data"
    monkeypatch.setenv("REPOSYNC_DATA_DIR", str(directory))
    monkeypatch.delenv("REPOSYNC_DATABASE_URL", raising=False)
    return directory
