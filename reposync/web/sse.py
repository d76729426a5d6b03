"""Server-Sent Events of a Run: its events as they are appended, for a bounded time.

The stream polls the service layer (``run_events``) every ``poll`` seconds, sends each
event with ``id: <seq>`` so a reconnecting client resumes with ``Last-Event-ID``, and ends
with an ``end`` event once the Run is terminal, or quietly after ``max_seconds`` (the
client reconnects): neither tests nor proxies ever hold an endless request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from reposync.errors import ReposyncError
from reposync.models import User
from reposync.service.context import ServiceContext
from reposync.service.queries import get_run_for, run_events
from reposync.web.schemas.common import MAX_PAGE
from reposync.web.schemas.events import RunEventSchema

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def message(data: Any, *, event: str | None = None, event_id: int | None = None) -> str:
    """One SSE message (``data`` is sent as JSON on a single line)."""
    lines = []
    if event is not None:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append("data: " + json.dumps(data, separators=(",", ":")))
    return "\n".join(lines) + "\n\n"


def event_stream(
    ctx: ServiceContext,
    user: User,
    run_id: int,
    after_seq: int,
    *,
    poll: float,
    max_seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    deadline = clock() + max_seconds
    schema = RunEventSchema()
    yield f"retry: {max(int(poll * 1000), 100)}\n\n"
    while True:
        try:
            # The status first: events a terminal Run wrote are committed before it ended.
            run = get_run_for(ctx, user, run_id)
            events = run_events(ctx, user, run_id, after_seq=after_seq, limit=MAX_PAGE)
        except ReposyncError as exc:
            yield message({"code": exc.code, "detail": exc.message}, event="error")
            return
        for event in events:
            after_seq = event.seq
            yield message(schema.dump(event), event_id=event.seq)
        if len(events) == MAX_PAGE:  # more are waiting: never claim the end before them
            if clock() < deadline:
                continue
            return
        if not run.is_active:
            yield message({"run_id": run.id, "status": run.status}, event="end")
            return
        remaining = deadline - clock()
        if remaining <= 0:
            return
        sleep(min(poll, remaining))
        yield ": waiting\n\n"  # a comment: keeps proxies from timing the stream out
