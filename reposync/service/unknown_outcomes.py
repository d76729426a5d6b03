"""Writes of unknown outcome: until recovery proves each one, the Binding is blocked.

A write whose response was lost (``result_unknown``) may or may not have landed. Nothing
else may touch the Binding meanwhile: no new Run, handoff, schedule, sync switch or
delete. Not to be confused with the lease fence (``leases.fence``), which refuses the
writes of an execution that lost its lease.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reposync.errors import ResultUnknown, ResultUnknownUnresolved
from reposync.models import Run, RunItem
from reposync.sync.vocabulary import ItemState


def unresolved_unknown(session: Session, binding_id: int) -> int:
    """Items of the Binding whose write outcome nobody has proven yet."""
    return session.execute(
        select(func.count())
        .select_from(RunItem)
        .join(Run, Run.id == RunItem.run_id)
        .where(
            Run.binding_id == binding_id,
            RunItem.state == ItemState.BLOCKED.value,
            RunItem.error_code == ResultUnknown.code,
        )
    ).scalar_one()


def unresolved_unknown_by_binding(session: Session, ids: Sequence[int]) -> dict[int, int]:
    """``unresolved_unknown`` of many Bindings in one statement (the scheduler's tick);
    a Binding with none is absent."""
    if not ids:
        return {}
    rows = session.execute(
        select(Run.binding_id, func.count())
        .select_from(RunItem)
        .join(Run, Run.id == RunItem.run_id)
        .where(
            Run.binding_id.in_(ids),
            RunItem.state == ItemState.BLOCKED.value,
            RunItem.error_code == ResultUnknown.code,
        )
        .group_by(Run.binding_id)
    ).all()
    return {binding_id: count for binding_id, count in rows}


def require_no_unknown(session: Session, binding_id: int, doing: str) -> None:
    count = unresolved_unknown(session, binding_id)
    if count:
        raise ResultUnknownUnresolved(
            f"binding {binding_id} has {count} write(s) whose outcome is unknown; "
            f"{doing} waits until recovery proves them"
        )
