"""The shared write budget: sliding windows, exact retry times, no overrun under races."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from reposync.service.budgets import DatabaseWriteBudget

T0 = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


def test_a_sliding_minute_never_holds_more_than_the_limit(sqlite_db):
    """80 writes at 12:00:30 fill the minute; the next one may go at 12:01:30, not 12:01."""
    budget = DatabaseWriteBudget(sqlite_db, limits=((60, 80), (3600, 500)))
    at = T0 + timedelta(seconds=30)
    assert all(budget.reserve("acct", at) is None for _ in range(80))
    assert budget.reserve("acct", T0 + timedelta(seconds=61)) == at + timedelta(seconds=60)
    assert budget.reserve("acct", at + timedelta(seconds=60)) is None


def test_the_hour_limit_holds_across_minutes(sqlite_db):
    """500 writes spread over 10 minutes: the hour is full until the first one is an hour old."""
    budget = DatabaseWriteBudget(sqlite_db, limits=((60, 80), (3600, 500)))
    for n in range(500):
        assert budget.reserve("acct", T0 + timedelta(seconds=n * 1.2)) is None
    assert budget.reserve("acct", T0 + timedelta(minutes=20)) == T0 + timedelta(hours=1)
    assert budget.reserve("other", T0 + timedelta(minutes=20)) is None  # per account


@pytest.mark.postgres
def test_workers_racing_for_one_account_never_overrun_it(pg_db):
    """Eight threads, 20 writes each at the same instant: exactly 80 are allowed."""
    budget = DatabaseWriteBudget(pg_db, limits=((60, 80), (3600, 500)))
    allowed: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        for _ in range(20):
            ok = budget.reserve("github:installation:1", T0) is None
            with lock:
                allowed.append(ok)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert allowed.count(True) == 80
