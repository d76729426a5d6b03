"""The periodic tick: what keeps Runs, schedules and deliveries moving with nobody asking.

celery beat sends it every ``tick_interval`` in the distributed mode (``tasks/recovery``);
the in-process executor runs it on its own clock (``service/executor``). One body, so
both modes schedule, recover and purge alike.
"""

from __future__ import annotations

import logging

from reposync.service import idempotency, owners, recovery
from reposync.service.accounts import users
from reposync.service.context import ServiceContext
from reposync.service.scheduling import schedules
from reposync.service.webhooks import deliveries, intake

log = logging.getLogger(__name__)


def tick(ctx: ServiceContext) -> None:
    """Schedules first (one Run per due slot), then owner bindings (members whose sync
    may be switched on, passes due: each handed to a worker), then the Runs webhooks owe
    whose due task was lost, then Runs whose worker died, then webhook deliveries overdue
    (a lost message, a worker killed mid-send), then the expired idempotency keys, and
    the expired web page sessions, stream tokens and throttle windows.

    Each part runs whatever happened to the others: a schedule that fails must not keep
    dead Runs from being picked up again, nor deliveries from being sent. The first
    failure is raised once every part ran.
    """
    failed: list[BaseException] = []
    # Looked up at each tick (not bound at import), so a test may replace a part.
    for part in (
        schedules.tick,
        owners.tick,
        intake.tick,
        recovery.redispatch_stalled,
        deliveries.redispatch_overdue,
        purge,
    ):
        try:
            part(ctx)
        except Exception as exc:
            log.exception("tick: %s failed; the tick goes on", getattr(part, "__name__", part))
            failed.append(exc)
    if failed:
        raise failed[0]


def purge(ctx: ServiceContext) -> None:
    """Expired idempotency keys, sessions, stream tokens and ended throttle windows."""
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
