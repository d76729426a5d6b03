"""The write budget, persisted: fixed windows per account, counted under a row lock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from reposync.models import WriteBudgetWindow
from reposync.models.db import Database

#: GitHub's content-creation limits (../shared/notes/github-api.md §2).
DEFAULT_LIMITS: tuple[tuple[int, int], ...] = ((60, 80), (3600, 500))


class DatabaseWriteBudget:
    """``WriteBudget`` for providers; windows are aligned, so every worker agrees on them."""

    def __init__(self, db: Database, limits: Sequence[tuple[int, int]] = DEFAULT_LIMITS) -> None:
        self._db = db
        self._limits = tuple(limits)

    def reserve(self, key: str, now: datetime) -> datetime | None:
        for _ in range(2):  # a concurrent first writer may create the window rows first
            try:
                return self._reserve(key, now)
            except IntegrityError:
                continue
        return self._reserve(key, now)

    def _reserve(self, key: str, now: datetime) -> datetime | None:
        with self._db.transaction() as session:
            windows = []
            for seconds, limit in self._limits:
                start = _window_start(now, seconds)
                row = session.execute(
                    select(WriteBudgetWindow)
                    .where(
                        WriteBudgetWindow.account == key,
                        WriteBudgetWindow.window_seconds == seconds,
                    )
                    .with_for_update()
                ).scalar_one_or_none()
                if row is None:
                    row = WriteBudgetWindow(
                        account=key, window_seconds=seconds, window_start=start, used=0
                    )
                    session.add(row)
                    session.flush()
                elif row.window_start != start:
                    row.window_start, row.used = start, 0
                if row.used >= limit:
                    return start + timedelta(seconds=seconds)
                windows.append(row)
            for row in windows:
                row.used += 1
            return None


def _window_start(now: datetime, seconds: int) -> datetime:
    epoch = int(now.timestamp())
    return datetime.fromtimestamp(epoch - epoch % seconds, tz=now.tzinfo)
