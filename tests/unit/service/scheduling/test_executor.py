"""The in-process executor without gunicorn: its queue, its timers, its tick, its stop,
and what it says about where a Run waits. ``tests/integration/web/served/test_served_executor.py``
runs it inside a real ``reposync api``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import update

from reposync.lifecycle import Stage, Trigger
from reposync.models import Binding, Run, utcnow
from reposync.models.db import Database
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext, Step
from reposync.service.runs import create_run
from reposync.service.scheduling import executor as executor_module
from reposync.service.scheduling.executor import InProcessExecutor
from reposync.service.scheduling.waits import waiting
from tests.gitrepo import generate
from tests.workers import wait_for


@pytest.fixture
def executor(settings, sqlite_db: Database) -> Iterator[InProcessExecutor]:
    built = InProcessExecutor(settings.with_overrides(tick_interval=3600.0), sqlite_db)
    yield built
    built.stop(timeout=10)


@pytest.fixture
def binding_id(ctx: ServiceContext, tmp_path) -> int:
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)
    return bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}")).id


def test_a_queued_run_says_its_place_in_the_queue_and_a_timer_its_due_time(executor):
    """Before the threads start: the order of the queue, one job per Run however often
    it is dispatched, and a delayed job's due time."""
    executor.dispatch(Step(7, Stage.CHECKING_ACCESS, None))
    executor.dispatch(Step(8, Stage.CHECKING_ACCESS, None))
    executor.dispatch(Step(7, None, None))  # the tick's re-dispatch of the same Run
    executor.dispatch_handoff(3, 9)
    assert executor.describe_wait(8, 1.0) == "in this API process's queue, position 2 of 3"
    assert executor.describe_wait(9, 1.0) == "in this API process's queue, position 3 of 3"
    executor.dispatch_event_run(4, countdown=120.0)
    executor.dispatch_event_run(4, countdown=30.0)  # the sooner timer wins
    timer = executor._timers[0]
    assert len(executor._timers) == 1
    assert timer.due - executor_module.time.monotonic() < 31
    assert "not handed to this API process's executor yet" in executor.describe_wait(10, 1.0)
    assert "picks it up" in executor.describe_wait(10, 3600.0)


def test_start_runs_the_tick_and_adopts_a_run_nobody_runs(executor, ctx, binding_id, monkeypatch):
    """A queued Run no process holds (its dispatch was lost with an earlier process) is
    run to its end once the executor starts, and the tick runs on the executor's clock."""
    ticked = threading.Event()
    monkeypatch.setattr(executor_module.ticks, "tick", lambda _ctx: ticked.set())
    run_id = create_run(ctx, binding_id).id
    executor.start()
    assert ticked.wait(30)

    def ended() -> bool:
        with ctx.db.session() as session:
            return session.get(Run, run_id).status == "completed"

    wait_for(ended, 60, f"run {run_id} to complete")


def test_stop_interrupts_a_running_job_like_ctrl_c(executor, monkeypatch):
    """A job running when the executor stops gets a KeyboardInterrupt in its thread (the
    runner's cue to give its lease up), and the threads end."""
    inside, seen = threading.Event(), []

    def long_pass(_ctx, _id, *, trigger) -> None:
        inside.set()
        try:
            while True:
                executor_module.time.sleep(0.01)
        except BaseException as exc:
            seen.append(exc)
            raise

    monkeypatch.setattr(executor_module.owners, "run_pass", long_pass)
    executor.start()
    executor.dispatch_owner_pass(5, Trigger.MANUAL)
    assert inside.wait(30)
    executor.stop(timeout=10)
    assert [type(exc) for exc in seen] == [executor_module.Stopping]
    assert isinstance(seen[0], KeyboardInterrupt)
    assert not any(thread.is_alive() for thread in executor._threads)
    executor.dispatch(Step(1, None, None))  # after the stop: dropped, not queued
    assert not executor._ready


def test_waiting_says_deferred_until_behind_whom_or_asks_the_dispatcher(executor, ctx, binding_id):
    """A deferred Run says until when; a Run whose Binding another execution holds says
    which; otherwise the executor says where it is; a Run not queued waits for nothing."""
    ectx = executor.context
    run = create_run(ctx, binding_id)
    executor.dispatch(Step(run.id, Stage.CHECKING_ACCESS, None))
    assert waiting(ectx, [run]) == {run.id: "in this API process's queue, position 1 of 1"}
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding)
            .where(Binding.id == binding_id)
            .values(
                lease_run_id=run.id + 100,
                lease_owner="elsewhere",
                lease_expires_at=utcnow() + timedelta(minutes=1),
            )
        )
    assert waiting(ectx, [run])[run.id].startswith(f"queued behind run {run.id + 100}")
    with ctx.db.transaction() as session:
        session.execute(
            update(Run).where(Run.id == run.id).values(retry_at=utcnow() + timedelta(hours=1))
        )
        deferred = session.get(Run, run.id)
        session.expunge(deferred)
    assert waiting(ectx, [deferred])[run.id].startswith("deferred until ")
    with ctx.db.transaction() as session:
        session.execute(update(Run).where(Run.id == run.id).values(status="running"))
        running = session.get(Run, run.id)
        session.expunge(running)
    assert waiting(ectx, [running]) == {}
