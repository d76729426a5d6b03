"""InventoryEntry: a Run's snapshot of one side's index, handed from inventory to planning.

Stages are separate tasks that may run on different workers, so the inventory lives in
the database between them. Rows are index data only (no payloads) and are deleted when
the Run finishes; the digests stay on the Run.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base


class InventoryEntry(Base):
    __tablename__ = "inventory_entries"
    __table_args__ = (
        UniqueConstraint(
            "run_id", "side", "object_type", "identity", name="uq_inventory_entries_identity"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    #: ``source`` or ``target`` (the Run's roles, not the Binding's sides).
    side: Mapped[str] = mapped_column(String(8))
    object_type: Mapped[str] = mapped_column(String(32))
    identity: Mapped[str] = mapped_column(String(1024))
    object_key: Mapped[str] = mapped_column(String(1024))
    unique_key: Mapped[str | None] = mapped_column(String(1024))
    revision: Mapped[str] = mapped_column(String(255))
    content_hash: Mapped[str] = mapped_column(String(80))
    size: Mapped[int] = mapped_column(default=0)
    order_key: Mapped[str] = mapped_column(String(255), default="")
