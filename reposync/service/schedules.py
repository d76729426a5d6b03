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
from reposync.lifecycle import AuditMode, Stage, Trigger
from reposync.models import Binding
from reposync.service.context import ServiceContext, Step
from reposync.service.cron import next_slot
from reposync.service.lookups import active_run
from reposync.service.pipeline.leases import database_now
from reposync.service.runs import new_run
from reposync.service.unknown_outcomes import unresolved_unknown

log = logging.getLogger(__name__)

TICK_BATCH = 50


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
    """Create the Runs of every due slot; returns their ids (dispatched after commit)."""
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
                )
                .order_by(Binding.next_run_at)
                .limit(TICK_BATCH)
                .with_for_update(skip_locked=True)
            )
            .scalars()
            .all()
        )
        for binding in due:
            if active_run(session, binding.id) is not None:
                continue  # coalesce: the slot stays pending until the Run ends
            if unresolved_unknown(session, binding.id):
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
    for run_id in created:
        ctx.dispatcher.dispatch(Step(run_id, Stage.CHECKING_ACCESS, None))
    return created
