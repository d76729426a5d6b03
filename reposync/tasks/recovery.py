"""The periodic tick and the resume task: Runs whose worker died are picked up again."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task

from reposync.service import idempotency, intake, owners, schedules, users
from reposync.service.context import ServiceContext
from reposync.service.deliveries import redispatch_overdue
from reposync.service.recovery import redispatch_stalled
from reposync.tasks.app import app
from reposync.tasks.base import RESUME_TASK, context, run_stage
from reposync.tasks.settings import TICK_TASK

log = logging.getLogger(__name__)


@app.task(name=RESUME_TASK, bind=True)
def resume(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    """Continue a Run at whatever stage it persisted (claims only an expired lease)."""
    run_stage(self, None, run_id, None)


@app.task(name=TICK_TASK)
def tick() -> None:
    """Schedules first (one Run per due slot), then owner bindings (members whose sync
    may be switched on, passes due: each handed to a worker), then the Runs webhooks owe
    whose due task was lost, then Runs whose worker died, then webhook deliveries overdue
    (a lost message, a worker killed mid-send), then the expired idempotency keys, and
    the expired web page sessions, stream tokens and throttle windows.

    Each part runs whatever happened to the others: a schedule that fails must not keep
    dead Runs from being picked up again, nor deliveries from being sent.
    """
    ctx = context()
    failed: list[BaseException] = []
    for part in (
        schedules.tick,
        owners.tick,
        intake.tick,
        redispatch_stalled,
        redispatch_overdue,
        _purge,
    ):
        try:
            part(ctx)
        except Exception as exc:
            log.exception("tick: %s failed; the tick goes on", getattr(part, "__name__", part))
            failed.append(exc)
    if failed:
        raise failed[0]


def _purge(ctx: ServiceContext) -> None:
    purged = idempotency.purge_expired(ctx)
    if purged:
        log.info("purged %d expired idempotency keys", purged)
    tokens, clients = users.purge_expired(ctx)
    if tokens or clients:
        log.info(
            "purged %d expired sessions and stream tokens, %d ended throttle windows",
            tokens,
            clients,
        )
