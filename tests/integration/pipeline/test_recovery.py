"""Runs nobody executes are found again; a Run that never progresses is given up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, update

from reposync.errors import PermissionDenied, ProviderUnavailable
from reposync.lifecycle import Stage
from reposync.models import Binding, Run, RunEvent
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext, Step
from reposync.service.pipeline.runner import execute_step
from reposync.service.recovery import redispatch_stalled, stalled_runs
from reposync.service.runs import create_run
from tests.gitrepo import generate


class WorkerDied(BaseException):
    """What a SIGKILL looks like to the code after it: nothing runs."""


@pytest.fixture
def binding_id(tmp_path, ctx):
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    return bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}")).id


def expire_lease(ctx: ServiceContext) -> None:
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding).values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )


def test_stalled_runs_are_expired_leases_and_old_unclaimed_runs(ctx, binding_id):
    """Live leases are left alone; expired ones and forgotten queued Runs come back."""
    run = create_run(ctx, binding_id)
    assert stalled_runs(ctx) == []  # queued, but within the dispatch grace
    with ctx.db.transaction() as session:
        session.execute(update(Run).values(created_at=datetime.now(UTC) - timedelta(hours=1)))
    assert stalled_runs(ctx) == [Step(run.id, None, None)]

    step = execute_step(ctx, Step(run.id, Stage.CHECKING_ACCESS, None))
    assert step is not None  # claimed, lease live, next step not yet delivered
    assert stalled_runs(ctx) == []
    expire_lease(ctx)
    assert stalled_runs(ctx) == [Step(run.id, None, None)]


def test_a_stage_that_never_progresses_is_given_up(ctx, binding_id):
    """Reclaimed again and again without progress: the Run fails with attempts_exhausted."""
    calls = 0

    def broken_open(spec):
        nonlocal calls
        calls += 1
        raise WorkerDied  # no handler runs: as if the worker were SIGKILLed here

    broken = ServiceContext(settings=ctx.settings, db=ctx.db, open_provider=broken_open)
    run = create_run(broken, binding_id)
    for _ in range(ctx.settings.max_stage_attempts):
        with pytest.raises(WorkerDied):
            execute_step(broken, Step(run.id, None, None))
        expire_lease(ctx)  # the worker "died"; the lease runs out
    assert execute_step(broken, Step(run.id, None, None)) is None
    with ctx.db.session() as session:
        done = session.get(Run, run.id)
        assert done is not None
        assert (done.status, done.error_code) == ("failed", "attempts_exhausted")
        binding = session.get(Binding, binding_id)
        assert binding is not None
        assert binding.lease_owner is None
    assert calls == ctx.settings.max_stage_attempts


def test_a_provider_error_finishes_the_run_with_a_report(ctx, binding_id):
    """Errors retrying cannot help end the Run at once, with a problem entry."""

    def revoked(spec):
        raise PermissionDenied("the token was revoked")

    down = ServiceContext(settings=ctx.settings, db=ctx.db, open_provider=revoked)
    run = create_run(down, binding_id)
    assert execute_step(down, Step(run.id, Stage.CHECKING_ACCESS, None)) is None
    with ctx.db.session() as session:
        done = session.get(Run, run.id)
        assert done is not None
    assert done.status == "blocked"
    assert done.stage == "checking_access"  # where it stopped
    problem = done.report["problems"][0]
    assert problem["error_code"] == "permission_denied"
    assert problem["retryable"] is False


def test_a_retryable_error_queues_the_stage_again_with_a_growing_backoff(ctx, binding_id):
    """A forge that is briefly away: the Run waits (queued, Binding free), then the
    stage is tried again, each wait twice the last; the last attempt fails the Run."""

    def unavailable(spec):
        raise ProviderUnavailable("the forge is down for maintenance")

    down = ServiceContext(settings=ctx.settings, db=ctx.db, open_provider=unavailable)
    run = create_run(down, binding_id)
    waits = []
    for _ in range(ctx.settings.max_stage_attempts - 1):
        before = datetime.now(UTC)
        assert execute_step(down, Step(run.id, None, None)) is None
        with ctx.db.session() as session:
            queued = session.get(Run, run.id)
            assert queued is not None
            binding = session.get(Binding, binding_id)
            assert binding is not None
        assert (queued.status, queued.stage) == ("queued", "checking_access")
        assert binding.lease_run_id is None
        waits.append((queued.retry_at.replace(tzinfo=UTC) - before).total_seconds())
    backoff = ctx.settings.retry_backoff
    assert [round(w / backoff) for w in waits] == [1, 2, 4, 8][: len(waits)]
    assert execute_step(down, Step(run.id, None, None)) is None
    with ctx.db.session() as session:
        done = session.get(Run, run.id)
        assert done is not None
    assert (done.status, done.error_code) == ("failed", "provider_unavailable")
    assert "gave up after" in done.error_message


def test_a_stalled_run_says_so_in_its_events_naming_the_worker(ctx, binding_id):
    """Issue 9 #7: a Run whose worker died looked alive with no event. The re-dispatch
    and the takeover are events, naming whose lease expired and who took over."""
    run = create_run(ctx, binding_id)
    step = execute_step(ctx, Step(run.id, Stage.CHECKING_ACCESS, None), owner="w1@host/41/t1")
    assert step is not None  # ... and the worker holding the lease dies here
    expire_lease(ctx)
    assert redispatch_stalled(ctx) == 1
    assert redispatch_stalled(ctx) == 1  # the next tick, nobody claimed it yet
    execute_step(ctx, Step(run.id, None, None), owner="w2@host/42/t2")
    with ctx.db.session() as session:
        events = list(
            session.execute(
                select(RunEvent).where(RunEvent.run_id == run.id).order_by(RunEvent.seq)
            ).scalars()
        )
    redispatched = [e for e in events if e.type == "redispatched"]
    assert len(redispatched) == 1  # once per stall, not once per tick
    assert "w1@host/41/t1" in redispatched[0].message
    assert "expired" in redispatched[0].message
    [reclaimed] = [e for e in events if e.type == "lease_reclaimed"]
    assert "w2@host/42/t2 took over from w1@host/41/t1" in reclaimed.message
    assert events.index(redispatched[0]) < events.index(reclaimed)


def test_a_half_written_plan_is_discarded_and_planned_again(ctx, binding_id):
    """Items written before the completion marker never count: a reclaim re-plans."""
    from sqlalchemy import insert, select

    from reposync.models import RunItem

    run = create_run(ctx, binding_id)
    step = Step(run.id, Stage.CHECKING_ACCESS, None)
    while step.stage is not Stage.PLANNING:
        step = execute_step(ctx, step)
    # A dead execution wrote part of a plan (a chunk) and never its marker.
    with ctx.db.transaction() as session:
        session.execute(
            insert(RunItem),
            [
                {
                    "run_id": run.id,
                    "phase": 0,
                    "object_type": "git_ref",
                    "object_key": "ghost",
                    "action": "delete",
                    "reason": "deleted_on_source",
                    "intent": {},
                }
            ],
        )
    expire_lease(ctx)
    step = Step(run.id, None, None)
    while step is not None:
        step = execute_step(ctx, step)
    with ctx.db.session() as session:
        keys = session.execute(select(RunItem.object_key).where(RunItem.run_id == run.id))
        keys = sorted(keys.scalars())
        done = session.get(Run, run.id)
        assert done is not None
    assert "ghost" not in keys
    assert keys == ["branch branch-00000", "branch main", "tag v00000"]
    assert (done.status, done.counters["created"], done.counters["deleted"]) == ("completed", 3, 0)
