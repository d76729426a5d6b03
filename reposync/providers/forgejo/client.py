"""HTTP to one Forgejo (or Gitea) instance's REST API: paging, errors, acting as others.

* Lists are paged at the instance's own limit: ``limit`` is ``max_response_items`` of
  ``/settings/api`` (asked once per instance and process), pages follow ``Link: next``
  and ``X-Total-Count`` says how many there are. A count alone is read from a page past
  the last (``total``): its body is empty, its header is not.
* Forgejo sends no ``ETag`` on its JSON API and ignores ``If-None-Match`` there, so no
  request is conditional: what a Run does not need is not asked for (``reads``: listings
  narrowed by ``since``, counts instead of listings, the checkpoint planner).
* Idempotent requests are retried with backoff on 5xx and connection faults; writes
  never are: a write whose response is lost raises ``ResultUnknown``.
* Forgejo's error shapes (``{"message", "url"}``; 404's ``errors``) become the error
  tree: 401/403 ``PermissionDenied``, 404 ``ObjectNotFound`` on reads, a write's 4xx
  ``WriteRefused`` with its refusal (``not_found``, ``conflict`` for 409 and 405,
  ``invalid`` for 400 and 422), 413 ``QuotaExceeded``, 429 ``RateLimited`` (Forgejo has
  no rate limit of its own; a proxy in front of it may), 5xx ``ProviderUnavailable``.
* ``sudo`` names the account a request acts as (Forgejo's ``Sudo`` header): only a site
  administrator's token may, which the provider checks before it asks.
* The token goes to the instance's own origin only: a URL a response names elsewhere
  (``Link``, an attachment's download) is refused, never followed with it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, BinaryIO, cast

import requests

from reposync.errors import (
    Conflict,
    ObjectNotFound,
    PermissionDenied,
    ProviderError,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    ResultUnknown,
    UntrustedOrigin,
    WriteRefused,
)
from reposync.forge_instances import ForgejoInstance
from reposync.providers.base import Clock
from reposync.providers.http import links, origin, send_once, url_path

log = logging.getLogger(__name__)

#: Forgejo's own default of ``[api] MAX_RESPONSE_ITEMS``, until ``/settings/api`` says.
DEFAULT_LIMIT = 50
#: A page no listing reaches: its answer is empty, its ``X-Total-Count`` the listing's.
PAST_THE_END = 1_000_000_000
_LIMITS: dict[str, int] = {}
_LIMITS_LOCK = threading.Lock()


@dataclass(slots=True)
class ClientStats:
    """What a client asked for: requests, objects read, writes (the Run's ``io``)."""

    requests: int = 0
    objects: int = 0
    writes: int = 0


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing, with the headers that describe the listing."""

    items: list[Any]
    total: int | None
    next_url: str | None
    #: The instance's clock when it answered (its ``Date``), if it said.
    date: datetime | None


@dataclass(slots=True)
class Listing:
    """A listing read lazily; ``first`` is its first page once iteration began."""

    pages: Iterator[Page]
    first: Page | None = None

    def __iter__(self) -> Iterator[Any]:
        for page in self.pages:
            if self.first is None:
                self.first = page
            yield from page.items


class ForgejoClient:
    """The REST API of one instance, as one token (and, with ``sudo``, its users)."""

    def __init__(
        self,
        instance: ForgejoInstance,
        *,
        session: requests.Session,
        clock: Clock,
        timeout: float,
        forge: str = "Forgejo",
    ) -> None:
        self.instance = instance
        self.api_url = instance.api_url
        self.origin = origin(instance.url)
        self.session = session
        self.clock = clock
        self.timeout = timeout
        self.forge = forge
        self.stats = ClientStats()
        #: The instance's clock at its last answer (``Date``), for ``since`` windows.
        self.last_date: datetime | None = None

    # -- the instance -----------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Items per page: the instance's ``max_response_items`` (asked once per process)."""
        with _LIMITS_LOCK:
            known = _LIMITS.get(self.api_url)
        if known is not None:
            return known
        try:
            settings = self.get("/settings/api")
            value = int(settings.get("max_response_items") or DEFAULT_LIMIT)
        except (ProviderError, ValueError, TypeError, AttributeError):
            value = DEFAULT_LIMIT  # an instance that hides its settings: Forgejo's default
        value = max(1, value)
        with _LIMITS_LOCK:
            _LIMITS[self.api_url] = value
        return value

    # -- reads --------------------------------------------------------------------------

    def get(
        self, path: str, params: Mapping[str, Any] | None = None, *, sudo: str | None = None
    ) -> Any:
        """One object (or a list read whole). Raises ``ObjectNotFound`` for a 404."""
        response = self._read(self._url(path), params, sudo=sudo)
        body = response.json() if response.content else None
        self.stats.objects += len(body) if isinstance(body, list) else int(body is not None)
        return body

    def listing(self, path: str, params: Mapping[str, Any] | None = None) -> Listing:
        """Every item of a list, page by page at the instance's limit, read lazily."""
        return Listing(self._pages(path, params))

    def paginate(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Any]:
        return iter(self.listing(path, params))

    def total(self, path: str, params: Mapping[str, Any] | None = None) -> int:
        """How many items a listing has, from its ``X-Total-Count``, reading none of them
        (a page past the last one)."""
        query = {**(params or {}), "page": PAST_THE_END, "limit": 1}
        response = self._read(self._url(path), query)
        items = response.json() if response.content else []
        self.stats.objects += len(items) if isinstance(items, list) else 0
        count = response.headers.get("x-total-count", "")
        if not count.isdigit():
            raise ProviderError(
                f"{self.forge} answered {path} without X-Total-Count; cannot count it"
            )
        return int(count)

    def _pages(self, path: str, params: Mapping[str, Any] | None) -> Iterator[Page]:
        url: str | None = self._url(path)
        query: Mapping[str, Any] | None = {"limit": self.limit, **(params or {})}
        while url is not None:
            response = self._read(url, query)
            body = response.json() if response.content else []
            items = body if isinstance(body, list) else []
            self.stats.objects += len(items)
            total = response.headers.get("x-total-count", "")
            next_url = links(response.headers.get("link", "")).get("next")
            yield Page(items, int(total) if total.isdigit() else None, next_url, _date(response))
            if not items:
                return  # an empty page ends a listing whatever its links say
            url, query = next_url, None  # the next URL carries every parameter

    def download(self, url: str) -> BinaryIO:
        """The bytes at ``url`` on this instance (an attachment's), as a stream."""
        self.check_origin(url)
        try:
            response = self.session.get(
                url, headers=self._headers(), stream=True, timeout=self.timeout
            )
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise ProviderUnavailable(
                f"{self.forge} did not answer GET {url_path(url)}: {type(exc).__name__}"
            ) from exc
        self.stats.requests += 1
        if response.status_code == 404:
            raise ObjectNotFound(f"{url_path(url)} does not exist on {self.forge}")
        self._raise_for(response, "GET", url)
        response.raw.decode_content = True
        return cast(BinaryIO, response.raw)

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
        sudo: str | None = None,
    ) -> Any:
        """One write, sent once. Raises ``WriteRefused`` (4xx), ``RateLimited`` (nothing
        written), ``ResultUnknown`` (sent; the outcome was not observed)."""
        url = self._url(path)
        request_headers = self._headers(sudo)
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
        if response.status_code in (500, 502, 503, 504):
            raise ResultUnknown(
                f"{method} {path} answered {response.status_code}; the write may have happened"
            )
        self._raise_for(response, method, url)
        self.last_date = _date(response) or self.last_date
        return response.json() if response.content else None

    # -- plumbing -----------------------------------------------------------------------

    def _url(self, path: str) -> str:
        if not path.startswith(("http://", "https://")):
            return self.api_url + path
        self.check_origin(path)
        return path

    def check_origin(self, url: str) -> None:
        """Credentials go only to the instance's own origin."""
        if origin(url) != self.origin:
            raise UntrustedOrigin(
                f"{self.forge} named {origin(url)}, which is not {self.instance.name} "
                f"({self.origin}); reposync does not send it the token"
            )

    def _headers(self, sudo: str | None = None) -> dict[str, str]:
        headers = {
            "Authorization": f"token {self.instance.token}",
            "Accept": "application/json",
            "User-Agent": "reposync",
        }
        if sudo:
            headers["Sudo"] = sudo
        return headers

    def _read(
        self, url: str, params: Mapping[str, Any] | None, *, sudo: str | None = None
    ) -> requests.Response:
        """A GET, retried with backoff on 5xx and connection faults."""
        self.check_origin(url)
        delay = 0.5
        for attempt in range(4):
            try:
                response = self.session.get(
                    url, params=params, headers=self._headers(sudo), timeout=self.timeout
                )
            except (requests.Timeout, requests.ConnectionError) as exc:
                if attempt == 3:
                    raise ProviderUnavailable(
                        f"{self.forge} did not answer GET {url_path(url)}: {type(exc).__name__}"
                    ) from exc
            else:
                self.stats.requests += 1
                if response.status_code < 500 or attempt == 3:
                    self._raise_for(response, "GET", url)
                    self.last_date = _date(response) or self.last_date
                    return response
            self.clock.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _raise_for(self, response: requests.Response, method: str, url: str) -> None:
        status = response.status_code
        if status < 400:
            return
        forge, where = self.forge, f"{method} {url_path(url)}"
        message = _message(response)
        if status == 429:
            raise RateLimited(
                f"{forge} (or a proxy before it) is limiting requests: {message}",
                retry_at=self._retry_at(response),
            )
        if status == 401:
            raise PermissionDenied(f"{forge} refused the token of {self.instance.name}: {message}")
        if status == 403:
            raise PermissionDenied(f"{forge} refused {where}: {message}")
        if status == 413:
            raise QuotaExceeded(f"{forge} refused {where} as too large: {message}")
        if method == "GET":
            if status == 404:
                raise ObjectNotFound(f"{url_path(url)} does not exist on {forge}")
            if status == 409:
                raise Conflict(f"{forge} refused {where}: {message}")
            if status < 500:
                raise ProviderError(f"{forge} refused {where} ({status}): {message}")
        elif status < 500:
            refusal = {404: "not_found", 405: "conflict", 409: "conflict"}.get(status, "invalid")
            raise WriteRefused(
                f"{forge} refused {where} ({status}): {message}", refusal=refusal, status=status
            )
        raise ProviderUnavailable(f"{forge} answered {status} to {where}")

    def _retry_at(self, response: requests.Response) -> datetime:
        retry_after = response.headers.get("retry-after", "")
        seconds = int(retry_after) if retry_after.isdigit() else 60
        return self.clock.now() + timedelta(seconds=seconds)


def _date(response: requests.Response) -> datetime | None:
    value = response.headers.get("date")
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None


def _message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason
    if isinstance(body, dict):
        message = str(body.get("message") or "")
        errors = body.get("errors")
        if isinstance(errors, list) and errors:
            message = f"{message} ({'; '.join(str(e) for e in errors)})".strip()
        return message
    return str(body)[:200]
