"""Executes one step of a Run: claim, run the persisted stage, hand over the next step.

Celery tasks and the embedded loop both call ``execute_step``; the only difference is
who carries the returned ``Step`` to the next execution.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy.exc import InterfaceError, OperationalError

from reposync import metrics, signals
from reposync.errors import (
    AttemptsExhausted,
    DatabaseUnavailable,
    GitRateLimited,
    LeaseLost,
    RateLimited,
    ReposyncError,
)
from reposync.guards import guarded
from reposync.lifecycle import Stage
from reposync.logs import log_context
from reposync.models import Run
from reposync.service.accounts.budgets import claiming
from reposync.service.context import ServiceContext, Step
from reposync.service.lookups import get_binding
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.leases import (
    ClaimRefused,
    Heartbeat,
    Lease,
    claim,
    give_up,
    new_owner,
)
from reposync.service.pipeline.stages import (
    access,
    applying,
    finalizing,
    inventory,
    planning,
    verifying,
)

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
    next external write. A rate limit defers the Run; a retryable error (a forge or
    database that is briefly away) retries the stage later with a growing backoff, and
    only an error that retrying cannot help, or the last allowed attempt, finishes the
    Run with the error in its report. An interrupted execution (Ctrl-C, shutdown) gives
    its lease up so the Run resumes at once on the next invocation.
    """
    with log_context(run_id=step.run_id, stage=step.stage.value if step.stage else None):
        return _execute_step(ctx, step, owner)


def _execute_step(ctx: ServiceContext, step: Step, owner: str | None) -> Step | None:
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
    with (
        log_context(binding_id=run.binding_id, stage=run.stage, generation=lease.generation),
        claiming(f"binding:{run.binding_id}"),  # its writes take the Binding's fair share
    ):
        return _execute_claimed(ctx, lease, run)


def _execute_claimed(ctx: ServiceContext, lease: Lease, run: Run) -> Step | None:
    with ctx.db.session() as session:
        binding = get_binding(session, run.binding_id)
        session.expunge(binding)
    ex = StageExecution(ctx, lease, run, binding)
    stage, started = run.stage, time.monotonic()
    next_stage: Stage | None = None
    log.info(
        "run %s: %s (binding %s, generation %s, attempt %s)",
        run.id,
        stage,
        run.binding_id,
        lease.generation,
        run.stage_attempts,
    )
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
        # A git child of this stage dies as soon as the lease is lost (``guarded``).
        # A cancel stops a running push too (``Lease.check_write``, ``ref_applier``).
        with (
            Heartbeat(ctx.db, lease, ctx.settings.heartbeat_interval, watch_cancel=True),
            guarded(lease.check),
        ):
            try:
                next_stage = HANDLERS[Stage(run.stage)](ex)
            except LeaseLost:
                raise
            except (RateLimited, GitRateLimited) as limited:
                retry_at = finalizing.defer(ex, limited)
                log.warning("run %s deferred until %s: %s", run.id, retry_at, limited)
                return None
            except (OperationalError, InterfaceError) as exc:
                # The database went away mid-stage. Saying so needs the database: if it
                # is still away, the lease expires and the tick re-dispatches the Run.
                unavailable = DatabaseUnavailable(f"the database went away: {_first_line(exc)}")
                finalizing.retry_or_finish(ex, unavailable)
                return None
            except ReposyncError as error:
                log.warning("run %s: %s in %s: %s", run.id, error.code, run.stage, error)
                finalizing.retry_or_finish(ex, error)
                return None
            except Exception as exc:  # a bug: say it in the report, free the Binding
                log.exception("run %s: unexpected error in %s", run.id, run.stage)
                finalizing.finish(
                    ex,
                    error=ReposyncError(
                        f"unexpected {type(exc).__name__} in stage {run.stage}: {exc}"
                    ),
                )
                return None
    except LeaseLost as lost:
        log.warning("run %s: %s; stopping", run.id, lost)
        return None
    except (KeyboardInterrupt, SystemExit):
        lease.lost.set()  # no write of this execution may follow
        _give_up(run.id, lease.generation, ctx)
        raise
    finally:
        ex.close()
        metrics.observe_stage(stage, time.monotonic() - started, handed_on=next_stage is not None)
    log.info(
        "run %s: %s done in %.2fs, next %s",
        run.id,
        stage,
        time.monotonic() - started,
        next_stage.value if next_stage is not None else "nothing",
    )
    if next_stage is None:
        return None
    return Step(run.id, next_stage, lease.generation)


def _give_up(run_id: int, generation: int | None, ctx: ServiceContext) -> None:
    """An interrupted execution lets the next one claim at once (best effort: when the
    database is away too, the lease's TTL decides)."""
    if generation is None:
        return
    try:
        give_up(ctx.db, run_id, generation, "interrupted; the Run resumes where it stopped")
    except Exception:
        log.exception("run %s: could not give the lease up", run_id)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def run_until_done(
    ctx: ServiceContext,
    first: Step,
    *,
    on_step: Callable[[Step], None] | None = None,
) -> None:
    """The embedded mode: execute steps in this process until the Run stops."""
    step: Step | None = first
    while step is not None:
        try:
            signals.raise_unheard()
            if on_step is not None:
                on_step(step)
        except (KeyboardInterrupt, SystemExit):  # between two steps: the lease is held
            _give_up(step.run_id, step.generation, ctx)
            raise
        step = execute_step(ctx, step)
