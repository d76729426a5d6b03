"""Runs that webhooks ask for, coalesced: one queued Run per Binding, one more after an
active one, bursts folded by a debounce window.

The whole state is one Binding column, ``event_run_due_at``: a Run is *owed* from then.
Every decision is taken with the Binding row locked (``FOR UPDATE``, or the fence's
``FOR SHARE`` in finalizing), so a delivery, the due task, the tick and a finishing Run
see each other's commits and never both create a Run:

* a delivery while a Run is queued and has not read its source yet (stage ``queued`` or
  ``checking_access``; a normal apply from the authority) is folded into that Run: it
  will see the change;
* a delivery while a Run is owed is folded into the owed one (a burst: one Run);
* otherwise the Run is owed from ``now + debounce``; with no active Run the caller
  dispatches a task with that countdown (``REQUESTED``), while a Run is active past its
  source inventory the owed Run waits for it (``PENDING``);
* when due (the task, or the recovery tick if the task was lost) the Run is created,
  unless a Run is active: one that has not read its source takes the owed Run's place,
  one that has keeps it owed;
* a Run that finishes while a Run is owed creates it at once (``after_run``, in
  finalizing's fenced transaction), so exactly one more Run follows it.

A Binding with sync disabled never starts moving by itself: nothing is owed to it, and
what was owed is dropped once it is due. An unresolved unknown write keeps the owed Run
waiting (the tick tries again after recovery). Correctness never depends on any of this:
a lost delivery is repaired by the next scheduled checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.lifecycle import RunKind, RunMode, Stage, Trigger
from reposync.models import Binding, Run
from reposync.service.lookups import active_run
from reposync.service.runs import new_run
from reposync.service.unknown_outcomes import unresolved_unknown

#: Stages of an active Run that has not read its source yet: a change made now is in it.
UNREAD_STAGES = frozenset({Stage.QUEUED.value, Stage.CHECKING_ACCESS.value})


def carries(run: Run, binding: Binding) -> bool:
    """Whether ``run`` will sync a change made now: it has not read its source yet, and it
    is a normal apply from the authority (not a dry run, nor a handoff's Run)."""
    return (
        run.stage in UNREAD_STAGES
        and run.mode == RunMode.APPLY.value
        and run.kind == RunKind.NORMAL.value
        and run.source_side == binding.authority_side
    )


class Request(StrEnum):
    """What a delivery did to one Binding (stored with the delivery, per Binding)."""

    #: A Run is owed from the end of the debounce window: dispatch the due task.
    REQUESTED = "run_requested"
    #: Folded into a queued Run, or into the Run already owed.
    COALESCED = "coalesced"
    #: A Run is active past its source inventory: one more Run follows it.
    PENDING = "pending_after_active_run"


def request_run(session: Session, binding: Binding, now: datetime, debounce: float) -> Request:
    """Owe ``binding`` a Run for a change seen at ``now`` (``binding`` locked by the caller)."""
    active = active_run(session, binding.id)
    if active is not None and carries(active, binding):
        return Request.COALESCED
    if binding.event_run_due_at is not None:
        return Request.COALESCED
    binding.event_run_due_at = now + timedelta(seconds=debounce)
    return Request.REQUESTED if active is None else Request.PENDING


class Due(StrEnum):
    NOTHING_OWED = "nothing_owed"
    NOT_YET = "not_yet"
    CREATED = "created"
    FOLDED = "folded_into_queued_run"
    AFTER_ACTIVE_RUN = "after_active_run"
    DROPPED = "dropped_sync_disabled"
    BLOCKED = "blocked_by_unknown_write"


@dataclass(frozen=True, slots=True)
class DueOutcome:
    due: Due
    run_id: int | None = None
    #: Seconds until the owed Run is due (``NOT_YET``: the task came early).
    wait: float = 0.0


def start_if_due(session: Session, binding: Binding, now: datetime) -> DueOutcome:
    """Create the owed Run if it is due and nothing stands in its way (``binding`` locked)."""
    due_at = binding.event_run_due_at
    if due_at is None:
        return DueOutcome(Due.NOTHING_OWED)
    if due_at > now:
        return DueOutcome(Due.NOT_YET, wait=(due_at - now).total_seconds())
    if not binding.sync_enabled:
        binding.event_run_due_at = None
        return DueOutcome(Due.DROPPED)
    if unresolved_unknown(session, binding.id):
        return DueOutcome(Due.BLOCKED)
    active = active_run(session, binding.id)
    if active is not None:
        if carries(active, binding):
            binding.event_run_due_at = None
            return DueOutcome(Due.FOLDED, active.id)
        return DueOutcome(Due.AFTER_ACTIVE_RUN, active.id)
    try:
        with session.begin_nested():
            run = new_run(session, binding, trigger=Trigger.WEBHOOK)
    except IntegrityError:  # a Run created meanwhile without this lock (a manual one)
        return DueOutcome(Due.AFTER_ACTIVE_RUN)
    binding.event_run_due_at = None
    return DueOutcome(Due.CREATED, run.id)


def after_run(
    session: Session, binding_id: int, finished: Run, follow_up: Run | None
) -> Run | None:
    """The one more Run a delivery during ``finished`` asked for, created as it finishes.

    Called in finalizing's fenced transaction, after the Run's terminal status is
    written (so the new Run does not collide with it). A follow-up Run already reads the
    source anew and takes the owed Run's place. A handoff's Run leaves it owed: the
    handoff goes on without the Binding (the tick settles it once the handoff is over).
    """
    # The fence's FOR SHARE lock holds the row: this read is current until the commit.
    binding = session.execute(select(Binding).where(Binding.id == binding_id)).scalar_one()
    if binding.event_run_due_at is None:
        return None
    if follow_up is not None:
        binding.event_run_due_at = None
        return None
    if finished.kind == RunKind.HANDOFF.value:
        return None
    if not binding.sync_enabled:
        binding.event_run_due_at = None
        return None
    if unresolved_unknown(session, binding_id):
        return None
    run = new_run(session, binding, trigger=Trigger.WEBHOOK, parent_run_id=finished.id)
    binding.event_run_due_at = None
    return run
