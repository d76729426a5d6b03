"""How many Server-Sent Event streams an API process holds, and per user.

A stream holds one of the server's request threads for up to ``REPOSYNC_SSE_MAX_SECONDS``:
50 streams on one Run once took every thread, and ``/health`` waited 23 s. Each process
therefore keeps threads for the rest of the API (``max_streams`` below its thread count)
and a user may hold ``max_per_user`` streams; beyond either, 429 with ``Retry-After``
(the stream's own ``retry`` advice), never a queued request.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from werkzeug.exceptions import TooManyRequests

#: What a refused client is told to wait (a stream of another user ends within 25 s).
RETRY_AFTER_SECONDS = 5


class StreamSlots:
    def __init__(self, max_streams: int, max_per_user: int) -> None:
        self.max_streams = max_streams
        self.max_per_user = max_per_user
        self._lock = threading.Lock()
        self._held: Counter[int] = Counter()

    @property
    def open(self) -> int:
        with self._lock:
            return sum(self._held.values())

    def take(self, user_id: int) -> None:
        """Take a slot for ``user_id`` or raise 429 (``release`` gives it back)."""
        with self._lock:
            if self._held[user_id] >= self.max_per_user:
                raise _too_many(
                    f"you have {self.max_per_user} event streams open; close one, or list "
                    "the events (Accept: application/json)"
                )
            if sum(self._held.values()) >= self.max_streams:
                raise _too_many("this server holds as many event streams as it may; retry soon")
            self._held[user_id] += 1

    def release(self, user_id: int) -> None:
        with self._lock:
            self._held[user_id] -= 1
            if self._held[user_id] <= 0:
                del self._held[user_id]

    @contextmanager
    def held(self, user_id: int) -> Iterator[None]:
        self.take(user_id)
        try:
            yield
        finally:
            self.release(user_id)


def _too_many(detail: str) -> TooManyRequests:
    return TooManyRequests(detail, retry_after=RETRY_AFTER_SECONDS)
