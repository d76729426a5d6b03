"""OwnerBinding: one owner's repositories bound, each to a namesake of another owner.

``reposync bind-all SOURCE_OWNER TARGET_OWNER`` keeps one row: the two owners, what the
Bindings it makes are given (conflict policy, schedule, connections, the operator's
visibility confirmation), when its passes run and what the last one found. Its members
are the Bindings it made, by the source repository's immutable id, so a renamed source is
never bound twice, and a Binding an operator deleted is never made again (the member's
``binding_id`` becomes NULL with it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, JSONType, utcnow

#: Characters of an owner's locator: both owners fit one unique index entry on every
#: database (PostgreSQL's is about 2,700 bytes).
OWNER_LENGTH = 255


class OwnerBinding(Base):
    __tablename__ = "owner_bindings"
    __table_args__ = (
        UniqueConstraint(
            "source_provider",
            "source_owner",
            "target_provider",
            "target_owner",
            name="uq_owner_bindings_owners",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    source_provider: Mapped[str] = mapped_column(String(32))
    source_owner: Mapped[str] = mapped_column(String(OWNER_LENGTH))
    source_connection_id: Mapped[str | None] = mapped_column(String(255))
    target_provider: Mapped[str] = mapped_column(String(32))
    target_owner: Mapped[str] = mapped_column(String(OWNER_LENGTH))
    target_connection_id: Mapped[str | None] = mapped_column(String(255))

    # What each Binding it makes is given.
    ref_conflict_policy: Mapped[str | None] = mapped_column(String(32))
    schedule_cron: Mapped[str | None] = mapped_column(String(255))
    #: The operator's yes to targets more public than their sources (existing ones: a
    #: created target is never more public than its source).
    confirm_visibility: Mapped[bool] = mapped_column(default=False)
    #: Made over the API: each repository's locator must stay in the configured local
    #: roots (``service/confinement.py``), checked again at every pass.
    confined: Mapped[bool] = mapped_column(default=False)

    #: Its own passes: a cron expression (None: on demand only) and the next slot.
    pass_cron: Mapped[str | None] = mapped_column(String(255))
    next_pass_at: Mapped[datetime | None] = mapped_column(index=True)
    #: A pass running since then (one at a time; a claim older than the pass timeout is
    #: a dead worker's, and is taken over).
    pass_started_at: Mapped[datetime | None]
    last_pass_at: Mapped[datetime | None]
    #: The last pass's report (``service/owners.py: PassReport.to_dict``).
    last_pass: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class OwnerBindingMember(Base):
    """One source repository an owner binding bound, and the Binding it made."""

    __tablename__ = "owner_binding_members"
    __table_args__ = (
        UniqueConstraint(
            "owner_binding_id", "source_repository_id", name="uq_owner_binding_members_source"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_binding_id: Mapped[int] = mapped_column(
        ForeignKey("owner_bindings.id", ondelete="CASCADE"), index=True
    )
    source_repository_id: Mapped[str] = mapped_column(String(255))
    #: The source's name when it was bound (the target's name too).
    name: Mapped[str] = mapped_column(String(255))
    #: None once an operator deleted the Binding: the repository is not bound again.
    binding_id: Mapped[int | None] = mapped_column(
        ForeignKey("bindings.id", ondelete="SET NULL"), index=True
    )
    #: Its place among the owner binding's members, which spreads its schedule's slots.
    ordinal: Mapped[int]
    #: Whether the owner binding switched the Binding's sync on (once, after its first
    #: full apply: an operator who switches it off later is not overruled).
    sync_switched_on: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
