"""RunItem: the durable intent for one object; the unit of audit, idempotency and recovery."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, utcnow
from reposync.sync.vocabulary import ItemState


class RunItem(Base):
    __tablename__ = "run_items"
    __table_args__ = (
        # The applying stage (the lowest batch with planned items, one batch's items) and
        # progress counts by state. One index only: every item moves through four states,
        # and each move rewrites every index that contains ``state``.
        Index("ix_run_items_run_id_state_batch_no", "run_id", "state", "batch_no"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    phase: Mapped[int]
    object_type: Mapped[str] = mapped_column(String(32))
    object_key: Mapped[str] = mapped_column(String(1024))
    action: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16), default=ItemState.PLANNED.value)
    batch_no: Mapped[int | None]

    source_identity: Mapped[str | None] = mapped_column(String(1024))
    target_identity: Mapped[str | None] = mapped_column(String(1024))
    source_revision: Mapped[str | None] = mapped_column(String(255))
    desired_hash: Mapped[str | None] = mapped_column(String(80))
    expected_target_hash: Mapped[str | None] = mapped_column(String(80))
    #: The hash read-back must show on the target: the mapped payload's (it differs from
    #: ``desired_hash`` when the target shows a projection or rewritten references).
    verify_hash: Mapped[str | None] = mapped_column(String(80))
    representation: Mapped[str | None] = mapped_column(String(16))
    intent: Mapped[dict[str, Any]] = mapped_column(default=dict)

    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None]
    attempt_count: Mapped[int] = mapped_column(default=0)
    #: Generation of the execution that last moved this item (Kleppmann's token on the row).
    applied_generation: Mapped[int | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
