"""The write budget: content-creating writes per forge account, over sliding windows.

Shared by every worker through the database, so three workers writing to one GitHub
installation still stay under its 80 per minute and 500 per hour, counted the way
GitHub counts them (any 60 s, any hour), not per clock minute. Each write names who
spent it (its claimant: a Binding), and the claimants asking lately are remembered, so
one account's budget is shared among its Bindings rather than spent by the first
(``service/accounts/budgets.py``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base


class WriteBudgetAccount(Base):
    """One row per account: locked while a write is counted, so counts never race."""

    __tablename__ = "write_budget_accounts"

    #: The account the forge counts writes against (``github:installation:42``).
    account: Mapped[str] = mapped_column(String(255), primary_key=True)


class WriteBudgetEvent(Base):
    """One counted write; rows older than the longest window are pruned."""

    __tablename__ = "write_budget_events"
    __table_args__ = (Index("ix_write_budget_events_account_at", "account", "at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    account: Mapped[str] = mapped_column(
        String(255), ForeignKey("write_budget_accounts.account", ondelete="CASCADE")
    )
    at: Mapped[datetime]
    #: Who spent it (``binding:12``); None: a write outside any Run's share.
    claimant: Mapped[str | None] = mapped_column(String(64))


class WriteBudgetClaimant(Base):
    """A claimant that asked the account's budget lately: the account's budget is shared
    among those asking now. Rows that stopped asking are pruned."""

    __tablename__ = "write_budget_claimants"

    account: Mapped[str] = mapped_column(
        String(255),
        ForeignKey("write_budget_accounts.account", ondelete="CASCADE"),
        primary_key=True,
    )
    claimant: Mapped[str] = mapped_column(String(64), primary_key=True)
    asked_at: Mapped[datetime]
