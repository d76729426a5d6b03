"""Server-Sent Events framing and the stream's bounds, without a database."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from reposync.errors import RecordNotFound
from reposync.web import sse


def test_message_framing():
    """event, id and one-line JSON data, ended by a blank line."""
    text = sse.message({"a": [1, "x\ny"]}, event="end", event_id=7)
    assert text == 'event: end\nid: 7\ndata: {"a":[1,"x\\ny"]}\n\n'
    assert json.loads(text.splitlines()[2].removeprefix("data: ")) == {"a": [1, "x\ny"]}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def event(seq: int) -> SimpleNamespace:
    return SimpleNamespace(
        seq=seq, type="t", stage="s", generation=None, counts={}, message="", created_at=None
    )


@pytest.fixture
def service(monkeypatch):
    """A Run whose status and events the test scripts."""
    state = SimpleNamespace(active=True, events=[], calls=0)

    def get_run_for(ctx, user, run_id):
        state.calls += 1
        return SimpleNamespace(id=run_id, is_active=state.active, status="running")

    def run_events(ctx, user, run_id, *, after_seq, limit):
        return [e for e in state.events if e.seq > after_seq][:limit]

    monkeypatch.setattr(sse, "get_run_for", get_run_for)
    monkeypatch.setattr(sse, "run_events", run_events)
    return state


def stream(clock: FakeClock, after_seq: int = 0, max_seconds: float = 3.0) -> list[str]:
    return list(
        sse.event_stream(
            None,
            None,
            1,
            after_seq,
            poll=1.0,
            max_seconds=max_seconds,
            clock=clock,
            sleep=clock.sleep,
        )
    )


def test_an_active_run_is_polled_every_second_until_time_is_up(service):
    """No end event while active: the stream polls, then stops at max_seconds."""
    clock = FakeClock()
    chunks = stream(clock)
    assert clock.sleeps == [1.0, 1.0, 1.0]
    assert chunks[0] == "retry: 1000\n\n"
    assert chunks.count(": waiting\n\n") == 3
    assert not any("event: end" in c for c in chunks)


def test_events_are_sent_once_in_order_after_the_cursor(service):
    """Events after after_seq go out with id = seq; a terminal Run ends the stream."""
    service.events = [event(1), event(2), event(3)]
    service.active = False
    chunks = stream(FakeClock(), after_seq=1)
    ids = [c.split("\n")[0] for c in chunks if c.startswith("id:")]
    assert ids == ["id: 2", "id: 3"]
    assert chunks[-1].startswith("event: end")


def test_a_run_that_disappears_ends_the_stream_with_an_error_event(service, monkeypatch):
    """A Run deleted mid-stream: one error event with its code, then the end."""

    def gone(ctx, user, run_id):
        raise RecordNotFound("run 1 does not exist")

    monkeypatch.setattr(sse, "get_run_for", gone)
    chunks = stream(FakeClock())
    assert chunks[-1].startswith("event: error")
    assert '"code":"record_not_found"' in chunks[-1]


def test_time_running_out_mid_backlog_never_claims_the_end(service, monkeypatch):
    """A finished Run with more events than one page: when time runs out between pages
    the stream stops quietly (the client resumes) instead of sending ``end`` early."""
    monkeypatch.setattr(sse, "MAX_PAGE", 2)
    service.active = False
    service.events = [event(n) for n in range(1, 6)]
    clock = FakeClock()
    original = service.events

    def slow_events(ctx, user, run_id, *, after_seq, limit):
        clock.now += 2.0  # each page takes two seconds
        return [e for e in original if e.seq > after_seq][:limit]

    monkeypatch.setattr(sse, "run_events", slow_events)
    chunks = stream(clock, max_seconds=3.0)
    sent = [c for c in chunks if c.startswith("id: ")]
    assert len(sent) == 4  # two pages within the time
    assert not any("event: end" in c for c in chunks)
