"""One record per request the fake answered, and the counters tests read from them."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class RequestRecord:
    at: datetime  # the fake clock when the request arrived
    host: str  # "api", "uploads" or "git" (Git smart HTTP and downloads)
    method: str
    path: str
    query: dict[str, str]
    status: int  # what was sent (the injected status for faults)
    token_owner: str | None  # login of the actor (a person or "<slug>[bot]")
    counted_primary: bool  # spent one request of the primary quota
    not_modified: bool  # a 304 answer to a conditional request
    content_creating: bool  # counted towards the secondary content-creation limit
    secondary_limited: bool  # refused by the secondary limit
    primary_limited: bool  # refused because the primary quota was exhausted
    fault: str | None = None  # kind of injected fault, if one fired
    #: Whose quota the credential spends: "installation:<id>" for an installation token
    #: (so a test tells which installation's token a request carried), "user:<login>".
    quota: str | None = None


@dataclass
class RequestLog:
    records: list[RequestRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self.records.append(record)

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self.records)

    def clear(self) -> None:
        with self._lock:
            self.records.clear()

    def __len__(self) -> int:
        return len(self.snapshot())

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(self.snapshot())

    def matching(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        host: str | None = None,
        status: int | None = None,
        owner: str | None = None,
    ) -> list[RequestRecord]:
        """Records by method, path regex (``re.search``), host, status and token owner."""
        pattern = re.compile(path) if path else None
        return [
            r
            for r in self.snapshot()
            if (method is None or r.method == method.upper())
            and (pattern is None or pattern.search(r.path))
            and (host is None or r.host == host)
            and (status is None or r.status == status)
            and (owner is None or r.token_owner == owner)
        ]

    def primary_count(self, owner: str | None = None) -> int:
        """Requests that spent primary quota."""
        return sum(1 for r in self.matching(owner=owner) if r.counted_primary)

    def not_modified_count(self, owner: str | None = None) -> int:
        return sum(1 for r in self.matching(owner=owner) if r.not_modified)

    def content_creating_count(self, owner: str | None = None) -> int:
        return sum(1 for r in self.matching(owner=owner) if r.content_creating)

    def secondary_limited_count(self, owner: str | None = None) -> int:
        return sum(1 for r in self.matching(owner=owner) if r.secondary_limited)

    def primary_limited_count(self, owner: str | None = None) -> int:
        return sum(1 for r in self.matching(owner=owner) if r.primary_limited)

    def faults_fired(self) -> list[RequestRecord]:
        return [r for r in self.snapshot() if r.fault is not None]
