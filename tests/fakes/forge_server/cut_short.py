"""A client that goes away mid-body, as an upload stopped by its sender does: what both
test servers must drop whole (no asset, no attachment, no LFS object, no partial file).
``requests`` cannot send fewer bytes than a body's ``Content-Length``; a raw socket can."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit


def post_cut_short(url: str, token: str, *, declared: int, sent: int) -> None:
    """POST ``url`` (query included) with an octet-stream body said to be ``declared``
    bytes long, send ``sent`` of them, and hang up."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    head = (
        f"POST {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Authorization: token {token}\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {declared}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port)) as raw:
        raw.sendall(head.encode() + b"x" * sent)
