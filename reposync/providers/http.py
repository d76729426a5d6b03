"""What the REST clients of the hosted forges (GitHub, Forgejo) share of HTTP: a URL's
origin (where credentials may go), a ``Link`` header's pages, a path as errors name it,
and a write sent once, under the stage's write guard, whose lost answer is
``ResultUnknown`` and never a retry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import requests

from reposync.errors import ResultUnknown
from reposync.guards import check_guard

_LINK = re.compile(r'<([^>]+)>;\s*rel="([a-z]+)"')


def origin(url: str) -> str:
    """``scheme://host:port`` with the default port spelt out, so two spellings of one
    origin compare equal."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def links(header: str) -> dict[str, str]:
    """A ``Link`` header's URLs by ``rel`` (``next``, ``last``, ...)."""
    return {rel: url for url, rel in _LINK.findall(header)}


def url_path(url: str) -> str:
    """The path of ``url``, without its origin or query: what a message may show."""
    return re.sub(r"^https?://[^/]+", "", url).split("?")[0]


def send_once(
    session: requests.Session,
    method: str,
    url: str,
    *,
    path: str,
    timeout: float,
    json_body: Any = None,
    data: Any = None,
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> requests.Response:
    """One write request, never repeated: a timeout or a dropped connection may come
    after the forge wrote, so it is ``ResultUnknown`` (the caller looks before sending
    again).

    The stage's write guard (``reposync.guards``: its lease, a cancel) is asked last,
    right before the request goes: after any pacing wait, so that a process that lost
    its lease while it waited sends nothing. What remains is the moment between this
    check and the bytes leaving: a process frozen exactly there, and continued after
    another took its Run over, still sends this one request (no forge offers a create
    fenced by our lease), which may duplicate what the takeover wrote.
    """
    check_guard()
    try:
        return session.request(
            method,
            url,
            json=json_body,
            data=data,
            params=params,
            headers=headers,
            timeout=timeout,
        )
    except (requests.Timeout, requests.ConnectionError) as exc:
        raise ResultUnknown(f"{method} {path}: no response ({type(exc).__name__})") from exc
