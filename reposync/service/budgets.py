"""The write budget, persisted: sliding windows per account, counted under a row lock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from reposync import metrics
from reposync.models import WriteBudgetAccount, WriteBudgetEvent
from reposync.models.db import Database

#: GitHub's content-creation limits (../shared/notes/github-api.md §2): (seconds, writes).
DEFAULT_LIMITS: tuple[tuple[int, int], ...] = ((60, 80), (3600, 500))


class DatabaseWriteBudget:
    """``WriteBudget`` for providers, shared by every worker of the deployment."""

    def __init__(self, db: Database, limits: Sequence[tuple[int, int]] = DEFAULT_LIMITS) -> None:
        self._db = db
        self._limits = tuple(limits)
        self._longest = timedelta(seconds=max(seconds for seconds, _ in self._limits))

    def reserve(self, key: str, now: datetime) -> datetime | None:
        """Count one write at ``now``, or say when the oldest write leaves a full window."""
        self._ensure_account(key)
        with self._db.transaction() as session:
            session.execute(  # the per-account mutex: counting and inserting never race
                select(WriteBudgetAccount.account)
                .where(WriteBudgetAccount.account == key)
                .with_for_update()
            ).scalar_one()
            session.execute(
                delete(WriteBudgetEvent).where(
                    WriteBudgetEvent.account == key, WriteBudgetEvent.at <= now - self._longest
                )
            )
            retry_at: datetime | None = None
            used_now: dict[int, tuple[int, int]] = {}
            for seconds, limit in self._limits:
                since = now - timedelta(seconds=seconds)
                used = session.execute(
                    select(func.count()).where(
                        WriteBudgetEvent.account == key, WriteBudgetEvent.at > since
                    )
                ).scalar_one()
                used_now[seconds] = (used, limit)
                if used >= limit:
                    oldest = session.execute(
                        select(WriteBudgetEvent.at)
                        .where(WriteBudgetEvent.account == key, WriteBudgetEvent.at > since)
                        .order_by(WriteBudgetEvent.at)
                        .offset(used - limit)
                        .limit(1)
                    ).scalar_one()
                    free_at = oldest + timedelta(seconds=seconds)
                    retry_at = free_at if retry_at is None else max(retry_at, free_at)
            if retry_at is None:
                session.add(WriteBudgetEvent(account=key, at=now))
                used_now = {window: (n + 1, cap) for window, (n, cap) in used_now.items()}
        metrics.record_write_budget(key, used_now, granted=retry_at is None)
        return retry_at

    def _ensure_account(self, key: str) -> None:
        with self._db.session() as session:
            if session.get(WriteBudgetAccount, key) is not None:
                return
        try:
            with self._db.transaction() as session:
                session.add(WriteBudgetAccount(account=key))
        except IntegrityError:
            pass  # another worker created it first
