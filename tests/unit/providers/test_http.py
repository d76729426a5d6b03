"""A forge write request is asked of the stage's write guard last, right before it goes;
an upload's body is read under it too."""

from __future__ import annotations

import http.server
import io
import time
from typing import Any

import pytest
import requests

from reposync.errors import LeaseLost, RunCancelled
from reposync.guards import guarded
from reposync.providers.http import GuardedBody, guarded_body, send_once
from tests.http_server import serving


class _Recording(requests.Session):
    """Records what would have been sent instead of sending it."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        self.sent.append((str(method), str(url)))
        response = requests.Response()
        response.status_code = 201
        return response


def _send(session: _Recording) -> requests.Response:
    return send_once(
        session, "POST", "https://forge.test/repos/a/b/issues", path="/repos/a/b/issues", timeout=5
    )


@pytest.mark.parametrize("stop", [LeaseLost("generation 3 lost"), RunCancelled("run 7 cancelled")])
def test_a_write_whose_guard_refuses_is_never_sent(stop: Exception) -> None:
    """A lost lease or a cancel raised by the guard: the request does not leave."""
    session = _Recording()

    def refuse() -> None:
        raise stop

    with guarded(refuse), pytest.raises(type(stop)):
        _send(session)
    assert session.sent == []


def test_a_write_the_guard_allows_is_sent_once() -> None:
    """The guard is asked once per request; allowed, the request goes out once."""
    session = _Recording()
    asked: list[int] = []
    with guarded(lambda: asked.append(len(session.sent))):
        assert _send(session).status_code == 201
    assert asked == [0]
    assert session.sent == [("POST", "https://forge.test/repos/a/b/issues")]


class _Received:
    """What a real HTTP server got of each request's body: bytes read, and whether the
    body ended before its ``Content-Length`` (the client went away mid-upload)."""

    def __init__(self) -> None:
        self.bodies: list[tuple[int, bool]] = []
        self.headers: list[dict[str, str]] = []


@pytest.fixture
def server() -> Any:
    received = _Received()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.headers.append(dict(self.headers.items()))
            expected, got = int(self.headers.get("Content-Length", "0")), 0
            while got < expected:
                chunk = self.rfile.read(min(65536, expected - got))
                if not chunk:
                    break
                got += len(chunk)
            received.bodies.append((got, got < expected))
            if got < expected:
                return  # the client is gone: nothing to answer
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as url:
        yield url, received


SIZE = 8 * 1024 * 1024


def _upload(url: str, body: Any, size: int = SIZE) -> requests.Response:
    with requests.Session() as session:
        return send_once(
            session,
            "POST",
            f"{url}/upload",
            path="/upload",
            timeout=30,
            data=body,
            headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
        )


def test_an_upload_the_guard_allows_is_sent_whole_as_its_content_length_says(server) -> None:
    """Read under the guard, the body goes as before: all of it, with the caller's
    Content-Length and no chunked encoding; the guard was asked along the way."""
    url, received = server
    asked: list[None] = []
    with guarded(lambda: asked.append(None)):
        assert _upload(url, io.BytesIO(b"x" * SIZE)).status_code == 201
    assert received.bodies == [(SIZE, False)]
    assert received.headers[0]["Content-Length"] == str(SIZE)
    assert "Transfer-Encoding" not in received.headers[0]
    assert len(asked) > 2  # before the request, and before reads of its body


def test_an_empty_upload_is_sent_with_its_content_length_alone(server) -> None:
    """A 0-byte asset: ``Content-Length: 0`` and nothing else. Before, ``requests`` took
    the bare stream's unknown size for chunked and sent ``Transfer-Encoding: chunked``
    beside the caller's ``Content-Length``, which HTTP forbids (RFC 9112, 6.1)."""
    url, received = server
    with guarded(lambda: None):
        assert _upload(url, io.BytesIO(b""), size=0).status_code == 201
    assert received.bodies == [(0, False)]
    assert received.headers[0]["Content-Length"] == "0"
    assert "Transfer-Encoding" not in received.headers[0]


def test_a_cancel_mid_upload_stops_it_unfinished(server) -> None:
    """The guard refuses once a megabyte has been read: the upload stops there with the
    guard's error, its connection closed, and the server got an unfinished body (which
    a forge drops). Before, the whole body went and the forge stored the upload."""
    url, received = server
    body = io.BytesIO(b"x" * SIZE)

    def cancel_after_a_megabyte() -> None:
        if body.tell() >= 1024 * 1024:
            raise RunCancelled("run 7 was cancelled while it was writing")

    with guarded(cancel_after_a_megabyte), pytest.raises(RunCancelled):
        _upload(url, body)
    deadline = time.monotonic() + 10
    while not received.bodies and time.monotonic() < deadline:
        time.sleep(0.01)
    [(got, unfinished)] = received.bodies
    assert unfinished
    assert got < 2 * 1024 * 1024


def test_only_a_stream_with_a_content_length_is_guarded() -> None:
    """A JSON body, bytes, or a stream the caller did not size pass as they are."""
    stream = io.BytesIO(b"abc")
    assert isinstance(guarded_body(stream, {"Content-Length": "3"}), GuardedBody)
    assert isinstance(guarded_body(stream, {"content-length": "3"}), GuardedBody)
    assert guarded_body(stream, {}) is stream
    assert guarded_body(stream, None) is stream
    assert guarded_body(b"abc", {"Content-Length": "3"}) == b"abc"
    assert guarded_body(None, {"Content-Length": "0"}) is None
