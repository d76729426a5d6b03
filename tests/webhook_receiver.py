"""A real HTTP server on loopback that receives reposync's webhooks, as a test scripts it.

Each request takes the next scripted answer (a status, optional headers, or "hang":
hold the request open until released, as a slow receiver does while a worker is killed);
once the script is spent every request gets ``then``. Every request is recorded, so a
test checks headers, signatures and bodies, and how often one delivery id arrived.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG = "hang"


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    #: ``time.monotonic()`` at arrival.
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Receiver:
    url: str
    script: list[Any] = field(default_factory=list)
    then: Any = 200
    requests: list[Received] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def answer(self, *answers: Any, then: Any = 200) -> None:
        with self.arrived:
            self.script = list(answers)
            self.then = then

    def _next(self, received: Received) -> Any:
        with self.arrived:
            self.requests.append(received)
            self.arrived.notify_all()
            return self.script.pop(0) if self.script else self.then

    def wait(self, count: int, timeout: float = 60.0) -> list[Received]:
        """The first ``count`` requests, once that many arrived."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(
                    f"{len(self.requests)} of {count} webhook requests arrived in {timeout}s"
                )
            return list(self.requests[:count])

    def release(self) -> None:
        self.released.set()


@contextmanager
def receiver() -> Iterator[Receiver]:
    """A running receiver on 127.0.0.1 (an ephemeral port), shut down afterwards."""
    box: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            answer = box["r"]._next(received)
            if answer == HANG:
                box["r"].released.wait(120)
                answer = 200
            status, headers = (answer, {}) if isinstance(answer, int) else answer
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    box["r"] = Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box["r"]
    finally:
        box["r"].release()
        server.shutdown()
        server.server_close()
