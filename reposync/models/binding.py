"""Binding: the pair of endpoints kept in sync, and the lease that fences every write."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.lifecycle import Side
from reposync.models.base import Base, utcnow
from reposync.sync.vocabulary import RefConflictPolicy


class Binding(Base):
    __tablename__ = "bindings"
    __table_args__ = (
        UniqueConstraint(
            "a_provider",
            "a_repository_id",
            "b_provider",
            "b_repository_id",
            name="uq_bindings_endpoints",
        ),
        # A webhook names a repository: side a's lookup rides the index above, side b's this.
        Index("ix_bindings_b_repository", "b_provider", "b_repository_id"),
        CheckConstraint("authority_side IN ('a', 'b')", name="authority_side"),
        CheckConstraint("lease_generation >= 0", name="lease_generation"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)

    # Side a and side b. The repository id is immutable; the locator follows renames.
    a_provider: Mapped[str] = mapped_column(String(32))
    a_repository_id: Mapped[str] = mapped_column(String(255))
    a_locator: Mapped[str] = mapped_column(String(1024))
    a_connection_id: Mapped[str | None] = mapped_column(String(255))
    b_provider: Mapped[str] = mapped_column(String(32))
    b_repository_id: Mapped[str] = mapped_column(String(255))
    b_locator: Mapped[str] = mapped_column(String(1024))
    b_connection_id: Mapped[str | None] = mapped_column(String(255))

    authority_side: Mapped[str] = mapped_column(String(1), default=Side.A.value)
    authority_epoch: Mapped[int] = mapped_column(default=1)
    sync_enabled: Mapped[bool] = mapped_column(default=False)
    ref_conflict_policy: Mapped[str] = mapped_column(
        String(32), default=RefConflictPolicy.KEEP_TARGET.value
    )

    # The lease: who may act for this Binding now. The generation only goes up.
    lease_owner: Mapped[str | None] = mapped_column(String(255))
    lease_run_id: Mapped[int | None]
    lease_generation: Mapped[int] = mapped_column(default=0)
    lease_expires_at: Mapped[datetime | None]

    last_converged_run_id: Mapped[int | None]

    # Schedules: a cron expression, the next slot, and the full-audit cadence.
    schedule_cron: Mapped[str | None] = mapped_column(String(255))
    next_run_at: Mapped[datetime | None] = mapped_column(index=True)
    #: Seconds each slot of the cron is moved by: an owner binding spreads its Bindings'
    #: slots (``service/owners.py``) so that one schedule does not start them all at once.
    schedule_offset: Mapped[int] = mapped_column(default=0)
    full_audit_interval: Mapped[int] = mapped_column(default=7 * 24 * 3600)  # seconds
    #: The last completed full apply, and the authority epoch it happened in: schedules
    #: may be enabled only after one in the current epoch.
    last_full_apply_at: Mapped[datetime | None]
    last_full_apply_epoch: Mapped[int | None]
    #: Visibility: what each side was when last checked, and the operator's confirmation
    #: (a hash over both ids, the direction and the visibilities) when the standby is the
    #: more public side.
    a_visibility: Mapped[str | None] = mapped_column(String(16))
    b_visibility: Mapped[str | None] = mapped_column(String(16))
    visibility_confirmation: Mapped[str | None] = mapped_column(String(80))
    #: A webhook asked for a Run: it starts at this time (the end of the debounce window
    #: that folds a burst), or, while a Run is active, once that Run finishes. None: no
    #: Run is owed to a webhook.
    event_run_due_at: Mapped[datetime | None] = mapped_column(index=True)
    #: What the forge last said about reposync's access to a side (a GitHub App removed
    #: from the repository, a repository archived or deleted); None once access is back.
    access_notice: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    def side(self, side: Side) -> tuple[str, str, str, str | None]:
        """(provider, repository id, locator, connection id) of one side."""
        if side is Side.A:
            return self.a_provider, self.a_repository_id, self.a_locator, self.a_connection_id
        return self.b_provider, self.b_repository_id, self.b_locator, self.b_connection_id

    @property
    def authority(self) -> Side:
        return Side(self.authority_side)
