"""GitHub's rate limits: the primary hourly quota and the content-creation secondary limit.

Primary: each quota (a user's, shared by all their personal tokens, or an installation's)
has a fixed one-hour window that starts with its first counted request; ``reset`` is that
window's end. Secondary: content-creating requests per token owner, at most
``per_minute`` in any 60 s and ``per_hour`` in any 3600 s (sliding windows). All times
come from the fake's clock, so ``retry-after`` is in fake seconds.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tests.fakes.forge_server.clock import Clock

WINDOW = timedelta(hours=1)


@dataclass
class Quota:
    limit: int
    used: int = 0
    window_end: datetime | None = None

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)


@dataclass(frozen=True)
class Snapshot:
    limit: int
    remaining: int
    used: int
    reset: int  # epoch seconds

    def headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-reset": str(self.reset),
            "x-ratelimit-resource": "core",
        }


@dataclass
class SecondaryLimits:
    enabled: bool = True
    per_minute: int = 80
    per_hour: int = 500
    status: int = 403  # GitHub answers 403 or 429


@dataclass
class RateLimiter:
    clock: Clock
    primary_limit: int = 5000
    secondary: SecondaryLimits = field(default_factory=SecondaryLimits)
    limits_by_key: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._quotas: dict[str, Quota] = {}
        self._creations: dict[str, deque[datetime]] = {}
        self._lock = threading.Lock()

    def set_limit(self, key: str, limit: int) -> None:
        """Give one quota (``user:<login>`` or ``installation:<id>``) its own limit."""
        with self._lock:
            self.limits_by_key[key] = limit
            if key in self._quotas:
                self._quotas[key].limit = limit

    def _quota(self, key: str, now: datetime) -> Quota:
        quota = self._quotas.get(key)
        if quota is None:
            quota = Quota(limit=self.limits_by_key.get(key, self.primary_limit))
            self._quotas[key] = quota
        if quota.window_end is not None and now >= quota.window_end:
            quota.used, quota.window_end = 0, None
        return quota

    def snapshot(self, key: str) -> Snapshot:
        now = self.clock()
        with self._lock:
            quota = self._quota(key, now)
            end = quota.window_end or now + WINDOW
            return Snapshot(quota.limit, quota.remaining, quota.used, math.ceil(end.timestamp()))

    def exhausted(self, key: str) -> bool:
        now = self.clock()
        with self._lock:
            return self._quota(key, now).remaining <= 0

    def spend(self, key: str) -> None:
        now = self.clock()
        with self._lock:
            quota = self._quota(key, now)
            if quota.window_end is None:
                quota.window_end = now + WINDOW
            quota.used += 1

    def secondary_retry_after(self, owner: str) -> int | None:
        """Seconds to wait if ``owner`` may not create content now, else None."""
        if not self.secondary.enabled:
            return None
        now = self.clock()
        with self._lock:
            stamps = self._creations.setdefault(owner, deque())
            while stamps and now - stamps[0] >= WINDOW:
                stamps.popleft()
            waits = []
            minute = [t for t in stamps if now - t < timedelta(minutes=1)]
            if len(minute) >= self.secondary.per_minute:
                waits.append((minute[0] + timedelta(minutes=1) - now).total_seconds())
            if len(stamps) >= self.secondary.per_hour:
                waits.append((stamps[0] + WINDOW - now).total_seconds())
            if not waits:
                return None
            return max(1, math.ceil(max(waits)))

    def record_creation(self, owner: str) -> None:
        now = self.clock()
        with self._lock:
            self._creations.setdefault(owner, deque()).append(now)
