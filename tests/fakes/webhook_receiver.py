"""A real HTTP server on 127.0.0.1 that records the webhook deliveries it receives.

The GitHub test server's deliveries are checked at the other end of a real socket:
each request's method, path, headers and raw body are kept, and the receiver answers
what the test says (``status``, or a ``delay`` before answering, both per request by a
callable when needed)::

    with WebhookReceiver() as receiver:
        fake.add_webhook("acme/widgets", receiver.url, secret="s3cret", events=["*"])
        ...
        fake.webhooks.flush()
        assert receiver.received[0].event == "ping"
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs


@dataclass(frozen=True)
class Received:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]  # names lower case
    body: bytes

    @property
    def event(self) -> str:
        return self.headers.get("x-github-event", "")

    @property
    def guid(self) -> str:
        return self.headers.get("x-github-delivery", "")

    @property
    def payload(self) -> Any:
        """The JSON payload (from ``payload=`` for a form-encoded delivery)."""
        if self.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return json.loads(parse_qs(self.body.decode())["payload"][0])
        return json.loads(self.body)

    def signed_by(self, secret: str) -> bool:
        """Both signatures are the HMACs of the raw body with ``secret`` (compared in
        constant time, as a receiver must)."""
        sha256 = "sha256=" + hmac.new(secret.encode(), self.body, hashlib.sha256).hexdigest()
        sha1 = "sha1=" + hmac.new(secret.encode(), self.body, hashlib.sha1).hexdigest()
        return hmac.compare_digest(
            self.headers.get("x-hub-signature-256", ""), sha256
        ) and hmac.compare_digest(self.headers.get("x-hub-signature", ""), sha1)


Answer = int | Callable[[Received], int]


class WebhookReceiver:
    def __init__(self, *, status: Answer = 200, delay: float | Callable[[Received], float] = 0.0):
        self.status = status
        self.delay = delay
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                got = Received(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with receiver._lock:
                    receiver.received.append(got)
                wait = receiver.delay(got) if callable(receiver.delay) else receiver.delay
                if wait:
                    time.sleep(wait)
                code = receiver.status(got) if callable(receiver.status) else receiver.status
                try:
                    self.send_response(code)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up waiting (a timeout): nobody to answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}/hooks/github"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def events(self) -> list[str]:
        with self._lock:
            return [r.event for r in self.received]

    def of(self, event: str, action: str | None = None) -> list[Received]:
        with self._lock:
            found = [r for r in self.received if r.event == event]
        if action is not None:
            found = [r for r in found if r.payload.get("action") == action]
        return found

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
