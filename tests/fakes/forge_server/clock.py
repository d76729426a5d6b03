"""Clocks for the test servers: real UTC time, a hand-driven clock, and an accelerated one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


class ManualClock:
    """Stands still until a test moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when


class AcceleratedClock:
    """Runs ``scale`` times faster than real time (60: one real second is a fake minute).

    Clients that sign JWTs or honour ``retry-after``/``x-ratelimit-reset`` should read
    the same clock (``time()``/``sleep()``) so that hour-long windows pass quickly.
    """

    def __init__(self, scale: float, start: datetime | None = None) -> None:
        self.scale = scale
        self._start = start or system_clock()
        self._origin = time.monotonic()

    def __call__(self) -> datetime:
        elapsed = (time.monotonic() - self._origin) * self.scale
        return self._start + timedelta(seconds=elapsed)

    def time(self) -> float:
        return self().timestamp()

    def sleep(self, fake_seconds: float) -> None:
        time.sleep(max(fake_seconds, 0) / self.scale)


def accelerated_clock(scale: float, start: datetime | None = None) -> AcceleratedClock:
    return AcceleratedClock(scale, start)


def iso(when: datetime | None) -> str | None:
    """GitHub's timestamp format: ``2026-01-05T09:00:00Z`` (whole seconds, UTC)."""
    if when is None:
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """ISO 8601 as GitHub accepts it (``Z`` or an offset; a date alone means midnight UTC)."""
    value = text.strip().replace("Z", "+00:00").replace("z", "+00:00")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def whole_seconds(when: datetime) -> datetime:
    return when.astimezone(UTC).replace(microsecond=0)
