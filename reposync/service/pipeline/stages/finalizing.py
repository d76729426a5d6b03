"""Stage ``finalizing``: the report, the final status, and the lease given back.

Everything happens in one fenced transaction: a Run is either still running (and
resumable) or finished with its report, its status, a free Binding and the webhook
deliveries that report its end (``notifications.py``) and the movements it saw of
watched branches (``watched_branches.py``: a lost delivery's ``branch.moved``).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, func, select, update
from sqlalchemy.orm import Session

from reposync import faults, metrics
from reposync.errors import GitRateLimited, LeaseLost, RateLimited, ReposyncError
from reposync.lifecycle import RunMode, RunStatus, Stage, Trigger
from reposync.models import Binding, InventoryEntry, Run, RunItem, utcnow
from reposync.service.context import Step
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.leases import release
from reposync.service.pipeline.stages import watched_branches
from reposync.service.pipeline.stages.applying import block_unfinished, settle_unfinished
from reposync.service.pipeline.stages.default_branch import default_branch_report
from reposync.service.pipeline.stages.notifications import run_end_notifications
from reposync.service.runs import new_run
from reposync.service.webhooks.event_runs import after_run
from reposync.service.webhooks.outbox import dispatch_deliveries, written_in
from reposync.sync.report import (
    NOTICE_TYPES,
    ItemAggregate,
    PlanningCounters,
    Problem,
    build_counters,
    final_status,
    item_problems,
)
from reposync.sync.vocabulary import Action, ItemState, ObjectType, Representation

log = logging.getLogger(__name__)

EXAMPLES = 5
#: A source that keeps changing under a Run gets this many follow-up Runs in a row;
#: then the next scheduled or manual Run takes over (no endless chain of Runs).
MAX_FOLLOW_UPS = 3
#: Plans that compared every object (a schedule may start after one of these).
FULL_PLANS = ("empty_target", "baseline", "full_audit")


def finalize(ex: StageExecution) -> None:
    """The normal end of the pipeline (also where cancellation lands)."""
    finish(ex, cancelled=ex.cancel_requested())


def finish(
    ex: StageExecution, *, error: ReposyncError | None = None, cancelled: bool = False
) -> RunStatus:
    """Report, status, lease release (and a follow-up Run when the source moved on, or
    the one more Run a webhook asked for while this one ran)."""
    run = ex.run
    with ex.ctx.db.session() as session:
        fresh = session.get(Run, run.id)
        assert fresh is not None
        planning = PlanningCounters.from_dict(fresh.planning_counters)
        unsupported = dict(fresh.unsupported or {})
        rejected = dict(fresh.rejected or {})
        plan_complete = fresh.plan_complete
    if error is not None and plan_complete:
        _settle_interrupted_writes(ex)
    # Items of an unfinished plan never count (the completion marker rule).
    rows = aggregate_items(ex) if plan_complete else []
    gaps = data_gaps(ex) if plan_complete else {}
    branch = default_branch_report(ex) if plan_complete else None
    counters, per_type, planned = build_counters(rows, planning)
    problems = item_problems(rows)
    problems.extend(_unsupported_problems(unsupported, ex.spec("target").display))
    problems.extend(_rejected_problems(rejected))
    if error is not None:
        problems.insert(0, _error_problem(error))
    # What the Run read of watched branches, before its inventory rows go below.
    sighted = watched_branches.prepare(ex)
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
        if branch is not None:
            report["default_branch"] = branch
        values: dict[str, Any] = {
            "status": status.value,
            "counters": counters,
            "report": report,
            "finished_at": now,
            "stage_attempts": 0,
            "transfer": None,  # a push a cancel or an error cut short shows no more
        }
        if status is not RunStatus.CANCELLED and error is None:
            values["stage"] = Stage.COMPLETED.value
        if error is not None:
            values["error_code"] = error.code
            values["error_message"] = error.message
        session.execute(update(Run).where(Run.id == run.id).values(**values))
        inventory = cast("Table", InventoryEntry.__table__)
        session.execute(inventory.delete().where(inventory.c.run_id == run.id))
        if status is RunStatus.COMPLETED and run.mode == RunMode.APPLY.value:
            values = {"last_converged_run_id": run.id}
            if fresh.plan_mode in FULL_PLANS:  # everything was compared: a full apply
                values.update(last_full_apply_at=now, last_full_apply_epoch=run.authority_epoch)
            session.execute(update(Binding).where(Binding.id == ex.binding.id).values(**values))
        ex.event(session, "run_finished", f"status {status.value}", **counters)
        release(session, ex.lease)
        follow_up = None
        if status is RunStatus.COMPLETED_WITH_PENDING_CHANGES and run.mode == RunMode.APPLY:
            if _follow_ups_before(session, fresh) < MAX_FOLLOW_UPS:
                follow_up = new_run(
                    session, ex.binding, trigger=Trigger.FOLLOW_UP, parent_run_id=run.id
                )
                ex.event(session, "follow_up_queued", f"run {follow_up.id}")
            else:
                ex.event(
                    session,
                    "follow_ups_stopped",
                    f"the source kept changing through {MAX_FOLLOW_UPS} follow-up Runs; the "
                    "next scheduled or manual Run takes the rest",
                )
        owed = after_run(session, ex.binding.id, fresh, follow_up)
        if owed is not None:
            ex.event(session, "webhook_run_queued", f"run {owed.id}")
        # Webhook deliveries commit with the status they report, or not at all.
        deliveries = run_end_notifications(
            session,
            fresh,
            ex.binding,
            status,
            report,
            error=error.to_dict() if error is not None else None,
            follow_up_run_id=follow_up.id if follow_up is not None else None,
        )
        if sighted is not None and watched_branches.observe(ex, session, sighted):
            deliveries = list(dict.fromkeys([*deliveries, *written_in(session)]))
        faults.point("finalizing.after_notify")
    ex.run.status = status.value
    metrics.record_run_finished(status.value, run.trigger)
    for queued in (follow_up, owed):
        if queued is not None:
            ex.ctx.dispatcher.dispatch(Step(queued.id, Stage.CHECKING_ACCESS, None))
    dispatch_deliveries(ex.ctx, deliveries)
    return status


def _settle_interrupted_writes(ex: StageExecution) -> None:
    """Writes the error interrupted are proven by read-back before the Run ends; what
    cannot be proven is blocked ``result_unknown``, so no later Run writes it again
    blindly (a create that did land would otherwise be created twice)."""
    try:
        settle_unfinished(ex)
    except LeaseLost:
        raise
    except Exception:
        log.exception("run %s: read-back of interrupted writes failed", ex.run_id)
        block_unfinished(ex, "the Run ended while this write was in flight, and read-back failed")


def _follow_ups_before(session: Session, run: Run) -> int:
    """How many follow-up Runs lead to ``run`` (it included), at most ``MAX_FOLLOW_UPS``."""
    depth = 0
    current: Run | None = run
    while (
        current is not None
        and current.trigger == Trigger.FOLLOW_UP.value
        and current.parent_run_id is not None
        and depth < MAX_FOLLOW_UPS
    ):
        depth += 1
        current = session.get(Run, current.parent_run_id)
    return depth


def defer(ex: StageExecution, limited: RateLimited | GitRateLimited) -> datetime:
    """A rate limit: the Run waits for ``retry_at`` (queued, lease released), not failed;
    returns when it resumes.

    It resumes from its persisted stage and RunItems: the recovery tick dispatches it
    once ``retry_at`` has passed, and ``reposync sync`` waits for it or picks it up.
    Waiting for a limit is no failed attempt: the stage's attempt counter starts over.
    A Git host's limit says no time (git shows no ``Retry-After``): the Run waits
    ``git_rate_limit_wait`` on the providers' clock, what ``reposync sync`` waits on.
    """
    if isinstance(limited, RateLimited):
        retry_at = limited.retry_at
    else:
        assert ex.ctx.environment is not None
        wait = timedelta(seconds=ex.ctx.settings.git_rate_limit_wait)
        retry_at = ex.ctx.environment.clock.now() + wait
    _wait(
        ex,
        retry_at,
        f"{limited.message}; resumes at {retry_at.isoformat()}",
        error_code=limited.code,
    )
    return retry_at


def retry_or_finish(ex: StageExecution, error: ReposyncError) -> RunStatus | None:
    """A retryable error retries the stage later, each time waiting twice as long; an
    error retrying cannot help, or one on the stage's last allowed attempt, finishes
    the Run with the error in its report (returns its status then)."""
    settings = ex.ctx.settings
    with ex.ctx.db.session() as session:
        attempts = session.execute(
            select(Run.stage_attempts).where(Run.id == ex.run_id)
        ).scalar_one()
    if not error.retryable or attempts >= settings.max_stage_attempts:
        if error.retryable:
            error.message += f" (stage {ex.run.stage}, gave up after {attempts} attempts)"
        return finish(ex, error=error)
    delay = min(settings.retry_backoff * 2 ** max(attempts - 1, 0), settings.retry_backoff_max)
    # The providers' clock, as for rate limits: what ``reposync sync`` waits on.
    assert ex.ctx.environment is not None
    retry_at = ex.ctx.environment.clock.now() + timedelta(seconds=delay)
    _wait(
        ex,
        retry_at,
        f"{error.code}: {error.message}; attempt {attempts} of {settings.max_stage_attempts}, "
        f"retries at {retry_at.isoformat()}",
        keep_attempts=True,
        error_code=error.code,
    )
    return None


def _wait(
    ex: StageExecution,
    retry_at: datetime,
    message: str,
    *,
    keep_attempts: bool = False,
    error_code: str | None = None,
) -> None:
    """Queue the Run again for ``retry_at`` and give the Binding back."""
    values: dict[str, Any] = {"status": RunStatus.QUEUED.value, "retry_at": retry_at}
    if not keep_attempts:
        values["stage_attempts"] = 0
    with ex.fenced() as session:
        ex.flush_io(session)
        session.execute(update(Run).where(Run.id == ex.run_id).values(**values))
        # A retry spends the stage's attempt; a deferral (a rate limit) spends none.
        ex.event(
            session,
            "retry_scheduled" if keep_attempts else "deferred",
            message,
            **({} if error_code is None else {"error_code": error_code}),
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
        if representation is not None:  # the query keeps none that are
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
        "rejected": dict(run.rejected or {}),
        "io": dict(run.io or {}),
        "digests": {"source": run.source_digest, "target": run.target_digest},
        "started_at": started.isoformat() if started else None,
        "finished_at": finished_at.isoformat(),
        "duration_seconds": round((finished_at - started).total_seconds(), 3) if started else None,
    }


#: ``Run.unsupported`` keys that are object types (``inventory.held``), not ref namespaces.
_TYPE_NAMES = frozenset(t.value for t in ObjectType)


def _unsupported_problems(unsupported: dict[str, int], target: str) -> list[Problem]:
    types = {key: count for key, count in unsupported.items() if key in _TYPE_NAMES}
    namespaces = {key: count for key, count in unsupported.items() if key not in _TYPE_NAMES}
    return [*_unheld_problems(types, target), *_namespace_problems(namespaces)]


def _unheld_problems(types: dict[str, int], target: str) -> list[Problem]:
    """Objects of types the target cannot hold (``inventory.held_types``): a plain Git
    remote's missing issues, labels, releases, wiki, default branch."""
    return [
        Problem(
            error_code="unsupported_object_type",
            problem_type=NOTICE_TYPES["data_gap"],
            category="data_gap",
            message=f"{count} {object_type} object(s) of the source are not synced: the "
            f"target {target} cannot hold them",
            suggested_action="nothing to do if the target is meant to mirror the Git data "
            "only; otherwise bind the source to a forge that holds them",
            retryable=False,
            count=count,
            object_type=object_type,
            examples=[object_type],
        )
        for object_type, count in sorted(types.items())
    ]


