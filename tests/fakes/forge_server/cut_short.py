"""A client that stops sending mid-body, as an upload stopped by its sender does: what both
test servers must drop whole (no asset, no attachment, no LFS object, no partial file).
``requests`` cannot send fewer bytes than a body's ``Content-Length``; a raw socket can."""

from __future__ import annotations

import socket
from collections.abc import Callable
from urllib.parse import urlsplit


def send_cut_short(
    method: str,
    url: str,
    authorization: str,
    *,
    declared: int,
    sent: int,
    while_open: Callable[[], None] | None = None,
) -> str:
    """``method`` ``url`` (query included) with an octet-stream body said to be ``declared``
    bytes long, send ``sent`` of them and no more, and wait for the server to be done
    with it (its answer, or its closing the connection). Returns the answer's status
    line ("" when there was none). ``while_open`` is called once the bytes are sent and
    before the body ends: what a look at the server then shows, mid-upload."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    head = (
        f"{method} {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
        f"Authorization: {authorization}\r\nContent-Type: application/octet-stream\r\n"
        f"Content-Length: {declared}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as raw:
        raw.sendall(head.encode() + b"x" * sent)
        if while_open is not None:
            while_open()
        raw.shutdown(socket.SHUT_WR)  # the body ends here: the server reads its end
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode(errors="replace")
