"""Sending outbox rows: claim, sign, POST, record; retries, dead letters, recovery.

One attempt is:

1. **Claim** the row with one guarded ``UPDATE … WHERE`` (pending, due, unleased or its
   lease expired, its subscription active, attempts left): the row's lease names this
   worker until ``2 * webhook_timeout + 5`` s from now on the database's clock, and the
   attempt is counted. PostgreSQL re-evaluates the WHERE on the newest row version and
   SQLite writers are serialized (``BEGIN IMMEDIATE``), so two workers never both win,
   without ``SKIP LOCKED`` (which SQLite lacks). The claim commits before anything is
   sent.
2. **Sign** (``signed_request``: reposync's own signature and the Standard Webhooks
   one) and **send** (``webhook_transport.post``), bounded as a whole by
   ``webhook_timeout``, so it ends well inside the lease.
3. **Record** the outcome, fenced by the lease owner: 2xx delivered; 429, 5xx and no
   answer retry after ``unit * 2^attempt`` s (at most ``webhook_backoff_max``, longer
   when a 429 says ``Retry-After``), then ``failed`` once the attempts are spent; any
   other answer fails at once (a dead letter, to be redelivered by hand).

A worker killed anywhere in between loses nothing: the row stays pending, its lease
runs out, and the recovery tick dispatches it again. The receiver may then see the same
delivery twice (it was sent, its outcome not recorded): both carry the same
``X-Reposync-Delivery`` and ``webhook-id``, which is how receivers deduplicate.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, and_, or_, select, update
from sqlalchemy.orm import Session

from reposync import metrics
from reposync.config import Settings
from reposync.errors import ReposyncError, WebhookTargetRefused
from reposync.models import DeliveryStatus, WebhookDelivery, WebhookSubscription
from reposync.service.accounts.sealing import unseal
from reposync.service.context import ServiceContext
from reposync.service.pipeline.leases import database_now
from reposync.service.webhooks.webhook_transport import (
    ATTEMPT_HEADER,
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WEBHOOK_ID_HEADER,
    WEBHOOK_SIGNATURE_HEADER,
    WEBHOOK_TIMESTAMP_HEADER,
    Answer,
    Resolver,
    post,
    sign,
    standard_signature,
    system_resolver,
)

log = logging.getLogger(__name__)

D = WebhookDelivery
PENDING = DeliveryStatus.PENDING.value


def backoff(settings: Settings, attempt: int) -> float:
    """Seconds before the attempt after attempt number ``attempt`` (1-based) failed."""
    return float(min(settings.webhook_backoff_unit * 2**attempt, settings.webhook_backoff_max))


def retry_delay(settings: Settings, attempt: int, retry_after: float | None) -> float:
    """``backoff``, or longer when the target asked for it (never beyond the cap)."""
    delay = backoff(settings, attempt)
    if retry_after is not None:
        delay = max(delay, min(retry_after, settings.webhook_backoff_max))
    return delay


def lease_seconds(settings: Settings) -> float:
    """How long a claim lasts: the whole send twice over, and time to record it."""
    return 2 * settings.webhook_timeout + 5.0


def retryable(answer: Answer) -> bool:
    """429, 5xx and no answer at all are worth another attempt; nothing else is."""
    return answer.status is None or answer.status == 429 or answer.status >= 500


@dataclass(frozen=True, slots=True)
class Claimed:
    id: int
    guid: str
    event: str
    body: str
    attempt: int
    url: str
    secret_sealed: str


def _due(now: datetime, max_attempts: int, *, due_by: datetime | None = None) -> Any:
    """SQL: a pending row due by ``due_by`` (default: now), unleased or its lease expired,
    that whoever claims it may send."""
    active = select(WebhookSubscription.id).where(WebhookSubscription.active.is_(True))
    return and_(
        D.status == PENDING,
        D.next_attempt_at <= (now if due_by is None else due_by),
        or_(D.lease_expires_at.is_(None), D.lease_expires_at < now),
        D.attempts < max_attempts,
        D.subscription_id.in_(active),
    )


def claim(ctx: ServiceContext, delivery_id: int, owner: str) -> Claimed | float | None:
    """Claim one attempt of a delivery; or seconds until it is due; or None (nothing to
    do: delivered, failed, paused, or another worker holds it)."""
    settings = ctx.settings
    with ctx.db.transaction() as session:
        now = database_now(session)
        row = session.execute(
            update(D)
            .where(D.id == delivery_id, _due(now, settings.webhook_max_attempts))
            .values(
                attempts=D.attempts + 1,
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_seconds(settings)),
                last_attempt_at=now,
            )
            .returning(D.id, D.guid, D.event, D.body, D.attempts, D.subscription_id)
        ).one_or_none()
        if row is None:
            return _not_claimed(session, delivery_id, now)
        subscription = session.get(WebhookSubscription, row.subscription_id)
        assert subscription is not None  # the claim required it active
        return Claimed(
            row.id,
            row.guid,
            row.event,
            row.body,
            row.attempts,
            subscription.url,
            subscription.secret_sealed,
        )


def _not_claimed(session: Session, delivery_id: int, now: datetime) -> float | None:
    """Why a claim found nothing: a row not due yet answers when it will be."""
    found = session.execute(
        select(D.status, D.next_attempt_at, D.lease_expires_at).where(D.id == delivery_id)
    ).one_or_none()
    if (
        found is not None
        and found.status == PENDING
        and found.next_attempt_at is not None
        and found.next_attempt_at > now
        and (found.lease_expires_at is None or found.lease_expires_at < now)
    ):
        return float((found.next_attempt_at - now).total_seconds())
    return None


def deliver(
    ctx: ServiceContext, delivery_id: int, *, owner: str, resolve: Resolver = system_resolver
) -> str | None:
    """One attempt of one delivery, start to end; the row's status afterwards (None: this
    worker had nothing to do). A retry is dispatched with its delay."""
    claimed = claim(ctx, delivery_id, owner)
    if isinstance(claimed, float):
        # Early (a delay longer than the broker's visibility timeout was cut short):
        # come back when it is due.
        ctx.dispatcher.dispatch_delivery(delivery_id, _countdown(ctx.settings, claimed))
        return None
    if claimed is None:
        return None
    settings = ctx.settings
    try:
        answer = _send(settings, claimed, resolve)
    except WebhookTargetRefused as exc:
        return _record(ctx, claimed, owner, Answer(None, error=exc.message), permanent=True)
    except ReposyncError as exc:  # the secret cannot be opened: no point in retrying
        return _record(ctx, claimed, owner, Answer(None, error=exc.message), permanent=True)
    return _record(ctx, claimed, owner, answer, permanent=False)


def signed_request(secret: str, claimed: Claimed, timestamp: int) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt, signed at ``timestamp`` (Unix seconds).

    Two signatures of the same secret and timestamp: reposync's own, and the Standard
    Webhooks one, whose ``webhook-id`` is the delivery's id (the same on every attempt
    and redelivery, as the specification asks of it) while the timestamp is the
    attempt's own."""
    body = claimed.body.encode("utf-8")
    signed_at = str(timestamp)
    headers = {
        SIGNATURE_HEADER: sign(secret, signed_at, body),
        TIMESTAMP_HEADER: signed_at,
        DELIVERY_HEADER: claimed.guid,
        EVENT_HEADER: claimed.event,
        ATTEMPT_HEADER: str(claimed.attempt),
        WEBHOOK_ID_HEADER: claimed.guid,
        WEBHOOK_TIMESTAMP_HEADER: signed_at,
        WEBHOOK_SIGNATURE_HEADER: standard_signature(secret, claimed.guid, signed_at, body),
    }
    return body, headers


