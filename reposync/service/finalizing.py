"""Stage ``finalizing``: the report, the final status, and the lease given back.

Everything happens in one fenced transaction: a Run is either still running (and
resumable) or finished with its report, its status and a free Binding.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update

from reposync.errors import RateLimited, ReposyncError
from reposync.models import Binding, InventoryEntry, Run, RunItem, utcnow
from reposync.service.context import Step
from reposync.service.execution import StageExecution
from reposync.service.leases import release
from reposync.service.runs import new_run
from reposync.sync.report import (
    ItemAggregate,
    PlanningCounters,
    Problem,
    build_counters,
    final_status,
    item_problems,
)
from reposync.sync.vocabulary import (
    Action,
    ItemState,
    Representation,
    RunMode,
    RunStatus,
    Stage,
    Trigger,
)

EXAMPLES = 5
#: Plans that compared every object (a schedule may start after one of these).
FULL_PLANS = ("empty_target", "baseline", "full_audit")


def finalize(ex: StageExecution) -> None:
    """The normal end of the pipeline (also where cancellation lands)."""
    finish(ex, cancelled=ex.cancel_requested())


def finish(
    ex: StageExecution, *, error: ReposyncError | None = None, cancelled: bool = False
) -> RunStatus:
    """Report, status, lease release (and a follow-up Run when the source moved on)."""
    run = ex.run
    with ex.ctx.db.session() as session:
        fresh = session.get(Run, run.id)
        assert fresh is not None
        planning = PlanningCounters.from_dict(fresh.planning_counters)
        unsupported = dict(fresh.unsupported or {})
        plan_complete = fresh.plan_complete
    # Items of an unfinished plan never count (the completion marker rule).
    rows = aggregate_items(ex) if plan_complete else []
    gaps = data_gaps(ex) if plan_complete else {}
    counters, per_type, planned = build_counters(rows, planning)
    problems = item_problems(rows)
    problems.extend(_unsupported_problems(unsupported))
    if error is not None:
        problems.insert(0, _error_problem(error))
    status = final_status(
        counters, cancelled=cancelled, error_code=error.code if error is not None else None
    )
    with ex.fenced() as session:
        ex.flush_io(session)
        fresh = session.get(Run, run.id)
        assert fresh is not None
        now = utcnow()
        report = build_report(fresh, status, counters, per_type, planned, problems, now)
        report["data_gaps"] = gaps
        values: dict[str, Any] = {
            "status": status.value,
            "counters": counters,
            "report": report,
            "finished_at": now,
            "stage_attempts": 0,
        }
        if status is not RunStatus.CANCELLED and error is None:
            values["stage"] = Stage.COMPLETED.value
        if error is not None:
            values["error_code"] = error.code
            values["error_message"] = error.message
        session.execute(update(Run).where(Run.id == run.id).values(**values))
        session.execute(InventoryEntry.__table__.delete().where(InventoryEntry.run_id == run.id))
        if status is RunStatus.COMPLETED and run.mode == RunMode.APPLY.value:
            values = {"last_converged_run_id": run.id}
            if fresh.plan_mode in FULL_PLANS:  # everything was compared: a full apply
                values.update(last_full_apply_at=now, last_full_apply_epoch=run.authority_epoch)
            session.execute(update(Binding).where(Binding.id == ex.binding.id).values(**values))
        ex.event(session, "run_finished", f"status {status.value}", **counters)
        release(session, ex.lease)
        follow_up = None
        if status is RunStatus.COMPLETED_WITH_PENDING_CHANGES and run.mode == RunMode.APPLY:
            follow_up = new_run(
                session, ex.binding, trigger=Trigger.FOLLOW_UP, parent_run_id=run.id
            )
            ex.event(session, "follow_up_queued", f"run {follow_up.id}")
    ex.run.status = status.value
    if follow_up is not None:
        ex.ctx.dispatcher.dispatch(Step(follow_up.id, Stage.CHECKING_ACCESS, None))
    return status


def defer(ex: StageExecution, limited: RateLimited) -> None:
    """A rate limit: the Run waits for ``retry_at`` (queued, lease released), not failed.

    It resumes from its persisted stage and RunItems: the recovery tick dispatches it
    once ``retry_at`` has passed, and ``reposync sync`` waits for it or picks it up.
    """
    with ex.fenced() as session:
        ex.flush_io(session)
        session.execute(
            update(Run)
            .where(Run.id == ex.run_id)
            .values(status=RunStatus.QUEUED.value, retry_at=limited.retry_at, stage_attempts=0)
        )
        ex.event(
            session, "deferred", f"{limited.message}; resumes at {limited.retry_at.isoformat()}"
        )
        release(session, ex.lease)


def aggregate_items(ex: StageExecution) -> list[ItemAggregate]:
    """One GROUP BY over the Run's items (plus a few example keys for problem groups)."""
    with ex.ctx.db.session() as session:
        grouped = session.execute(
            select(
                RunItem.object_type,
                RunItem.action,
                RunItem.state,
                RunItem.error_code,
                func.count(),
                func.min(RunItem.error_message),
            )
            .where(RunItem.run_id == ex.run_id)
            .group_by(RunItem.object_type, RunItem.action, RunItem.state, RunItem.error_code)
        ).all()
        rows = []
        for otype, action, state, code, count, message in grouped:
            examples: list[str] = []
            if (
                code is not None
                or action in (Action.CONFLICT.value, Action.REPORT.value)
                or (state in (ItemState.FAILED.value, ItemState.SUPERSEDED.value))
            ):
                examples = list(
                    session.execute(
                        select(RunItem.object_key)
                        .where(
                            RunItem.run_id == ex.run_id,
                            RunItem.object_type == otype,
                            RunItem.action == action,
                            RunItem.state == state,
                            RunItem.error_code.is_(None)
                            if code is None
                            else RunItem.error_code == code,
                        )
                        .order_by(RunItem.id)
                        .limit(EXAMPLES)
                    ).scalars()
                )
            rows.append(
                ItemAggregate(
                    otype, Action(action), ItemState(state), code, count, examples, message
                )
            )
    return rows


