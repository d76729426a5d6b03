"""Per-Binding cron schedules, driven by one periodic tick of celery beat.

The tick selects due Bindings with ``FOR UPDATE SKIP LOCKED`` and creates a Run under
the unique key (binding, scheduled slot): two beats, or a redelivered tick, can never
create two Runs for one slot. Ticks coalesce: while a Run is active the due slot stays
pending; the first tick after it creates one Run and moves to the next future slot.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from reposync.errors import UnschedulableCron
from reposync.lifecycle import ACTIVE_RUN_STATUSES, AuditMode, Stage, Trigger
from reposync.models import Binding, Run
from reposync.service.context import ServiceContext, Step
from reposync.service.pipeline.leases import database_now
from reposync.service.runs import new_run
from reposync.service.scheduling.cron import next_slot
from reposync.service.unknown_outcomes import unresolved_unknown_by_binding

log = logging.getLogger(__name__)

#: Due Bindings taken per transaction: bounds one statement's and one transaction's work
#: (and the rows it locks), not how many Runs a tick creates: the tick takes chunks
#: until nothing is due, so a cron due for every Binding each minute is met.
TICK_CHUNK = 500


def _next_or_pause(binding: Binding, now: datetime) -> datetime | None:
    """The Binding's next slot; a cron that stopped firing pauses its schedule only.

    One Binding's cron must never stop the tick for the others (and the re-dispatch of
    stalled Runs that follows it). The API shows the pause (``schedule_problem``).
    """
    assert binding.schedule_cron is not None
    try:
        return next_slot(binding.schedule_cron, now, binding.schedule_offset)
    except UnschedulableCron as exc:
        log.warning("binding %s: schedule paused: %s", binding.id, exc.message)
        return None


def schedule_problem(binding: Binding, now: datetime) -> str | None:
    """Why an enabled schedule has no next slot, if it has none."""
    if not (binding.sync_enabled and binding.schedule_cron) or binding.next_run_at is not None:
        return None
    try:
        next_slot(binding.schedule_cron, now, binding.schedule_offset)
    except UnschedulableCron as exc:
        return f"schedule paused: {exc.message}"
    return None


def audit_mode_for(binding: Binding, now: datetime) -> AuditMode:
    """Scheduled Runs are checkpoints, except a full audit once the interval passed."""
    last = binding.last_full_apply_at
    if last is None or now - last >= timedelta(seconds=binding.full_audit_interval):
        return AuditMode.FULL
    return AuditMode.CHECKPOINT


def tick(ctx: ServiceContext, now: datetime | None = None) -> list[int]:
    """Create the Runs of every due slot; returns their ids (dispatched after each chunk's
    commit, at the background priority: an operator's or a webhook's Run goes first)."""
    created: list[int] = []
    after = 0
    while True:
        chunk, last = _tick_chunk(ctx, now, after)
        for run_id in chunk:
            ctx.dispatcher.dispatch(Step(run_id, Stage.CHECKING_ACCESS, None, background=True))
        created.extend(chunk)
        if last is None:
            return created
        after = last


def _tick_chunk(
    ctx: ServiceContext, now: datetime | None, after: int
) -> tuple[list[int], int | None]:
    """One transaction: up to ``TICK_CHUNK`` due Bindings of id above ``after``, in id
    order (a Binding whose slot stays pending is never taken twice by one tick). Returns
    the Runs created and the last id taken, None when this chunk was the last."""
    created: list[int] = []
    with ctx.db.transaction() as session:
        now = now or database_now(session)
        due = (
            session.execute(
                select(Binding)
                .where(
                    Binding.sync_enabled.is_(True),
                    Binding.schedule_cron.is_not(None),
                    Binding.next_run_at <= now,
                    Binding.id > after,
                )
                .order_by(Binding.id)
                .limit(TICK_CHUNK)
                .with_for_update(skip_locked=True)
            )
            .scalars()
            .all()
        )
        ids = [binding.id for binding in due]
        busy = set(
            session.execute(
                select(Run.binding_id).where(
                    Run.binding_id.in_(ids),
                    Run.status.in_([s.value for s in ACTIVE_RUN_STATUSES]),
                )
            ).scalars()
        )
        blocked = unresolved_unknown_by_binding(session, ids)
        for binding in due:
            if binding.id in busy:
                continue  # coalesce: the slot stays pending until the Run ends
            if blocked.get(binding.id):
                continue  # blocked until recovery proves its unknown writes
            slot = binding.next_run_at
            try:
                with session.begin_nested():
                    run = new_run(
                        session,
                        binding,
                        trigger=Trigger.SCHEDULE,
                        audit_mode=audit_mode_for(binding, now),
                    )
                    run.scheduled_for = slot
                    session.flush()
                created.append(run.id)
            except IntegrityError:
                log.info("binding %s slot %s already has its Run", binding.id, slot)
            assert binding.schedule_cron is not None
            binding.next_run_at = _next_or_pause(binding, now)
    return created, (ids[-1] if len(ids) == TICK_CHUNK else None)