def _send(settings: Settings, claimed: Claimed, resolve: Resolver) -> Answer:
    secret = unseal(settings, claimed.secret_sealed)
    body, headers = signed_request(secret, claimed, int(time.time()))
    return post(
        claimed.url,
        body,
        headers,
        timeout=settings.webhook_timeout,
        networks=settings.webhook_allowed_networks,
        resolve=resolve,
    )


def _record(
    ctx: ServiceContext, claimed: Claimed, owner: str, answer: Answer, *, permanent: bool
) -> str | None:
    """Write the attempt's outcome, if this worker still holds the row."""
    settings = ctx.settings
    status = answer.status
    if status is not None and 200 <= status < 300:
        outcome, error = DeliveryStatus.DELIVERED, None
    else:
        error = answer.error or f"HTTP {status} {answer.reason}".strip()
        if status is not None and 300 <= status < 400:
            error += " (redirects are not followed)"
        if permanent or not retryable(answer):
            outcome = DeliveryStatus.FAILED
        elif claimed.attempt >= settings.webhook_max_attempts:
            outcome = DeliveryStatus.FAILED
            error = f"gave up after {claimed.attempt} attempts; the last: {error}"
        else:
            outcome = DeliveryStatus.PENDING
    delay = retry_delay(settings, claimed.attempt, answer.retry_after)
    with ctx.db.transaction() as session:
        now = database_now(session)
        values: dict[str, Any] = {
            "status": outcome.value,
            "response_status": status,
            "last_error": error[:1024] if error else None,
            "lease_owner": None,
            "lease_expires_at": None,
        }
        if outcome is DeliveryStatus.PENDING:
            values["next_attempt_at"] = now + timedelta(seconds=delay)
        else:
            values.update(next_attempt_at=None, finished_at=now)
        written = cast(
            "CursorResult[Any]",
            session.execute(
                update(D)
                .where(D.id == claimed.id, D.lease_owner == owner, D.status == PENDING)
                .values(**values)
            ),
        ).rowcount
    if not written:
        log.warning(
            "delivery %s: attempt %s outlived its claim; its outcome (%s) is not recorded",
            claimed.id,
            claimed.attempt,
            status,
        )
        return None
    metrics.record_webhook("outbound", _METRIC_STATUS[outcome])
    log.info(
        "delivery %s (%s) attempt %s: %s -> %s",
        claimed.id,
        claimed.event,
        claimed.attempt,
        status if status is not None else error,
        outcome.value,
    )
    if outcome is DeliveryStatus.PENDING:
        ctx.dispatcher.dispatch_delivery(claimed.id, _countdown(settings, delay))
    return outcome.value


