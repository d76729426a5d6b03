"""What the REST clients of the hosted forges (GitHub, Forgejo) share of HTTP: a URL's
origin (where credentials may go), a ``Link`` header's pages, a path as errors name it,
and a write sent once, under the stage's write guard, whose lost answer is
``ResultUnknown`` and never a retry; an upload's body read under the same guard."""

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
    fenced by our lease), which may duplicate what the takeover wrote. An upload's body
    is read under the guard too (``guarded_body``).
    """
    check_guard()
    try:
        return session.request(
            method,
            url,
            json=json_body,
            data=guarded_body(data, headers),
            params=params,
            headers=headers,
            timeout=timeout,
        )
    except (requests.Timeout, requests.ConnectionError) as exc:
        raise ResultUnknown(f"{method} {path}: no response ({type(exc).__name__})") from exc


class GuardedBody:
    """An upload's body read under the stage's write guard (``reposync.guards``), asked
    before every read: an upload of gigabytes (a release asset, an LFS object) stops
    between two reads once its Run is cancelled or its lease lost, instead of finishing
    minutes later. The request is left unfinished: its connection is closed with fewer
    bytes sent than its ``Content-Length`` says, which a forge drops, and what is on the
    forge is read back, as after any stopped write. A process frozen mid-upload and
    continued after another took its Run over stops at its next read; before, it went
    on and completed an upload the takeover may have made too (Forgejo keeps two
    attachments of one name).

    Deliberately neither sized nor iterable: ``requests`` then sends it as the caller's
    ``Content-Length`` says (``guarded_body`` wraps only a body that has one), read in
    blocks, never as chunks; a bare stream of unknown size also got ``Transfer-Encoding:
    chunked`` beside that header, which HTTP forbids. The cost: ``requests`` rewinds only
    a stream it sized, so an upload answered with a 307 or 308 would be sent again empty
    and end ``ResultUnknown`` (read back, never assumed). No forge we write to redirects
    an upload: its URL comes from the forge's own answer just before."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        check_guard()
        data: bytes = self._stream.read(size)
        return data


def guarded_body(data: Any, headers: Mapping[str, str] | None) -> Any:
    """``data`` as a ``GuardedBody`` when it is a stream sent with a ``Content-Length``;
    anything else as it is."""
    sized = any(name.lower() == "content-length" for name in headers or {})
    return GuardedBody(data) if sized and hasattr(data, "read") else data
