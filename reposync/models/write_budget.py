"""WriteBudgetWindow: content-creating writes counted per account and time window.

Shared by every worker through the database, so three workers writing to one GitHub
installation still stay under its 80 per minute and 500 per hour.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base


class WriteBudgetWindow(Base):
    __tablename__ = "write_budget_windows"
    __table_args__ = (
        UniqueConstraint("account", "window_seconds", name="uq_write_budget_windows_account"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    #: The account the forge counts writes against (``github:installation:42``).
    account: Mapped[str] = mapped_column(String(255))
    window_seconds: Mapped[int]
    window_start: Mapped[datetime]
    used: Mapped[int] = mapped_column(default=0)