#: What an attempt came to, in the metric's words (``reposync_webhook_deliveries_total``).
_METRIC_STATUS = {
    DeliveryStatus.DELIVERED: "delivered",
    DeliveryStatus.PENDING: "retrying",
    DeliveryStatus.FAILED: "failed",
}


def _countdown(settings: Settings, delay: float) -> float:
    """A broker countdown stays below the visibility timeout (the broker would deliver
    the message again meanwhile): a longer wait is finished by a second message."""
    return max(0.0, min(delay, settings.visibility_timeout / 2))


def redispatch_overdue(ctx: ServiceContext, limit: int = 100) -> int:
    """The recovery tick's part: dead-letter rows whose last attempt died with its worker,
    then hand every pending row overdue by ``dispatch_grace`` (a lost message, a killed
    worker whose claim ran out) to a worker again. Two ticks doing it at once are
    harmless: the claim lets one attempt through."""
    settings = ctx.settings
    with ctx.db.transaction() as session:
        now = database_now(session)
        expired = or_(D.lease_expires_at.is_(None), D.lease_expires_at < now)
        session.execute(
            update(D)
            .where(D.status == PENDING, D.attempts >= settings.webhook_max_attempts, expired)
            .values(
                status=DeliveryStatus.FAILED.value,
                lease_owner=None,
                lease_expires_at=None,
                next_attempt_at=None,
                finished_at=now,
                last_error=f"gave up after {settings.webhook_max_attempts} attempts; the "
                "last one's worker stopped before recording its outcome",
            )
        )
        overdue = now - timedelta(seconds=settings.dispatch_grace)
        ids = list(
            session.execute(
                select(D.id)
                .where(_due(now, settings.webhook_max_attempts, due_by=overdue))
                .order_by(D.next_attempt_at, D.id)
                .limit(limit)
            ).scalars()
        )
    for delivery_id in ids:
        log.warning("delivery %s is overdue; re-dispatching", delivery_id)
        ctx.dispatcher.dispatch_delivery(delivery_id)
    return len(ids)
