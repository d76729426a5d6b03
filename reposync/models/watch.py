"""BranchWatch: one user's watch on one branch of one repository, with its revision cursor.

The cursor (``before -> after``, ``moved_at`` at the forge, ``observed_at`` here) only
moves forward (``reposync.sync.cursors``); ``tied`` holds the movements seen at
``moved_at`` so that same-instant movements are ordered by their chain.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, JSONType, utcnow


class BranchWatch(Base):
    __tablename__ = "branch_watches"
    __table_args__ = (
        UniqueConstraint(
            "created_by", "provider", "repository_id", "branch", name="uq_branch_watches_watch"
        ),
        # A push names a repository and its refs: the watches it moves, found at once.
        Index("ix_branch_watches_repository", "provider", "repository_id", "branch"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    #: Like a Binding's side: the immutable repository id, and the locator it was named by.
    provider: Mapped[str] = mapped_column(String(32))
    repository_id: Mapped[str] = mapped_column(String(255))
    locator: Mapped[str] = mapped_column(String(1024))
    #: The branch's short name (``main`` watches ``refs/heads/main``); 255 characters at
    #: most, so the unique key stays within every database's index entry limit.
    branch: Mapped[str] = mapped_column(String(255))
    created_by: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    # The revision cursor: empty until the first movement is observed.
    before: Mapped[str | None] = mapped_column(String(64))
    after: Mapped[str | None] = mapped_column(String(64))
    moved_at: Mapped[datetime | None]
    observed_at: Mapped[datetime | None]
    #: Same-instant movements seen at ``moved_at``: ``[[before, after], ...]``.
    tied: Mapped[list[Any]] = mapped_column(JSONType, default=list)
    #: Movements the cursor took since the watch was made.
    movements: Mapped[int] = mapped_column(default=0)
