"""Per-Binding cron schedules, driven by one periodic tick of celery beat.

The tick selects due Bindings with ``FOR UPDATE SKIP LOCKED`` and creates a Run under
the unique key (binding, scheduled slot): two beats, or a redelivered tick, can never
create two Runs for one slot. Ticks coalesce: while a Run is active the due slot stays
pending; the first tick after it creates one Run and moves to the next future slot.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from croniter import CroniterBadCronError, croniter
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from reposync.errors import UsageError
from reposync.models import Binding
from reposync.service.context import ServiceContext, Step
from reposync.service.fences import unresolved_unknown
from reposync.service.leases import database_now
from reposync.service.runs import active_run, new_run
from reposync.sync.vocabulary import AuditMode, Stage, Trigger

log = logging.getLogger(__name__)

TICK_BATCH = 50


def validate_cron(expression: str) -> str:
    expression = expression.strip()
    try:
        croniter(expression)
    except (CroniterBadCronError, ValueError) as exc:
        raise UsageError(f"{expression!r} is not a cron expression: {exc}") from exc
    return expression


def next_slot(expression: str, after: datetime) -> datetime:
    """The first occurrence strictly after ``after`` (UTC)."""
    value: datetime = croniter(expression, after).get_next(datetime)
    return value


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
                continue  # the Binding is fenced until recovery
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
            binding.next_run_at = next_slot(binding.schedule_cron, now)
    for run_id in created:
        ctx.dispatcher.dispatch(Step(run_id, Stage.CHECKING_ACCESS, None))
    return created
