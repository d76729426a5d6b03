"""The distributed mode for real: PostgreSQL, Redis, ``celery worker`` subprocesses, git.

These tests kill workers with SIGKILL and deliver tasks twice; the target repository's
reflog (``core.logAllRefUpdates=always``) counts every ref write at the resource itself,
so "nothing written twice" is measured where it matters, not inferred.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from reposync.lifecycle import Stage
from reposync.models import Binding, RunEvent, RunItem
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext, Step
from reposync.service.pipeline.runner import execute_step
from reposync.service.runs import create_run, enqueue_run
from reposync.tasks.base import task_name
from tests.gitrepo import enable_reflog, generate, init_bare, reflog_lengths, refs
from tests.integration.conftest import completed_transitions, run_row, wait_terminal
from tests.workers import start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def synced(path: Path) -> dict[str, str]:
    return {k: v for k, v in refs(path).items() if k.startswith(("refs/heads/", "refs/tags/"))}


def ref_writes(path: Path) -> dict[str, int]:
    return {k: v for k, v in reflog_lengths(path).items() if k.startswith("refs/")}


def prepare(
    tmp_path: Path, ctx: ServiceContext, branches: int, tags: int
) -> tuple[Path, Path, int]:
    source = generate(tmp_path / "src.git", commits=branches + 50, branches=branches, tags=tags)
    target = init_bare(tmp_path / "dst.git")
    enable_reflog(target)
    binding = bind(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    return source, target, binding.id


def test_a_run_enqueued_through_the_service_converges_on_a_real_worker(
    tmp_path, dctx, env, workers
):
    """Distributed mode: enqueue_run -> Celery -> a worker subprocess -> converged target."""
    source, target, binding_id = prepare(tmp_path, dctx, branches=120, tags=80)
    workers.append(start_worker(env, tmp_path, "w1"))

    run = enqueue_run(dctx, binding_id)
    finished = wait_terminal(dctx, run.id)

    assert finished.status == "completed", finished.report
    assert finished.stage == "completed"
    assert synced(target) == synced(source)
    assert finished.counters["created"] == 201
    assert set(ref_writes(target).values()) == {1}  # every ref written exactly once
    with dctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        assert binding.lease_owner is None  # released
        assert binding.last_converged_run_id == run.id
        stages = (
            session.execute(
                select(RunEvent.stage).where(
                    RunEvent.run_id == run.id, RunEvent.type == "stage_completed"
                )
            )
            .scalars()
            .all()
        )
    assert stages[:5] == [
        "checking_access",
        "inventory_source",
        "inventory_target",
        "planning",
        "applying",
    ]


def install_blocking_hook(target: Path, counter: Path, block_on_push: int) -> None:
    """A real pre-receive hook that hangs on the Nth push (a slow network, a big pack)."""
    hook = target / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "{counter}"\n'
        f'if [ "$n" = "{block_on_push}" ]; then sleep 60; fi\n'
        "cat >/dev/null\n"
    )
    hook.chmod(0o755)


def test_sigkill_mid_batch_then_a_new_worker_finishes_exactly_once(tmp_path, dctx, env, workers):
    """Kill the worker while batch 2 is applying; a new worker recovers; no ref written twice."""
    source, target, binding_id = prepare(tmp_path, dctx, branches=300, tags=300)
    counter = tmp_path / "pushes"
    install_blocking_hook(target, counter, block_on_push=2)
    first = start_worker(env, tmp_path, "w1")
    workers.append(first)

    run = enqueue_run(dctx, binding_id)

    def batch_two_applying() -> bool:
        with dctx.db.session() as session:
            states = dict(
                session.execute(
                    select(RunItem.state, func.count())
                    .where(RunItem.run_id == run.id)
                    .group_by(RunItem.state)
                ).all()
            )
        return (
            states.get("completed", 0) >= 150
            and states.get("applying", 0) > 0
            and counter.exists()
            and counter.read_text().strip() == "2"
        )

    wait_for(batch_two_applying, 60, "batch 2 to be mid-push")
    generation_at_kill = run_row(dctx, run.id).lease_generation
    first.kill()
    assert ref_writes(target)
    assert max(ref_writes(target).values()) == 1

    workers.append(start_worker(env, tmp_path, "w2", beat=True))  # beat: the recovery tick
    finished = wait_terminal(dctx, run.id, timeout=120)

    assert finished.status == "completed", finished.report
    assert synced(target) == synced(source)
    assert set(ref_writes(target).values()) == {1}, "a ref was written twice"
    assert finished.lease_generation > generation_at_kill
    with dctx.db.session() as session:
        states = session.execute(
            select(RunItem.state, func.count())
            .where(RunItem.run_id == run.id)
            .group_by(RunItem.state)
        ).all()
        recovered = session.execute(
            select(func.count()).where(
                RunEvent.run_id == run.id, RunEvent.type == "items_recovered"
            )
        ).scalar_one()
    assert dict(states) == {"completed": 601}
    assert recovered >= 1  # the applying items were settled by read-back first
    assert completed_transitions(dctx, run.id) == 601  # each item completed exactly once


def drive_to_applying(ctx: ServiceContext, run_id: int) -> Step:
    """Run the early stages in this process; return the first apply step unsent."""
    step: Step | None = Step(run_id, Stage.CHECKING_ACCESS, None)
    while step is not None and step.stage is not Stage.APPLYING:
        step = execute_step(ctx, step)
    assert step is not None
    return step


def test_duplicate_delivery_and_stale_generation_write_nothing_twice(
    tmp_path, dctx, env, workers, sender
):
    """The same apply task twice, then an old-generation task after a reclaim: no rewrite."""
    source, target, binding_id = prepare(tmp_path, dctx, branches=200, tags=100)
    run = create_run(dctx, binding_id)
    apply_step = drive_to_applying(dctx, run.id)
    for _ in range(2):  # duplicate delivery of one apply-batch message
        sender.send_task(task_name(Stage.APPLYING), args=[run.id, apply_step.generation])
    workers.append(start_worker(env, tmp_path, "w1"))

    finished = wait_terminal(dctx, run.id)
    assert finished.status == "completed", finished.report
    assert synced(target) == synced(source)
    assert set(ref_writes(target).values()) == {1}
    assert completed_transitions(dctx, run.id) == 301
    # The first copy may run the Run to its end in one task (its chain of steps), so
    # the duplicate is taken, and refused, only after the Run completed.
    wait_for(
        lambda: any(
            f"generation={apply_step.generation})" in line
            for line in workers[0].log().splitlines()
            if "refused" in line
        ),
        30,
        "the duplicate apply message to be refused",
    )
    writes_after_first_run = ref_writes(target)

    # A second Run whose apply step is taken over by another execution (reclaim) ...
    from tests.gitrepo import commit_on

    for n in range(0, 200, 10):
        commit_on(source, f"refs/heads/branch-{n:05d}", f"edit {n}")
    second = create_run(dctx, binding_id)
    stale_step = drive_to_applying(dctx, second.id)
    takeover = execute_step(dctx, stale_step)  # the next holder applies batch 1
    assert takeover is not None
    assert takeover.generation > stale_step.generation
    # ... then the stale generation's message arrives at a worker and must be refused.
    sender.send_task(task_name(Stage.APPLYING), args=[second.id, stale_step.generation])
    sender.send_task(task_name(takeover.stage), args=[second.id, takeover.generation])
    finished_second = wait_terminal(dctx, second.id)

    assert finished_second.status == "completed", finished_second.report
    assert synced(target) == synced(source)
    writes = ref_writes(target)
    changed = {f"refs/heads/branch-{n:05d}" for n in range(0, 200, 10)}
    assert {ref for ref in writes if writes[ref] != writes_after_first_run.get(ref)} == changed
    assert all(writes[ref] == 2 for ref in changed)  # created once, moved once
    assert completed_transitions(dctx, second.id) == len(changed)
    refused = [line for line in workers[0].log().splitlines() if "refused" in line]
    assert any(
        f"run_id={second.id}," in line and f"generation={stale_step.generation})" in line
        for line in refused
    )
