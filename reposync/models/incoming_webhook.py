"""IncomingWebhook: one notification received from a forge (a GitHub or Forgejo webhook, a
local hook).

Its unique key (provider, delivery id) is what makes a redelivery change nothing: the
row is inserted in the same transaction as the delivery's effects, so a second copy,
sequential or concurrent, fails the constraint and leaves everything as the first left it.
A delivery is only kept as long as its redelivery may come (the recovery tick prunes).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, utcnow


class IncomingWebhook(Base):
    __tablename__ = "incoming_webhooks"
    __table_args__ = (
        UniqueConstraint("provider", "delivery_id", name="uq_incoming_webhooks_delivery"),
        # A late rename or visibility change looks for a newer record of the same repository
        # that set the same thing (``intake._superseded``: provider and repository id, then
        # the time and the hint it recorded); the index's leading columns serve it. Its
        # trailing event and action are left from a lookup by the forge's event names,
        # which the hints replaced: unused, kept until a migration has another reason
        # to rebuild the index.
        Index(
            "ix_incoming_webhooks_repository",
            "provider",
            "repository_id",
            "event",
            "action",
        ),
        Index("ix_incoming_webhooks_received_at", "received_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    #: ``X-GitHub-Delivery``, ``X-Forgejo-Delivery`` (unchanged by a redelivery); a local
    #: hook makes up its own.
    delivery_id: Mapped[str] = mapped_column(String(100))
    event: Mapped[str] = mapped_column(String(64))
    action: Mapped[str | None] = mapped_column(String(64))
    repository_id: Mapped[str | None] = mapped_column(String(255))
    full_name: Mapped[str | None] = mapped_column(String(1024))
    #: ``accepted`` (its effects were applied), ``ignored`` (an event reposync does not
    #: act on) or ``pong`` (a ping).
    outcome: Mapped[str] = mapped_column(String(16))
    #: The Bindings it concerned and what it did to each (``{"12": "run_requested"}``).
    bindings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: What changed, as far as the payload says (refs, object types): hints only, a Run
    #: always reads the source itself.
    hints: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: When the change happened by the payload's own clock (orders renames and
    #: visibility changes that arrive out of order); None when the payload has no time.
    occurred_at: Mapped[datetime | None]
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
