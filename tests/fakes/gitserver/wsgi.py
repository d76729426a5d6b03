"""WSGI helpers the test servers share: the request target as sent, and a dropped answer."""

from __future__ import annotations

import contextlib
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment


def raw_target(environ: WSGIEnvironment) -> tuple[str, str]:
    """The path and query exactly as the client sent them (still percent-encoded)."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
    if "://" in raw:
        raw = "/" + raw.split("://", 1)[1].partition("/")[2]
    path, _, query = raw.partition("?")
    return path or "/", query


def drop_connection(environ: WSGIEnvironment) -> None:
    """Close the socket without answering; the server treats it as a dropped client."""
    sock = environ.get("werkzeug.socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    raise ConnectionAbortedError("fault: connection dropped after the write")
