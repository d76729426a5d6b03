"""Server-Sent Events framing and one client's stream over a Run's feed, without a database."""

from __future__ import annotations

import json
from types import SimpleNamespace

from reposync.web import sse
from reposync.web.feeds import RunFeed, RunFeeds
from tests.unit.web.test_feeds import ScriptedRun


def test_message_framing():
    """event, id and one-line JSON data, ended by a blank line."""
    text = sse.message({"a": [1, "x\ny"]}, event="end", event_id=7)
    assert text == 'event: end\nid: 7\ndata: {"a":[1,"x\\ny"]}\n\n'
    assert json.loads(text.splitlines()[2].removeprefix("data: ")) == {"a": [1, "x\ny"]}


class FakeClock:
    """Time that moves only when the test (or a database read) says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def event(seq: int) -> SimpleNamespace:
    return SimpleNamespace(
        seq=seq, type="t", stage="s", generation=None, counts={}, message="", created_at=None
    )


class Run(ScriptedRun):
    def __init__(self, events: int = 0, status: str = "running") -> None:
        super().__init__(events, status)
        self.events = [event(n) for n in range(1, events + 1)]
        self.gap_reads: list[int] = []

    def read_gap(self, run_id: int, after_seq: int) -> list[SimpleNamespace]:
        self.gap_reads.append(after_seq)
        return [e for e in self.events if e.seq > after_seq][:2]  # pages of two


def feeds_for(run: Run) -> RunFeeds:
    def make(run_id: int) -> RunFeed:
        return RunFeed(run_id, run, sse.encode_event, sse.end_message, sse.error_message, poll=0.01)

    return RunFeeds(make)


def stream(run: Run, after_seq: int = 0, *, max_seconds: float = 5.0, clock=None) -> list[str]:
    kwargs = {"clock": clock} if clock is not None else {}
    return list(
        sse.event_stream(
            feeds_for(run),
            run.read_gap,
            1,
            after_seq,
            poll=1.0,
            keepalive=0.02,
            max_seconds=max_seconds,
            **kwargs,
        )
    )


def ids(chunks: list[str]) -> list[int]:
    return [int(c.split("\n")[0].removeprefix("id: ")) for c in chunks if c.startswith("id:")]


def test_events_are_sent_once_in_order_after_the_cursor():
    """Events after after_seq go out with id = seq (the older ones read as the gap, in
    pages); a terminal Run ends the stream."""
    run = Run(events=5, status="completed")
    chunks = stream(run, after_seq=1)
    assert chunks[0] == "retry: 1000\n\n"
    assert ids(chunks) == [2, 3, 4, 5]
    assert run.gap_reads == [1, 3]  # two pages brought it to the feed's start
    assert chunks[-1] == sse.end_message(1, "completed")


def test_an_active_run_sends_keepalives_and_stops_quietly_when_time_is_up():
    run = Run(events=2)
    chunks = stream(run, after_seq=2, max_seconds=0.2)
    assert sse.KEEPALIVE in chunks
    assert ids(chunks) == []
    assert not any("event: end" in c for c in chunks)


def test_a_stream_ahead_of_the_feed_waits_for_it():
    """A Last-Event-ID beyond what exists (an old Run's, a typo): no gap read, no events
    it already has, and the end once the Run ends."""
    run = Run(events=3, status="completed")
    chunks = stream(run, after_seq=9)
    assert run.gap_reads == []
    assert ids(chunks) == []
    assert chunks[-1] == sse.end_message(1, "completed")


def test_a_run_that_disappears_ends_the_stream_with_an_error_event():
    run = Run()
    run.status_value = None
    chunks = stream(run)
    assert chunks[-1].startswith("event: error")
    assert '"code":"record_not_found"' in chunks[-1]


def test_time_running_out_mid_backlog_never_claims_the_end():
    """A finished Run with more events than one page: when time runs out between pages
    the stream stops quietly (the client resumes) instead of sending ``end`` early."""
    run = Run(events=6, status="completed")
    clock = FakeClock()
    read = run.read_gap

    def slow_gap(run_id: int, after_seq: int) -> list[SimpleNamespace]:
        clock.now += 2.0  # each page takes two seconds
        return read(run_id, after_seq)

    run.read_gap = slow_gap  # type: ignore[method-assign]
    chunks = stream(run, max_seconds=3.0, clock=clock)
    assert ids(chunks) == [1, 2, 3, 4]  # two pages within the time
    assert not any("event: end" in c for c in chunks)
