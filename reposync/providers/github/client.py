"""HTTP to GitHub: conditional reads, pagination, rate limits, paced writes.

* Every read is conditional (``If-None-Match``): a 304 costs no primary quota, and the
  cached body is reused. ETags are per token on GitHub, so the cache key includes it.
* Lists follow the ``link`` header at ``per_page=100``; URLs are never built by hand.
* Idempotent requests are retried with backoff on 5xx and connection faults; writes
  never are: a write whose response is lost raises ``ResultUnknown``.
* Rate limits become ``RateLimited`` with ``retry_at``; content-creating writes are paced
  through the shared write budget (80/min, 500/h) before they are sent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests

from reposync import metrics
from reposync.errors import (
    Conflict,
    ObjectNotFound,
    PermissionDenied,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    ResultUnknown,
    UntrustedOrigin,
    WriteRefused,
)
from reposync.files import private_dir, write_private
from reposync.providers.base import Clock, WriteBudget
from reposync.providers.github.auth import TokenSource
from reposync.providers.http import links, origin, send_once, url_path

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"
PER_PAGE = 100
#: Pacing waits up to this long in place; a longer wait defers the Run instead.
MAX_PACE_WAIT = timedelta(seconds=90)


@dataclass(slots=True)
class ClientStats:
    requests: int = 0
    not_modified: int = 0
    writes: int = 0
    rate_limited: int = 0


@dataclass(slots=True)
class EtagCache:
    """ETag -> body, in memory and (optionally) on disk so the next Run gets 304s."""

    directory: Path | None = None
    _memory: dict[str, tuple[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: str) -> tuple[str, Any] | None:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return data["etag"], data["body"]

    def put(self, key: str, etag: str, body: Any) -> None:
        with self._lock:
            self._memory[key] = (etag, body)
        if self.directory is None:
            return
        path = self._path(key)
        private_dir(path.parent)
        write_private(path, json.dumps({"etag": etag, "body": body}))

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        digest = hashlib.sha256(key.encode()).hexdigest()
        return self.directory / digest[:2] / f"{digest}.json"


class GitHubClient:
    def __init__(
        self,
        api_url: str,
        tokens: TokenSource,
        *,
        clock: Clock,
        timeout: float,
        budget: WriteBudget | None = None,
        etags: EtagCache | None = None,
        session: requests.Session | None = None,
        write_interval: float = 1.0,
        trusted_urls: Sequence[str] = (),
    ) -> None:
        self.api_url = api_url.rstrip("/")
        #: The only hosts that get the token (API, uploads, Git): a URL a response names
        #: (``Link: next``, an asset's download URL) elsewhere is refused, never followed.
        self.trusted_origins = frozenset(origin(url) for url in (api_url, *trusted_urls))
        self.tokens = tokens
        self.clock = clock
        self.timeout = timeout
        self.budget = budget
        self.etags = etags or EtagCache()
        self.session = session or requests.Session()
        self.write_interval = write_interval
        self.stats = ClientStats()
        self._last_write: datetime | None = None

    # -- reads --------------------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._get(self._url(path), params)[0]

    def paginate(
        self, path: str, params: Mapping[str, Any] | None = None, *, key: str = "items"
    ) -> Iterator[Any]:
        """Every item of a list, page by page (``link: rel="next"``); an object's list is
        under ``key`` (``/user/installations`` pages ``installations``)."""
        url: str | None = self._url(path)
        query: dict[str, Any] | None = {"per_page": PER_PAGE, **(params or {})}
        while url is not None:
            body, headers = self._get(url, query)
            items = body if isinstance(body, list) else body.get(key, [])
            yield from items
            url = links(headers.get("link", "")).get("next")
            query = None  # the next URL carries every parameter

    def _get(self, url: str, params: Mapping[str, Any] | None) -> tuple[Any, Mapping[str, str]]:
        self.check_origin(url)  # a next page is a URL GitHub named
        prepared = requests.Request("GET", url, params=params).prepare()
        token = self.tokens.token()
        key = f"{hashlib.sha256(token.encode()).hexdigest()[:16]} {prepared.url}"
        cached = self.etags.get(key)
        headers = self._headers(token)
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        response = self._send("GET", prepared.url or url, headers=headers, idempotent=True)
        if response.status_code == 304 and cached is not None:
            self.stats.not_modified += 1
            return cached[1], response.headers
        self._raise_for(response, "GET", prepared.url or url)
        body = response.json() if response.content else None
        etag = response.headers.get("etag")
        if etag:
            self.etags.put(key, etag, body)
        return body, response.headers

    # -- writes -------------------------------------------------------------------------

    def write(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        creates_content: bool = True,
    ) -> Any:
        """One write. Raises ``WriteRefused`` (4xx), ``RateLimited`` (nothing written),
        ``ResultUnknown`` (sent; the outcome was not observed)."""
        if creates_content:
            self._pace()
        url = self._url(path)
        request_headers = self._headers(self.tokens.token())
        request_headers.update(headers or {})
        try:
            response = send_once(
                self.session,
                method,
                url,
                path=path,
                timeout=self.timeout,
                json_body=json_body,
                data=data,
                params=params,
                headers=request_headers,
            )
        finally:
            self.stats.requests += 1
            self.stats.writes += 1
            self._last_write = self.clock.now()
        self._observe_quota(response)
        if response.status_code in (500, 502, 503, 504):
            raise ResultUnknown(
                f"{method} {path} answered {response.status_code}; the write may have happened"
            )
        self._raise_for(response, method, url)
        return response.json() if response.content else None

    def _pace(self) -> None:
        """Wait for the shared write budget (and GitHub's one-second spacing)."""
        if self._last_write is not None and self.write_interval > 0:
            spacing = (
                self._last_write + timedelta(seconds=self.write_interval) - self.clock.now()
            ).total_seconds()
            if spacing > 0:
                self.clock.sleep(spacing)
        if self.budget is None:
            return
        while True:
            now = self.clock.now()
            retry_at = self.budget.reserve(self.tokens.account, now)
            if retry_at is None:
                return
            if retry_at - now > MAX_PACE_WAIT:
                raise RateLimited(
                    f"the content-creation budget of {self.tokens.account} is used up",
                    retry_at=retry_at,
                )
            self.clock.sleep((retry_at - now).total_seconds())

    # -- plumbing -----------------------------------------------------------------------

    def _observe_quota(self, response: requests.Response) -> None:
        """GitHub's rate-limit headers, as the metrics' quota gauges."""
        remaining = response.headers.get("x-ratelimit-remaining")
        limit = response.headers.get("x-ratelimit-limit")
        if remaining is None or limit is None or not (remaining.isdigit() and limit.isdigit()):
            return
        resource = response.headers.get("x-ratelimit-resource", "core")
        metrics.record_github_rate_limit(self.tokens.account, resource, int(remaining), int(limit))

    def _url(self, path: str) -> str:
        if not path.startswith(("http://", "https://")):
            return self.api_url + path
        self.check_origin(path)
        return path

    def check_origin(self, url: str) -> None:
        """Credentials go only to the configured GitHub hosts."""
        if origin(url) not in self.trusted_origins:
            raise UntrustedOrigin(
                f"GitHub named {origin(url)}, which is none of the configured GitHub hosts "
                f"({', '.join(sorted(self.trusted_origins))}); reposync does not send it "
                "the credentials"
            )

    def _headers(self, token: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "reposync",
        }

    def _send(
        self, method: str, url: str, *, headers: dict[str, str], idempotent: bool
    ) -> requests.Response:
        delay = 0.5
        for attempt in range(4):
            try:
                response = self.session.request(method, url, headers=headers, timeout=self.timeout)
            except (requests.Timeout, requests.ConnectionError) as exc:
                if not idempotent or attempt == 3:
                    raise ProviderUnavailable(
                        f"GitHub did not answer {method} {url}: {type(exc).__name__}"
                    ) from exc
            else:
                self.stats.requests += 1
                self._observe_quota(response)
                if response.status_code == 401 and attempt == 0:
                    self.tokens.invalidate()  # an expired installation token: fetch anew
                    headers = {**headers, **self._headers(self.tokens.token())}
                    continue
                if response.status_code < 500 or not idempotent or attempt == 3:
                    return response
            self.clock.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _raise_for(self, response: requests.Response, method: str, url: str) -> None:
        status = response.status_code
        if status < 400:
            return
        message = _message(response)
        if status in (403, 429) and _is_rate_limited(response, message):
            self.stats.rate_limited += 1
            raise RateLimited(f"GitHub rate limit: {message}", retry_at=self._retry_at(response))
        if status == 401:
            raise PermissionDenied(f"GitHub refused the credentials: {message}")
        if status == 403:
            raise PermissionDenied(f"GitHub refused {method} {url_path(url)}: {message}")
        if status == 404 and method == "GET":
            raise ObjectNotFound(f"{url_path(url)} does not exist on GitHub")
        if status == 409:
            raise Conflict(f"GitHub refused {method} {url_path(url)}: {message}")
        if status == 413:
            raise QuotaExceeded(f"GitHub refused {url_path(url)} as too large: {message}")
        if 400 <= status < 500:
            code = (
                "conflict"
                if _already_exists(response)
                else ("not_found" if status == 404 else "invalid")
            )
            raise WriteRefused(
                f"GitHub refused {method} {url_path(url)} ({status}): {message}",
                refusal=code,
                status=status,
            )
        raise ProviderUnavailable(f"GitHub answered {status} to {method} {url_path(url)}")

    def _retry_at(self, response: requests.Response) -> datetime:
        now = self.clock.now()
        retry_after = response.headers.get("retry-after")
        if retry_after and retry_after.isdigit():
            return now + timedelta(seconds=int(retry_after))
        if response.headers.get("x-ratelimit-remaining") == "0":
            reset = response.headers.get("x-ratelimit-reset", "")
            if reset.isdigit():
                return datetime.fromtimestamp(int(reset), tz=UTC)
        return now + timedelta(minutes=1)  # GitHub: wait at least one minute


def _message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason
    return str(body.get("message", "")) if isinstance(body, dict) else str(body)[:200]


def _is_rate_limited(response: requests.Response, message: str) -> bool:
    return (
        response.headers.get("x-ratelimit-remaining") == "0"
        or "rate limit" in message.lower()
        or "retry-after" in response.headers
    )


def _already_exists(response: requests.Response) -> bool:
    try:
        errors = response.json().get("errors") or []
    except (ValueError, AttributeError):
        return False
    return any(isinstance(e, dict) and e.get("code") == "already_exists" for e in errors)
