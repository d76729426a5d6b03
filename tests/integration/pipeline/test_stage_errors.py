"""How a stage's errors end (or do not end) a Run, in the embedded mode.

Issue 9 #3: a retryable provider error (here: another writer holding a local forge's
SQLite lock longer than the busy timeout) ended the Run ``failed`` at once. Retryable
errors now retry the stage with a growing backoff; only the last allowed attempt, or an
error retrying cannot help, finishes the Run, with the error in its report. An
unexpected exception (a bug) finishes the Run with ``internal_error`` and frees the
Binding instead of leaving it ``binding_busy`` until the lease runs out.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.config import Settings
from reposync.lifecycle import Stage
from reposync.models import Binding, RunEvent
from reposync.models.db import Database
from reposync.service.context import ServiceContext
from reposync.service.embedded import SyncRequest, sync
from reposync.service.pipeline import runner
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import forge


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[ServiceContext]:
    """Short busy timeout and backoff, three attempts per stage."""
    settings = Settings(
        data_dir=tmp_path / "data",
        lease_ttl=30.0,
        local_busy_timeout=0.2,
        retry_backoff=0.3,
        max_stage_attempts=3,
    )
    db = Database(settings.effective_database_url)
    db.upgrade()
    yield ServiceContext(settings=settings, db=db)
    db.dispose()


@pytest.fixture
def synced(tmp_path: Path, quick: ServiceContext) -> tuple[Path, Path, SyncRequest]:
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)
    target = tmp_path / "dst.git"
    with forge(source) as f:
        f.create_label("bug", color="d73a4a")
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(quick, request).status == "completed"
    with forge(source) as f:
        for n in range(3):
            f.create_label(f"new-{n}", color="ededed")
    return source, target, request


@contextmanager
def write_lock(target: Path, seconds: float | None) -> Iterator[None]:
    """Another writer holds the target forge's SQLite write lock (for ``seconds``, or
    until the block ends), as a stalled lease holder inside its transaction does."""
    conn = sqlite3.connect(
        target / "reposync" / "forge.db", isolation_level=None, check_same_thread=False
    )
    conn.execute("BEGIN IMMEDIATE")
    guard = threading.Lock()
    released = threading.Event()

    def release() -> None:
        with guard:
            if not released.is_set():
                released.set()
                conn.execute("ROLLBACK")

    timer = threading.Timer(seconds, release) if seconds is not None else None
    if timer is not None:
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
        release()
        conn.close()


def events(ctx: ServiceContext, run_id: int) -> list[RunEvent]:
    with ctx.db.session() as session:
        return list(
            session.execute(
                select(RunEvent).where(RunEvent.run_id == run_id).order_by(RunEvent.seq)
            ).scalars()
        )


def binding_free(ctx: ServiceContext, binding_id: int) -> bool:
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        return binding.lease_run_id is None


def test_a_write_lock_held_for_a_while_is_waited_out_within_the_run(quick, synced):
    """The lock outlives one busy timeout: the batch is retried later, the Run completes."""
    _source, target, request = synced
    with write_lock(target, seconds=1.0):
        run = sync(quick, request)
    assert run.status == "completed", run.report["problems"]
    assert run.counters["created"] == 3
    retries = [e for e in events(quick, run.id) if e.type == "retry_scheduled"]
    assert retries, [e.type for e in events(quick, run.id)]
    assert retries[0].counts["error_code"] == "provider_unavailable"
    with forge(target) as f:
        assert f.reader.count("label") == 4


def test_retries_are_bounded_and_the_last_error_is_in_the_report(quick, synced):
    """The lock never goes away: after the last attempt the Run fails, saying why."""
    _source, target, request = synced
    with write_lock(target, seconds=None):
        run = sync(quick, request)
    assert run.status == "failed"
    assert run.error_code == "provider_unavailable"
    [problem] = [p for p in run.report["problems"] if p["category"] == "run_error"]
    assert problem["error_code"] == "provider_unavailable"
    assert problem["problem_type"] == "sync_failed"
    assert "gave up after 3 attempts" in problem["message"]
    assert problem["retryable"] is True
    assert len([e for e in events(quick, run.id) if e.type == "retry_scheduled"]) == 2
    assert binding_free(quick, run.binding_id)
    # Nothing was left mid-write: every claimed item was settled by read-back.
    assert run.counters.get("applying", 0) == 0
    with forge(target) as f:
        assert f.reader.count("label") == 1
    assert sync(quick, request).status == "completed"  # once the lock is gone
    with forge(target) as f:
        assert f.reader.count("label") == 4


def test_an_unexpected_exception_fails_the_run_and_frees_the_binding(quick, synced, monkeypatch):
    """A bug in a stage: the Run ends ``failed`` with ``internal_error`` naming it, and
    the next invocation is not refused ``binding_busy`` for a lease TTL."""
    _source, _target, request = synced

    def broken(ex):
        raise ValueError("inventory entries out of order")

    monkeypatch.setitem(runner.HANDLERS, Stage.PLANNING, broken)
    run = sync(quick, request)
    assert run.status == "failed"
    assert run.error_code == "internal_error"
    assert "unexpected ValueError in stage planning" in run.error_message
    assert binding_free(quick, run.binding_id)
    monkeypatch.undo()
    assert sync(quick, request).status == "completed"
