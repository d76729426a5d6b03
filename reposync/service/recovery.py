"""Runs nobody is executing (a dead worker, a lost message), and proving unknown writes."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, or_, select

from reposync import metrics
from reposync.errors import NotAllowedNow, RecordNotFound, ResultUnknown
from reposync.lifecycle import ACTIVE_RUN_STATUSES, RunKind, RunStatus
from reposync.models import Binding, Run, RunEvent
from reposync.providers.base import ItemError
from reposync.service.context import ServiceContext, Step
from reposync.service.events import emit
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.leases import ClaimRefused, claim_binding, database_now, new_owner
from reposync.service.pipeline.stages.applying import item_rows, record_blocked
from reposync.service.pipeline.stages.finalizing import finish
from reposync.service.pipeline.stages.objects.applier_contract import ApplyItem, ItemOutcome
from reposync.service.pipeline.stages.objects.appliers import applier_for
from reposync.sync.vocabulary import ItemState, ObjectType

log = logging.getLogger(__name__)


def stalled_runs(ctx: ServiceContext, limit: int = 100) -> list[Step]:
    """Active Runs whose lease expired, or queued Runs never claimed within the grace.

    Dispatching a resume step for each is safe even when two ticks do it: the claim
    lets exactly one execution through.
    """
    return [Step(stalled.run_id, None, None) for stalled in _stalled(ctx, limit)]


def redispatch_stalled(ctx: ServiceContext, limit: int = 100) -> int:
    """Hand every stalled Run to a worker again; a handoff's forward Run goes back to
    the handoff task, which resumes it and then still performs the switch.

    Each re-dispatch is a Run event saying why (whose lease expired, or since when it
    waits), so a Run whose worker died does not just look alive: once per stall, not
    once per tick.
    """
    rows = _stalled(ctx, limit)
    if rows:
        _tell(ctx, rows)
    for stalled in rows:
        log.warning("run %s stalled (%s); re-dispatching", stalled.run_id, stalled.why)
        metrics.record_redispatch(stalled.reason)
        if stalled.kind == RunKind.HANDOFF.value:
            ctx.dispatcher.dispatch_handoff(stalled.binding_id, stalled.run_id)
        else:
            ctx.dispatcher.dispatch(Step(stalled.run_id, None, None))
    return len(rows)


@dataclass(frozen=True, slots=True)
class _Stalled:
    run_id: int
    binding_id: int
    kind: str
    stage: str
    why: str
    #: One word for the metric: lease_expired, deferred, never_claimed, no_lease.
    reason: str


def _tell(ctx: ServiceContext, rows: list[_Stalled]) -> None:
    """One ``redispatched`` event per stall: skipped when the Run's latest event
    already is one (nobody claimed the Run since the last tick)."""
    with ctx.db.transaction() as session:
        latest = dict(
            session.execute(
                select(RunEvent.run_id, RunEvent.type)
                .join(Run, (Run.id == RunEvent.run_id) & (Run.event_seq == RunEvent.seq))
                .where(RunEvent.run_id.in_([row.run_id for row in rows]))
            ).all()
        )
        for row in rows:
            if latest.get(row.run_id) != "redispatched":
                emit(session, row.run_id, "redispatched", row.stage, message=row.why)


def _stalled(ctx: ServiceContext, limit: int) -> list[_Stalled]:
    with ctx.db.session() as session:
        now = database_now(session)
        grace = now - timedelta(seconds=ctx.settings.dispatch_grace)
        rows = session.execute(
            select(
                Run.id,
                Run.binding_id,
                Run.kind,
                Run.stage,
                Run.status,
                Run.retry_at,
                Run.created_at,
                Binding.lease_run_id,
                Binding.lease_owner,
                Binding.lease_generation,
                Binding.lease_expires_at,
            )
            .join(Binding, Binding.id == Run.binding_id)
            .where(
                Run.status.in_([s.value for s in ACTIVE_RUN_STATUSES]),
                or_(
                    and_(Binding.lease_run_id == Run.id, Binding.lease_expires_at < now),
                    and_(  # never claimed, or deferred by a rate limit until now
                        Run.status == RunStatus.QUEUED.value,
                        Binding.lease_run_id.is_(None),
                        or_(
                            and_(Run.retry_at.is_(None), Run.created_at < grace),
                            Run.retry_at <= now,
                        ),
                    ),
                    and_(
                        Run.status == RunStatus.RUNNING.value,
                        or_(Binding.lease_run_id.is_(None), Binding.lease_run_id != Run.id),
                    ),
                ),
            )
            .order_by(Run.id)
            .limit(limit)
        )
        return [_Stalled(r.id, r.binding_id, r.kind, r.stage, _why(r), _reason(r)) for r in rows]


def _why(row: Any) -> str:
    if row.lease_run_id == row.id:
        expired = row.lease_expires_at.isoformat() if row.lease_expires_at else "?"
        return (
            f"the lease of {row.lease_owner} (generation {row.lease_generation}) expired at "
            f"{expired} without a heartbeat; re-dispatched to a worker"
        )
    if row.status == RunStatus.QUEUED.value and row.retry_at is not None:
        return f"deferred until {row.retry_at.isoformat()}; re-dispatched to a worker"
    if row.status == RunStatus.QUEUED.value:
        return (
            f"queued since {row.created_at.isoformat()} and never claimed (its message "
            "may be lost); re-dispatched to a worker"
        )
    return "running without a lease; re-dispatched to a worker"


def _reason(row: Any) -> str:
    if row.lease_run_id == row.id:
        return "lease_expired"
    if row.status == RunStatus.QUEUED.value:
        return "deferred" if row.retry_at is not None else "never_claimed"
    return "no_lease"


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    """What read-back proved about a Run's writes of unknown outcome."""

    proven_written: int = 0
    proven_absent: int = 0
    still_unknown: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "proven_written": self.proven_written,
            "proven_absent": self.proven_absent,
            "still_unknown": self.still_unknown,
        }


