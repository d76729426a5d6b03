"""Executes one step of a Run: claim, run the persisted stage, hand over the next step.

Celery tasks and the embedded loop both call ``execute_step``; the only difference is
who carries the returned ``Step`` to the next execution.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from reposync.errors import AttemptsExhausted, LeaseLost, RateLimited, ReposyncError
from reposync.service import access, applying, finalizing, inventory, planning, verifying
from reposync.service.bindings import get_binding
from reposync.service.context import ServiceContext, Step
from reposync.service.execution import StageExecution
from reposync.service.leases import ClaimRefused, Heartbeat, claim, new_owner
from reposync.sync.vocabulary import Stage

log = logging.getLogger(__name__)


HANDLERS: dict[Stage, Callable[[StageExecution], Stage | None]] = {
    Stage.CHECKING_ACCESS: access.check_access,
    Stage.INVENTORY_SOURCE: inventory.inventory_source,
    Stage.INVENTORY_TARGET: inventory.inventory_target,
    Stage.PLANNING: planning.plan,
    Stage.APPLYING: applying.apply_next_batch,
    Stage.VERIFYING: verifying.verify,
    Stage.FINALIZING: finalizing.finalize,
}


def execute_step(ctx: ServiceContext, step: Step, *, owner: str | None = None) -> Step | None:
    """Run one stage of ``step.run_id``; returns the step to dispatch next, if any.

    A refused claim (duplicate delivery, stale generation, finished Run) returns
    ``None`` without any write. ``LeaseLost`` mid-stage stops the execution before its
    next external write. Errors of the tree finish the Run with a report; anything
    else propagates and leaves the Run resumable once its lease expires.
    """
    owner = owner or new_owner(step.stage.value if step.stage else "resume")
    claimed = claim(
        ctx.db,
        step.run_id,
        expected_stage=step.stage,
        dispatched_generation=step.generation,
        owner=owner,
        ttl=ctx.settings.lease_ttl,
    )
    if isinstance(claimed, ClaimRefused):
        log.info("step %s refused: %s", step, claimed.reason)
        return None
    lease, run = claimed
    with ctx.db.session() as session:
        binding = get_binding(session, run.binding_id)
        session.expunge(binding)
    ex = StageExecution(ctx, lease, run, binding)
    try:
        if run.stage_attempts > ctx.settings.max_stage_attempts:
            finalizing.finish(
                ex,
                error=AttemptsExhausted(
                    f"stage {run.stage} was started {run.stage_attempts} times without "
                    "progress; the Run gives up"
                ),
            )
            return None
        with Heartbeat(ctx.db, lease, ctx.settings.heartbeat_interval):
            try:
                next_stage = HANDLERS[Stage(run.stage)](ex)
            except LeaseLost:
                raise
            except RateLimited as limited:
                log.warning("run %s deferred until %s: %s", run.id, limited.retry_at, limited)
                finalizing.defer(ex, limited)
                return None
            except ReposyncError as error:
                log.warning("run %s failed in %s: %s", run.id, run.stage, error)
                finalizing.finish(ex, error=error)
                return None
    except LeaseLost as lost:
        log.warning("run %s: %s; stopping", run.id, lost)
        return None
    finally:
        ex.close()
    if next_stage is None:
        return None
    return Step(run.id, next_stage, lease.generation)


def run_until_done(
    ctx: ServiceContext,
    first: Step,
    *,
    on_step: Callable[[Step], None] | None = None,
) -> None:
    """The embedded mode: execute steps in this process until the Run stops."""
    step: Step | None = first
    while step is not None:
        if on_step is not None:
            on_step(step)
        step = execute_step(ctx, step)
