"""A Run's shared event feed: one reader for every stream of the Run, without a database.

Issue 12 #4: each stream polled the database itself, so 200 streams were 200 queries a
second. These drive a feed step by step (``begin``/``step``) where order matters, and
with its thread where sharing does.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from reposync.errors import DatabaseUnavailable
from reposync.web.feeds import RunFeed, RunFeeds


class ScriptedRun:
    """A Run's status and events as the service would read them; counts the reads."""

    def __init__(self, events: int = 0, status: str = "running") -> None:
        self.events = [SimpleNamespace(seq=n) for n in range(1, events + 1)]
        self.status_value: str | None = status
        self.fail: Exception | None = None
        self.reads = {"last_seq": 0, "status": 0, "events_after": 0}
        self.page = 200

    def append(self, count: int = 1) -> None:
        start = len(self.events)
        self.events += [SimpleNamespace(seq=n) for n in range(start + 1, start + count + 1)]

    def last_seq(self, run_id: int) -> int:
        self.reads["last_seq"] += 1
        return self.events[-1].seq if self.events else 0

    def status(self, run_id: int) -> str | None:
        self.reads["status"] += 1
        if self.fail is not None:
            raise self.fail
        return self.status_value

    def events_after(self, run_id: int, after_seq: int) -> list[SimpleNamespace]:
        self.reads["events_after"] += 1
        return [e for e in self.events if e.seq > after_seq][: self.page]


def make_feed(run: ScriptedRun, *, window: int = 1000, poll: float = 0.01) -> RunFeed:
    return RunFeed(
        7,
        run,
        lambda e: f"event {e.seq}",
        lambda run_id, status: f"end {run_id} {status}",
        lambda code, detail: f"error {code}",
        poll=poll,
        window=window,
    )


def test_a_feed_starts_at_the_latest_event_and_older_ones_are_a_gap():
    run = ScriptedRun(events=5)
    feed = make_feed(run)
    feed.begin()
    behind = feed.wait(2, timeout=0)
    assert (behind.gap, behind.floor) == (True, 5)
    run.append(2)
    assert not feed.step()
    caught_up = feed.wait(5, timeout=0)
    assert caught_up.messages == [(6, "event 6"), (7, "event 7")]
    assert feed.wait(6, timeout=0).messages == [(7, "event 7")]


def test_a_window_that_overflows_sends_slow_streams_to_the_database():
    """The window keeps the newest messages; a stream older than its floor reads a gap."""
    run = ScriptedRun()
    run.page = 2  # several pages in one step, as a busy Run would
    feed = make_feed(run, window=3)
    feed.begin()
    run.append(5)
    feed.step()
    assert feed.wait(1, timeout=0).gap  # 2 left the window
    update = feed.wait(2, timeout=0)
    assert [seq for seq, _ in update.messages] == [3, 4, 5]


def test_a_terminal_run_ends_the_feed_after_its_last_events():
    run = ScriptedRun(events=1)
    feed = make_feed(run)
    feed.begin()
    run.append(2)
    run.status_value = "completed"
    assert feed.step()
    first = feed.wait(1, timeout=0)
    assert first.messages == [(2, "event 2"), (3, "event 3")]
    assert first.end is None
    assert feed.wait(3, timeout=0).end == "end 7 completed"


def test_a_run_that_disappears_ends_the_feed_with_an_error():
    run = ScriptedRun()
    run.status_value = None
    feed = make_feed(run)
    feed.begin()
    assert feed.step()
    assert feed.wait(0, timeout=0).end == "error record_not_found"
    assert not feed.failed  # final: the Run is gone, a new feed would say the same


def test_many_streams_of_a_run_share_one_feed_and_each_gets_every_event():
    run = ScriptedRun()
    feeds = RunFeeds(lambda run_id: make_feed(run))
    received: dict[int, list[int]] = {}
    subscribed = threading.Barrier(21)

    def stream(n: int) -> None:
        seen: list[int] = []
        with feeds.subscribed(7) as feed:
            subscribed.wait()
            after = 0
            while True:
                update = feed.wait(after, timeout=5)
                for seq, _ in update.messages:
                    seen.append(seq)
                    after = seq
                if update.end is not None:
                    break
        received[n] = seen

    threads = [threading.Thread(target=stream, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    subscribed.wait()
    assert feeds.active == 1
    run.append(30)
    run.status_value = "failed"
    for thread in threads:
        thread.join(10)
    assert received == {n: list(range(1, 31)) for n in range(20)}
    assert run.reads["last_seq"] == 1  # one feed was started, for twenty streams
    assert feeds.active == 0


def test_the_feed_stops_when_its_last_stream_leaves():
    run = ScriptedRun()
    made: list[RunFeed] = []

    def factory(run_id: int) -> RunFeed:
        made.append(make_feed(run))
        return made[-1]

    feeds = RunFeeds(factory)
    with feeds.subscribed(7):
        with feeds.subscribed(7):
            pass
        assert feeds.active == 1
    made[0].join(5)
    assert not made[0].alive  # nobody reads for a Run nobody follows
    assert feeds.active == 0


def test_a_failed_feed_is_replaced_for_the_next_stream():
    """A database outage ends the streams with an error; the next stream starts afresh."""
    run = ScriptedRun()
    run.fail = DatabaseUnavailable("the database is unreachable")
    made: list[RunFeed] = []

    def factory(run_id: int) -> RunFeed:
        made.append(make_feed(run))
        return made[-1]

    feeds = RunFeeds(factory)
    with feeds.subscribed(7) as broken:
        assert broken.wait(0, timeout=5).end == "error database_unavailable"
        assert broken.failed
        run.fail = None
        with feeds.subscribed(7) as fresh:
            assert fresh is not broken
            run.append()
            assert fresh.wait(0, timeout=5).messages == [(1, "event 1")]


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_every_terminal_status_ends_the_feed(status):
    run = ScriptedRun(status=status)
    feed = make_feed(run)
    feed.begin()
    assert feed.step()
    assert feed.wait(0, timeout=0).end == f"end 7 {status}"