def data_gaps(ex: StageExecution) -> dict[str, Any]:
    """Objects the target holds in another representation than the source's, per type."""
    with ex.ctx.db.session() as session:
        rows = session.execute(
            select(RunItem.representation, RunItem.object_type, func.count())
            .where(
                RunItem.run_id == ex.run_id,
                RunItem.state == ItemState.COMPLETED.value,
                RunItem.representation.is_not(None),
                RunItem.representation != Representation.NATIVE.value,
            )
            .group_by(RunItem.representation, RunItem.object_type)
        ).all()
    gaps: dict[str, Any] = {r.value: {} for r in Representation if r is not Representation.NATIVE}
    for representation, object_type, count in rows:
        gaps[representation][object_type] = count
    gaps["total"] = sum(count for _, _, count in rows)
    return gaps


def build_report(
    run: Run,
    status: RunStatus,
    counters: dict[str, int],
    per_type: dict[str, dict[str, int]],
    planned: dict[str, int],
    problems: list[Problem],
    finished_at: Any,
) -> dict[str, Any]:
    started = run.started_at or run.created_at
    return {
        "run_id": run.id,
        "binding_id": run.binding_id,
        "parent_run_id": run.parent_run_id,
        "status": status.value,
        "stage": run.stage,
        "kind": run.kind,
        "mode": run.mode,
        "audit_mode": run.audit_mode,
        "plan_mode": run.plan_mode,
        "trigger": run.trigger,
        "source_side": run.source_side,
        "target_side": run.target_side,
        "counters": counters,
        "object_types": per_type,
        "planned_actions": planned,
        "problems": [p.to_dict() for p in problems],
        "unsupported": dict(run.unsupported or {}),
        "io": dict(run.io or {}),
        "digests": {"source": run.source_digest, "target": run.target_digest},
        "started_at": started.isoformat() if started else None,
        "finished_at": finished_at.isoformat(),
        "duration_seconds": round((finished_at - started).total_seconds(), 3) if started else None,
    }


def _unsupported_problems(unsupported: dict[str, int]) -> list[Problem]:
    return [
        Problem(
            error_code="unsupported_ref_namespace",
            problem_type="data_gap",
            message=f"{count} ref(s) under {namespace} are not synced (only branches and tags are)",
            suggested_action="nothing to do if they are local conventions; otherwise "
            "convert them to branches or tags",
            retryable=False,
            count=count,
            object_type="git_ref",
            examples=[namespace],
        )
        for namespace, count in sorted(unsupported.items())
    ]


def _error_problem(error: ReposyncError) -> Problem:
    return Problem(
        error_code=error.code,
        problem_type="run_error",
        message=error.message,
        suggested_action=error.suggested_action,
        retryable=error.retryable,
    )
