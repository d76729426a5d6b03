"""IdempotencyKey: what one ``Idempotency-Key`` of one user bought, kept for a while.

A client that retries a request with the same key gets the first answer again instead
of a second effect. The unique key (user, scope, key) is what makes concurrent retries
produce one effect: whoever inserts the row first owns the request; the others find it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, utcnow

#: The request is being answered; ``locked_until`` says until when it holds the key.
IN_PROGRESS = "in_progress"
#: The answer is stored in ``response_*`` and is given to every retry.
COMPLETED = "completed"


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (
        UniqueConstraint("user_id", "scope", "key", name="uq_idempotency_keys_user_scope_key"),
        CheckConstraint(f"state IN ('{IN_PROGRESS}', '{COMPLETED}')", name="state"),
        Index("ix_idempotency_keys_expires_at", "expires_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    #: The operation and its record, ``binding:12:reconcile``: a key names one request
    #: of one user to one resource.
    scope: Mapped[str] = mapped_column(String(128))
    #: Set when the scope is a Binding: its keys go with it.
    binding_id: Mapped[int | None] = mapped_column(
        ForeignKey("bindings.id", ondelete="CASCADE"), index=True
    )
    key: Mapped[str] = mapped_column(String(255))
    #: SHA-256 of the request's normalized body: the same key with another body is refused.
    request_hash: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default=IN_PROGRESS)
    #: Who answers the request now (a claim taken over after ``locked_until`` gets a new one).
    owner: Mapped[str] = mapped_column(String(32))
    locked_until: Mapped[datetime | None]
    response_status: Mapped[int | None]
    response_body: Mapped[dict[str, Any] | None]
    response_headers: Mapped[dict[str, Any] | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