def _namespace_problems(unsupported: dict[str, int]) -> list[Problem]:
    return [
        Problem(
            error_code="unsupported_ref_namespace",
            problem_type=NOTICE_TYPES["data_gap"],
            category="data_gap",
            message=f"{count} ref(s) under {namespace} are not synced (only branches and tags are)",
            suggested_action="nothing to do if they are local conventions; otherwise "
            "convert them to branches or tags",
            retryable=False,
            count=count,
            # A wiki's refs are counted under ``wiki:<namespace>``.
            object_type="wiki_ref" if namespace.startswith("wiki:") else "git_ref",
            examples=[namespace],
        )
        for namespace, count in sorted(unsupported.items())
    ]


#: Why a ref name cannot be synced, what to do about it.
_REJECTED = {
    "invalid_ref_name": (
        "ref(s) with a name Git refuses (not UTF-8, or against git check-ref-format) are "
        "not synced",
        "rename or delete them on the source (git update-ref -d, or fix packed-refs)",
    ),
    "ref_name_too_long": (
        "ref(s) with a name longer than 1023 bytes are not synced",
        "rename them on the source",
    ),
}


def _rejected_problems(rejected: dict[str, Any]) -> list[Problem]:
    return [
        Problem(
            error_code=code,
            problem_type=NOTICE_TYPES["data_gap"],
            category="data_gap",
            message=f"{found['count']} {_REJECTED.get(code, ('objects are not synced', ''))[0]}",
            suggested_action=_REJECTED.get(code, ("", "inspect the source"))[1],
            retryable=False,
            count=found["count"],
            object_type="git_ref",
            examples=list(found["examples"]),
        )
        for code, found in sorted(rejected.items())
    ]


def _error_problem(error: ReposyncError) -> Problem:
    return Problem(
        error_code=error.code,
        problem_type=error.problem_type,
        category="run_error",
        message=error.message,
        suggested_action=error.suggested_action,
        retryable=error.retryable,
    )
