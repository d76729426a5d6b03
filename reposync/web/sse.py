"""Server-Sent Events of a Run: its events as they are appended, for a bounded time.

A stream waits on its Run's shared feed (``web/feeds.py``: one database reader per Run
per process, however many streams follow it), sends each event with ``id: <seq>`` so a
reconnecting client resumes with ``Last-Event-ID``, and ends with an ``end`` event once
the Run is terminal, or quietly after ``max_seconds`` (the client reconnects): neither
tests nor proxies ever hold an endless request. A comment every ``keepalive`` seconds
keeps proxies from timing a quiet stream out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from flask import Flask

from reposync.service.context import ServiceContext
from reposync.service.queries import events_after, last_event_seq, run_status
from reposync.web.feeds import RunFeed, RunFeeds
from reposync.web.schemas.common import MAX_PAGE
from reposync.web.schemas.events import RunEventSchema

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
KEEPALIVE = ": waiting\n\n"


def message(data: Any, *, event: str | None = None, event_id: int | None = None) -> str:
    """One SSE message (``data`` is sent as JSON on a single line)."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append("data: " + json.dumps(data, separators=(",", ":")))
    return "\n".join(lines) + "\n\n"


class _ServiceEvents:
    """A feed's reads: the service's unchecked queries (each stream was authorized)."""

    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    def last_seq(self, run_id: int) -> int:
        return last_event_seq(self._ctx, run_id)

    def status(self, run_id: int) -> str | None:
        return run_status(self._ctx, run_id)

    def events_after(self, run_id: int, after_seq: int) -> Sequence[Any]:
        return events_after(self._ctx, run_id, after_seq=after_seq, limit=MAX_PAGE)


def encode_event(event: Any, schema: RunEventSchema = RunEventSchema()) -> str:  # noqa: B008
    return message(schema.dump(event), event_id=event.seq)


def end_message(run_id: int, status: str) -> str:
    return message({"run_id": run_id, "status": status}, event="end")


def error_message(code: str, detail: str) -> str:
    return message({"code": code, "detail": detail}, event="error")


def feeds_of(app: Flask, ctx: ServiceContext) -> RunFeeds:
    """The API process's feeds (made on the first stream)."""
    poll = app.config["REPOSYNC_SSE_POLL_SECONDS"]
    source = _ServiceEvents(ctx)

    def make_feed(run_id: int) -> RunFeed:
        return RunFeed(run_id, source, encode_event, end_message, error_message, poll=poll)

    feeds: RunFeeds = app.extensions.setdefault("reposync.feeds", RunFeeds(make_feed))
    return feeds


def event_stream(
    feeds: RunFeeds,
    read_gap: Callable[[int, int], Sequence[Any]],
    run_id: int,
    after_seq: int,
    *,
    poll: float,
    keepalive: float,
    max_seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[str]:
    """The stream of one client; ``read_gap`` reads events its feed no longer holds."""
    deadline = clock() + max_seconds
    yield f"retry: {max(int(poll * 1000), 100)}\n\n"
    with feeds.subscribed(run_id) as feed:
        while (remaining := deadline - clock()) > 0:
            update = feed.wait(after_seq, min(keepalive, remaining))
            if update.gap:
                behind = read_gap(run_id, after_seq)
                for event in behind:
                    after_seq = event.seq
                    yield encode_event(event)
                if behind:
                    continue
                after_seq = update.floor  # nothing stored in between: join the window
                continue
            for seq, text in update.messages:
                after_seq = seq
                yield text
            if update.end is not None:
                yield update.end
                return
            if not update.messages:
                yield KEEPALIVE
