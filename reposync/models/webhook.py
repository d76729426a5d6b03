"""Outbound webhooks: who wants which events where, and the durable outbox of deliveries.

A ``WebhookDelivery`` row is written in the same transaction as the state change it
reports (the outbox pattern): a Run's final status and its ``run.completed`` delivery
commit together or not at all. Sending happens afterwards, from the row; the row's lease
(``lease_owner`` / ``lease_expires_at``) lets exactly one worker send an attempt at a time,
and a worker that dies mid-send leaves the row due for the recovery tick.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, JSONType, utcnow


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # due at next_attempt_at (or being sent under a lease)
    DELIVERED = "delivered"  # the target answered 2xx
    FAILED = "failed"  # dead letter: a permanent refusal, or the attempts ran out


class WebhookSubscription(Base):
    """A target URL and the events it wants; the secret is sealed (Fernet), never shown."""

    __tablename__ = "webhook_subscriptions"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: Who created it: its owner and the admins see and change it.
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2048))
    #: Event names (``reposync.service.webhooks.outbox.EVENTS``), a JSON list.
    events: Mapped[list[str]] = mapped_column(JSONType)
    #: Only events of this Binding (deleted with it: a filter never silently widens).
    binding_id: Mapped[int | None] = mapped_column(
        ForeignKey("bindings.id", ondelete="CASCADE"), index=True
    )
    #: Only events naming this branch (events about no branch are not narrowed by it).
    branch: Mapped[str | None] = mapped_column(String(255))
    #: The signing secret, sealed with REPOSYNC_SECRET_KEY.
    secret_sealed: Mapped[str] = mapped_column(Text)
    active: Mapped[bool] = mapped_column(default=True)
    description: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class WebhookDelivery(Base):
    """One event for one subscription: the outbox row, its attempts and their outcome."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'delivered', 'failed')", name="status"),
        CheckConstraint("attempts >= 0", name="attempts"),
        Index("ix_webhook_deliveries_subscription_id_id", "subscription_id", "id"),
        # The recovery tick's scan: pending rows by due time.
        Index("ix_webhook_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    subscription_id: Mapped[int] = mapped_column(
        ForeignKey("webhook_subscriptions.id", ondelete="CASCADE")
    )
    #: ``X-Reposync-Delivery``: the same on every attempt and on a redelivery, so a
    #: receiver deduplicates by it.
    guid: Mapped[str] = mapped_column(String(36), index=True)
    event: Mapped[str] = mapped_column(String(40))
    binding_id: Mapped[int | None]
    branch: Mapped[str | None] = mapped_column(String(255))
    #: The exact bytes sent (UTF-8 JSON), fixed when the row is written: every attempt
    #: and every redelivery sends the same body.
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=DeliveryStatus.PENDING.value)
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime | None]
    last_attempt_at: Mapped[datetime | None]
    #: Who sends the current attempt, until when (a claim; the database's clock).
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_expires_at: Mapped[datetime | None]
    #: The last attempt's HTTP status (None: no answer) and what went wrong.
    response_status: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(String(1024))
    #: The delivery this one sends again (``POST …/redeliver``).
    redelivery_of: Mapped[int | None] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
