"""The shared write budget: sliding windows, exact retry times, no overrun under races."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from reposync.service.accounts.budgets import DatabaseWriteBudget, claiming

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


def ask_every_second(
    budget: DatabaseWriteBudget, claimants: list[str], seconds: range
) -> list[tuple[int, str]]:
    """Each claimant asks for one write each second; returns the grants, in order."""
    granted = []
    for t in seconds:
        for claimant in claimants:
            with claiming(claimant):
                if budget.reserve("acct", T0 + timedelta(seconds=t)) is None:
                    granted.append((t, claimant))
    return granted


def in_window(granted: list[tuple[int, str]], end: int, claimant: str) -> int:
    return sum(1 for t, who in granted if end - 60 < t <= end and who == claimant)


def test_a_lone_binding_may_use_the_whole_window(sqlite_db):
    """Nobody else asks: one Binding's writes fill the window, as without fair shares."""
    budget = DatabaseWriteBudget(sqlite_db, limits=((60, 10),))
    granted = ask_every_second(budget, ["binding:1"], range(12))
    assert [t for t, _ in granted] == list(range(10))


def test_the_window_one_binding_filled_is_shared_as_its_writes_leave(sqlite_db):
    """Binding 1 fills the account's window alone; binding 2 then asks too: the writes
    that leave the window go to binding 2 until both hold their share (half), and from
    then on every window holds five of each, never more for either."""
    budget = DatabaseWriteBudget(sqlite_db, limits=((60, 10),))
    first = ask_every_second(budget, ["binding:1"], range(10))
    assert len(first) == 10
    granted = first + ask_every_second(budget, ["binding:1", "binding:2"], range(10, 240))
    assert in_window(granted, 70, "binding:2") >= 4  # served first as the window frees
    for end in range(130, 240):
        assert in_window(granted, end, "binding:1") <= 5, end
        assert in_window(granted, end, "binding:2") <= 5, end
        assert in_window(granted, end, "binding:1") + in_window(granted, end, "binding:2") >= 9


def test_a_binding_that_stopped_asking_stops_taking_a_share(sqlite_db):
    """Once binding 2 has not asked for a minute, binding 1 may fill the window again."""
    budget = DatabaseWriteBudget(sqlite_db, limits=((60, 10),))
    ask_every_second(budget, ["binding:1", "binding:2"], range(60))
    alone = ask_every_second(budget, ["binding:1"], range(200, 260))
    assert in_window(alone, 259, "binding:1") == 10


def test_a_write_outside_any_run_counts_but_claims_no_share(sqlite_db):
    """Writes without a claimant fill the window as before; a Binding asking afterwards
    waits for the window like everyone."""
    budget = DatabaseWriteBudget(sqlite_db, limits=((60, 10),))
    assert all(budget.reserve("acct", T0) is None for _ in range(10))
    with claiming("binding:1"):
        assert budget.reserve("acct", T0 + timedelta(seconds=1)) == T0 + timedelta(seconds=60)
