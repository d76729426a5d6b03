"""Schedules under a frozen clock: slots, coalescing, the full-audit cadence, racing ticks."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time
from sqlalchemy import select

from reposync.errors import NotAllowedNow, UnschedulableCron
from reposync.lifecycle import Stage
from reposync.models import Binding, Run
from reposync.service.bindings import SyncRequest, bind, update_binding
from reposync.service.context import ServiceContext, Step
from reposync.service.embedded import sync
from reposync.service.pipeline.runner import run_until_done
from reposync.service.runs import create_run
from reposync.service.scheduling import schedules
from tests.gitrepo import generate

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def scheduled(tmp_path, ctx):
    """A Binding with one full apply behind it, scheduled every 10 minutes from T0."""
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)
    request = SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}")
    with freeze_time(T0 - timedelta(minutes=1)):
        assert sync(ctx, request).status == "completed"
    binding_id = bind(ctx, request).id
    with freeze_time(T0):
        update_binding(ctx, binding_id, schedule_cron="*/10 * * * *", sync_enabled=True)
    return binding_id


def runs_of(ctx: ServiceContext, binding_id: int) -> list[Run]:
    with ctx.db.session() as session:
        return list(
            session.execute(
                select(Run)
                .where(Run.binding_id == binding_id, Run.trigger == "schedule")
                .order_by(Run.id)
            ).scalars()
        )


def next_run_at(ctx: ServiceContext, binding_id: int) -> datetime | None:
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        return binding.next_run_at


def finish(ctx: ServiceContext, run_id: int) -> None:
    run_until_done(ctx, Step(run_id, Stage.CHECKING_ACCESS, None))


def test_a_due_slot_creates_one_run_and_moves_to_the_next(ctx, scheduled):
    """Before the slot nothing happens; at it, one Run; the next slot is 10 minutes on."""
    assert next_run_at(ctx, scheduled) == at(10)
    with freeze_time(at(5)):
        assert schedules.tick(ctx) == []
    with freeze_time(at(10)):
        created = schedules.tick(ctx)
        assert schedules.tick(ctx) == []  # a redelivered tick: the same slot, no second Run
    [run] = runs_of(ctx, scheduled)
    assert created == [run.id]
    assert (run.scheduled_for, run.audit_mode) == (at(10), "checkpoint")
    assert next_run_at(ctx, scheduled) == at(20)


def test_ticks_coalesce_while_a_run_is_active(ctx, scheduled):
    """Missed slots during a long Run become one Run afterwards, then the next future slot."""
    with freeze_time(at(10)):
        [first] = schedules.tick(ctx)
    for minute in (20, 30, 40):
        with freeze_time(at(minute)):
            assert schedules.tick(ctx) == []  # the slot stays pending
    assert next_run_at(ctx, scheduled) == at(20)
    with freeze_time(at(41)):
        finish(ctx, first)
    with freeze_time(at(42)):
        [second] = schedules.tick(ctx)
    runs = runs_of(ctx, scheduled)
    assert [r.id for r in runs] == [first, second]
    assert runs[1].scheduled_for == at(20)  # the pending slot, not one Run per missed slot
    assert next_run_at(ctx, scheduled) == at(50)


def test_a_full_audit_follows_once_the_interval_has_passed(ctx, scheduled):
    """Checkpoints until ``full_audit_interval`` since the last full apply, then a full audit."""
    with freeze_time(T0):
        update_binding(ctx, scheduled, full_audit_interval=3600)
    with freeze_time(at(10)):
        [early] = schedules.tick(ctx)
        finish(ctx, early)
    with freeze_time(at(70)):
        [late] = schedules.tick(ctx)
    audits = {r.id: r.audit_mode for r in runs_of(ctx, scheduled)}
    assert audits == {early: "checkpoint", late: "full"}
    with freeze_time(at(71)):
        finish(ctx, late)
    with ctx.db.session() as session:
        binding = session.get(Binding, scheduled)
        assert binding is not None
    assert binding.last_full_apply_at == at(71)  # the cadence starts over


def test_sync_can_be_enabled_only_after_a_full_apply_and_when_idle(tmp_path, ctx):
    """No full apply in this epoch, or an active Run: enabling the schedule is refused."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    request = SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}")
    binding_id = bind(ctx, request).id
    with pytest.raises(NotAllowedNow, match="no successful full apply"):
        update_binding(ctx, binding_id, sync_enabled=True)
    sync(ctx, request)
    create_run(ctx, binding_id)
    with pytest.raises(NotAllowedNow, match="active Run"):
        update_binding(ctx, binding_id, sync_enabled=True)