def recover_run(ctx: ServiceContext, run_id: int) -> dict[str, int]:
    """Settle a Run's ``result_unknown`` items by read-back only; never write again.

    Found on the target (by identity or marker) and equal: completed, linked. Proven
    never to have happened (a create whose marker the provider's exhaustive search does
    not find; an edit whose object reads as it did when planned; a delete whose object
    is still there): ``not_applied``, so the next Run plans it again. Anything else
    stays blocked: an outcome that cannot be proven is not guessed. The Run's report is
    rebuilt afterwards.
    """
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise RecordNotFound(f"run {run_id} does not exist")
        if run.status in {s.value for s in ACTIVE_RUN_STATUSES}:
            raise NotAllowedNow(f"run {run_id} is still {run.status}; recover it once it ends")
        binding = session.get(Binding, run.binding_id)
        assert binding is not None
        session.expunge(run)
        session.expunge(binding)
    claimed = claim_binding(
        ctx.db, binding.id, run_id, owner=new_owner("recover"), ttl=ctx.settings.lease_ttl
    )
    if isinstance(claimed, ClaimRefused):
        raise NotAllowedNow(claimed.reason)
    ex = StageExecution(ctx, claimed, run, binding)
    written = absent = unknown = 0
    try:
        items = item_rows(ex, state=ItemState.BLOCKED, error_code=ResultUnknown.code)
        by_type: dict[ObjectType, list[ApplyItem]] = {}
        for item in items:
            by_type.setdefault(item.object_type, []).append(item)
        outcomes: list[ItemOutcome] = []
        for object_type, group in by_type.items():
            for outcome in applier_for(object_type).read_back(ex, group):
                if outcome.state is ItemState.COMPLETED:
                    written += 1
                    outcomes.append(outcome)
                elif outcome.proven_absent:
                    absent += 1
                    outcomes.append(
                        ItemOutcome(
                            outcome.item,
                            ItemState.FAILED,
                            ItemError(
                                "not_applied",
                                "read-back proved the write never happened; the next Run "
                                "plans it again",
                            ),
                        )
                    )
                else:
                    unknown += 1
        record_blocked(ex, outcomes)
        finish(ex)
    finally:
        ex.close()
    return RecoveryResult(written, absent, unknown).to_dict()
