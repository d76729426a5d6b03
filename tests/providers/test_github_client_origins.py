"""Issue 12 #5: the GitHub client sends its token only to the configured GitHub hosts.

Two real HTTP servers on this machine: the configured API, and another origin that a
response names (a ``Link: next``, an asset's download URL). The other origin must never
see the token.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reposync.errors import UntrustedOrigin
from reposync.providers.base import SystemClock
from reposync.providers.github.auth import PersonalToken
from reposync.providers.github.client import GitHubClient

TOKEN = "ghp_secret_for_the_api_only"


class Recorder(BaseHTTPRequestHandler):
    """Answers a one-item page; its ``Link: next`` names ``self.server.next_url``."""

    def do_GET(self) -> None:
        self.server.seen.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        body = json.dumps([{"page": self.path}]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        next_url = self.server.next_url  # type: ignore[attr-defined]
        if next_url:
            self.send_header("Link", f'<{next_url}>; rel="next"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serve(next_url: str = "") -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.seen = []  # type: ignore[attr-defined]
    server.next_url = next_url  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def elsewhere() -> Iterator[ThreadingHTTPServer]:
    server = serve()
    yield server
    server.shutdown()


def client_for(api: ThreadingHTTPServer, *trusted: str) -> GitHubClient:
    return GitHubClient(
        f"http://127.0.0.1:{api.server_port}",
        PersonalToken(TOKEN),
        clock=SystemClock(),
        timeout=5.0,
        trusted_urls=trusted,
    )


def test_a_next_page_on_another_host_is_refused_without_sending_the_token(elsewhere):
    """Pagination followed ``Link: next`` anywhere, with the bearer token."""
    api = serve(next_url=f"http://127.0.0.1:{elsewhere.server_port}/stolen?page=2")
    try:
        client = client_for(api)
        with pytest.raises(UntrustedOrigin, match="none of the configured GitHub hosts"):
            list(client.paginate("/repos/o/r/issues"))
    finally:
        api.shutdown()
    assert api.seen == [f"Bearer {TOKEN}"]
    assert elsewhere.seen == []


def test_a_configured_host_gets_the_token(elsewhere):
    """The uploads and Git hosts are GitHub's too: a next page there is followed."""
    api = serve(next_url=f"http://127.0.0.1:{elsewhere.server_port}/more")
    try:
        client = client_for(api, f"http://127.0.0.1:{elsewhere.server_port}")
        pages = list(client.paginate("/repos/o/r/issues"))
    finally:
        api.shutdown()
    assert len(pages) == 2
    assert elsewhere.seen == [f"Bearer {TOKEN}"]