@pytest.mark.postgres
def test_two_ticks_racing_create_one_run_per_slot(tmp_path, pg_ctx):
    """Two beats tick at the same instant: SKIP LOCKED and the slot key leave one Run."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    request = SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}")
    assert sync(pg_ctx, request).status == "completed"
    binding_id = bind(pg_ctx, request).id
    update_binding(pg_ctx, binding_id, schedule_cron="*/10 * * * *", sync_enabled=True, now=T0)
    barrier = threading.Barrier(4)
    created: list[int] = []

    def beat() -> None:
        barrier.wait()
        created.extend(schedules.tick(pg_ctx, now=at(10)))

    threads = [threading.Thread(target=beat) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(created) == 1
    assert len(runs_of(pg_ctx, binding_id)) == 1


def test_a_cron_that_never_fires_again_is_refused(ctx, scheduled):
    """Parses, but has no future slot (February 31st; a year gone by): refused with its
    own code, the schedule unchanged (it was accepted, or crashed the caller, before)."""
    for cron in ("0 0 31 2 *", "0 0 1 1 * 0 2025"):
        with freeze_time(T0), pytest.raises(UnschedulableCron, match="no time after"):
            update_binding(ctx, scheduled, schedule_cron=cron)
    assert next_run_at(ctx, scheduled) == at(10)


def test_one_bindings_dead_cron_pauses_only_its_own_schedule(tmp_path, ctx, scheduled):
    """A cron whose last slot passed (a year field) raised inside the tick: no Binding got
    its Run and the re-dispatch after it never ran. Now it pauses that schedule, says so
    on the Binding, and every other Binding gets its Run."""
    source = generate(tmp_path / "other.git", commits=2, branches=0, tags=0)
    request = SyncRequest(f"local:{source}", f"local:{tmp_path / 'other-dst.git'}")
    with freeze_time(T0 - timedelta(minutes=1)):
        assert sync(ctx, request).status == "completed"
    dying = bind(ctx, request).id
    with freeze_time(T0):  # fires at 12:05 on 2026-12-02, then never again
        update_binding(ctx, dying, schedule_cron="5 12 2 12 * 0 2026", sync_enabled=True)

    with freeze_time(at(10)):
        created = schedules.tick(ctx)

    assert len(runs_of(ctx, scheduled)) == 1
    assert len(runs_of(ctx, dying)) == 1  # its last slot still got its Run
    assert sorted(created) == sorted(r.id for b in (scheduled, dying) for r in runs_of(ctx, b))
    with ctx.db.session() as session:
        binding = session.get(Binding, dying)
        assert binding is not None
        assert binding.next_run_at is None
        problem = schedules.schedule_problem(binding, at(10))
    assert problem is not None
    assert "schedule paused" in problem
    assert next_run_at(ctx, scheduled) == at(20)


def test_one_tick_creates_the_runs_of_every_due_binding_chunk_by_chunk(tmp_path, ctx, monkeypatch):
    """More due Bindings than one chunk all get their Run from one tick, each sent at the
    background priority; a busy one keeps its slot pending and is taken once."""
    from sqlalchemy import update

    source = generate(tmp_path / "src.git", commits=1, branches=1, tags=0)
    ids = [
        bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / f'dst{n}.git'}")).id
        for n in range(7)
    ]
    busy = create_run(ctx, ids[2]).id
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding)
            .where(Binding.id.in_(ids))
            .values(sync_enabled=True, schedule_cron="*/10 * * * *", next_run_at=at(10))
        )
    sent: list[Step] = []
    monkeypatch.setattr(ctx.dispatcher, "dispatch", sent.append)
    monkeypatch.setattr(schedules, "TICK_CHUNK", 3)
    with freeze_time(at(10)):
        created = schedules.tick(ctx)
    assert len(created) == 6
    assert sorted(run.binding_id for i in ids for run in runs_of(ctx, i)) == sorted(
        i for i in ids if i != ids[2]
    )
    assert sent == [
        Step(run_id, Stage.CHECKING_ACCESS, None, background=True) for run_id in created
    ]
    assert next_run_at(ctx, ids[2]) == at(10)  # coalesced behind the busy Run
    assert {next_run_at(ctx, i) for i in ids if i != ids[2]} == {at(20)}
    assert busy not in created
