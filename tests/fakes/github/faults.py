"""Injected failures, chosen per request by method and path regex.

Kinds:

* ``latency``: sleep ``seconds`` (real time), then answer normally.
* ``error``: answer ``status`` (500/502/503) without doing anything; with
  ``retry_after``, a ``Retry-After`` header of that many seconds (a 429 that lifts soon).
* ``commit_then_drop``: do the work, then answer 502 (``drop="502"``) or close the
  connection without any response (``drop="close"``): the client cannot know it happened.
* ``timeout``: do the work, then sleep ``seconds`` before answering (longer than the
  client's timeout, so it gives up while the write has happened).

A rule fires ``count`` times (None: always) with ``probability`` (seeded, reproducible),
once the first ``after`` requests it matches have passed it by; the first rule that
matches a request and fires is used.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FaultRule:
    kind: str
    method: str  # "*" for any
    path: re.Pattern[str]
    host: str | None = None  # "api", "uploads", "git" or None for any
    count: int | None = 1
    probability: float = 1.0
    seconds: float = 0.0
    status: int = 502
    drop: str = "502"  # commit_then_drop: "502" or "close"
    retry_after: int | None = None
    seed: int | None = 0
    #: Matching requests the rule lets pass before it may fire (to strike the Nth write).
    after: int = 0
    hits: int = 0
    passed: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def answer_headers(self) -> list[tuple[str, str]]:
        """The headers of an ``error`` answer."""
        return [] if self.retry_after is None else [("Retry-After", str(self.retry_after))]

    def matches(self, host: str, method: str, path: str) -> bool:
        if self.count is not None and self.hits >= self.count:
            return False
        if self.host is not None and self.host != host:
            return False
        if self.method != "*" and self.method != method.upper():
            return False
        return bool(self.path.search(path))


class Faults:
    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def add(
        self,
        kind: str,
        method: str = "*",
        path: str = "",
        *,
        host: str | None = None,
        count: int | None = 1,
        probability: float = 1.0,
        seed: int | None = 0,
        seconds: float = 0.0,
        status: int = 502,
        drop: str = "502",
        after: int = 0,
        retry_after: int | None = None,
    ) -> FaultRule:
        if kind not in ("latency", "error", "commit_then_drop", "timeout"):
            raise ValueError(f"unknown fault kind {kind!r}")
        if drop not in ("502", "close"):
            raise ValueError("drop is '502' or 'close'")
        rule = FaultRule(
            kind=kind,
            method=method.upper(),
            path=re.compile(path),
            host=host,
            count=count,
            probability=probability,
            seconds=seconds,
            status=status,
            drop=drop,
            seed=seed,
            after=after,
            retry_after=retry_after,
        )
        with self._lock:
            self._rules.append(rule)
        return rule

    # Shorthands; ``where`` takes add()'s selectors (host, count, probability, seed).

    def latency(self, method: str, path: str, seconds: float, **where: Any) -> FaultRule:
        return self.add("latency", method, path, seconds=seconds, **where)

    def error(self, method: str, path: str, status: int = 502, **where: Any) -> FaultRule:
        return self.add("error", method, path, status=status, **where)

    def commit_then_drop(
        self, method: str, path: str, drop: str = "502", **where: Any
    ) -> FaultRule:
        return self.add("commit_then_drop", method, path, drop=drop, **where)

    def timeout(self, method: str, path: str, seconds: float, **where: Any) -> FaultRule:
        return self.add("timeout", method, path, seconds=seconds, **where)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def pick(self, host: str, method: str, path: str) -> FaultRule | None:
        """The rule that fires for this request (its ``hits`` is counted), if any."""
        with self._lock:
            for rule in self._rules:
                if not rule.matches(host, method, path):
                    continue
                if rule.passed < rule.after:
                    rule.passed += 1
                    continue
                if rule.rng.random() < rule.probability:
                    rule.hits += 1
                    return rule
        return None
