"""What a Run's end tells webhook subscribers, written in the finalizing transaction.

``run_end_notifications`` runs inside the fenced transaction that gives the Run its final
status, so its delivery rows exist if and only if that status does (the outbox rule).
Events (docs/webhooks.md has the payloads):

* ``run.completed``: ``completed`` or ``completed_with_pending_changes``;
* ``run.failed``: ``failed``;
* ``run.requires_attention``: ``requires_attention`` (conflicts) or ``blocked``
  (permission, rate limit, unknown write outcome, visibility): an operator must act;
* a ``cancelled`` Run tells nobody: somebody asked for it;
* ``item.blocked``: once per Run whose items ended ``blocked`` (the report's ``blocked``
  counter: unknown outcomes, refusals that need an operator; conflicts are
  ``drift.detected``), with the first of them;
* ``drift.detected``: the Run found the standby changed outside reposync: a managed
  object's target differs from what was last verified (reason ``drift``, found by a
  full audit), a managed object is gone from the target (``missing_on_target``), or an
  unmanaged target object collides with a source object (a conflict). Target-only
  objects (``target_only``) are not drift: they were never reposync's.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from reposync.lifecycle import RunStatus
from reposync.models import Binding, Run, RunItem, WebhookSubscription
from reposync.service.webhooks.outbox import (
    DRIFT_DETECTED,
    ITEM_BLOCKED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_REQUIRES_ATTENTION,
    notify,
)
from reposync.sync.planner import Reason
from reposync.sync.report import CONFLICT_CODE
from reposync.sync.vocabulary import Action, ItemState

RUN_EVENTS = {
    RunStatus.COMPLETED: RUN_COMPLETED,
    RunStatus.COMPLETED_WITH_PENDING_CHANGES: RUN_COMPLETED,
    RunStatus.FAILED: RUN_FAILED,
    RunStatus.REQUIRES_ATTENTION: RUN_REQUIRES_ATTENTION,
    RunStatus.BLOCKED: RUN_REQUIRES_ATTENTION,
}
#: How many problems, blocked items or drifted objects a payload names at most (the
#: counts are always complete; the Run's report and items have the rest).
MAX_LISTED = 50
#: Drift kinds by planner reason; conflicts are the third kind.
DRIFT_REASONS = {Reason.DRIFT.value: "modified", Reason.MISSING_ON_TARGET.value: "deleted"}


def binding_summary(binding: Binding) -> dict[str, Any]:
    authority = binding.authority
    source = binding.side(authority)
    target = binding.side(authority.other)
    return {
        "id": binding.id,
        "source": f"{source[0]}:{source[2]}",
        "target": f"{target[0]}:{target[2]}",
        "authority_side": binding.authority_side,
        "authority_epoch": binding.authority_epoch,
    }


def run_summary(run: Run, status: RunStatus, report: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run.id,
        "binding_id": run.binding_id,
        "kind": run.kind,
        "mode": run.mode,
        "audit_mode": run.audit_mode,
        "plan_mode": run.plan_mode,
        "trigger": run.trigger,
        "status": status.value,
        "parent_run_id": run.parent_run_id,
        "counters": report.get("counters", {}),
        "started_at": report.get("started_at"),
        "finished_at": report.get("finished_at"),
        "duration_seconds": report.get("duration_seconds"),
    }


def wanted_events(session: Session, binding_id: int) -> set[str]:
    """The events any active subscription could want for this Binding (one small query),
    so a Run nobody listens to costs no item scan."""
    rows = session.execute(
        select(WebhookSubscription.events).where(
            WebhookSubscription.active.is_(True),
            or_(
                WebhookSubscription.binding_id.is_(None),
                WebhookSubscription.binding_id == binding_id,
            ),
        )
    ).scalars()
    return {event for events in rows for event in (events or [])}


def run_end_notifications(
    session: Session,
    run: Run,
    binding: Binding,
    status: RunStatus,
    report: dict[str, Any],
    *,
    error: dict[str, Any] | None = None,
    follow_up_run_id: int | None = None,
) -> list[int]:
    """The delivery rows of a Run's end, in ``session`` (the fenced finalizing one)."""
    wanted = wanted_events(session, binding.id)
    if not wanted:
        return []
    run_part = run_summary(run, status, report)
    binding_part = binding_summary(binding)
    ids: list[int] = []
    event = RUN_EVENTS.get(status)
    if event is not None and event in wanted:
        payload = {
            "run": run_part,
            "binding": binding_part,
            "error": error,
            "problems": list(report.get("problems", []))[:MAX_LISTED],
            "follow_up_run_id": follow_up_run_id,
        }
        ids += notify(session, event, payload, binding_id=binding.id)
    counters = report.get("counters", {})
    if ITEM_BLOCKED in wanted and counters.get("blocked", 0):
        items = blocked_items(session, run.id)
        payload = {
            "run": run_part,
            "binding": binding_part,
            "count": counters["blocked"],
            "items": items,
            "truncated": counters["blocked"] > len(items),
        }
        ids += notify(session, ITEM_BLOCKED, payload, binding_id=binding.id)
    if DRIFT_DETECTED in wanted:
        drift = drift_found(session, run.id)
        if drift["count"]:
            payload = {"run": run_part, "binding": binding_part, **drift}
            ids += notify(session, DRIFT_DETECTED, payload, binding_id=binding.id)
    return ids


def _item(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "object_type": row.object_type,
        "object_key": row.object_key,
        "action": row.action,
        "state": row.state,
        "error_code": row.error_code,
        "error_message": row.error_message,
    }


_ITEM_COLUMNS = (
    RunItem.id,
    RunItem.object_type,
    RunItem.object_key,
    RunItem.action,
    RunItem.state,
    RunItem.error_code,
    RunItem.error_message,
)


def blocked_items(session: Session, run_id: int) -> list[dict[str, Any]]:
    """The first blocked items of a Run that are not conflicts (the report's blocked)."""
    rows = session.execute(
        select(*_ITEM_COLUMNS)
        .where(
            RunItem.run_id == run_id,
            RunItem.state == ItemState.BLOCKED.value,
            RunItem.action != Action.CONFLICT.value,
            or_(RunItem.error_code.is_(None), RunItem.error_code != CONFLICT_CODE),
        )
        .order_by(RunItem.id)
        .limit(MAX_LISTED)
    ).all()
    return [_item(row) for row in rows]


def drift_found(session: Session, run_id: int) -> dict[str, Any]:
    """Counts by kind (modified, deleted, conflicting) and the first drifted objects."""
    condition = or_(
        RunItem.reason.in_(list(DRIFT_REASONS)),
        RunItem.action == Action.CONFLICT.value,
        RunItem.error_code == CONFLICT_CODE,
    )
    kinds = {"modified": 0, "deleted": 0, "conflicting": 0}
    for reason, action, code, count in session.execute(
        select(RunItem.reason, RunItem.action, RunItem.error_code, func.count())
        .where(RunItem.run_id == run_id, condition)
        .group_by(RunItem.reason, RunItem.action, RunItem.error_code)
    ).all():
        kinds[_kind(reason, action, code)] += count
    rows = session.execute(
        select(*_ITEM_COLUMNS, RunItem.reason)
        .where(RunItem.run_id == run_id, condition)
        .order_by(RunItem.id)
        .limit(MAX_LISTED)
    ).all()
    objects = [
        {**_item(row), "kind": _kind(row.reason, row.action, row.error_code)} for row in rows
    ]
    count = sum(kinds.values())
    return {"count": count, "kinds": kinds, "objects": objects, "truncated": count > len(objects)}


def _kind(reason: str, action: str, error_code: str | None) -> str:
    if action == Action.CONFLICT.value or error_code == CONFLICT_CODE:
        return "conflicting"
    return DRIFT_REASONS[reason]
