"""Serving a test server's WSGI applications on 127.0.0.1, and the life cycle and
"what went wrong" both forges' test servers share.

A test server serves on free ports of 127.0.0.1, one thread each, quiet (a test's output
is its own); it records what broke its contract or crashed, and a test ends with
``assert_clean()``. What a forge serves and how it lays out its hosts is its own
(tests/fakes/github/server.py, tests/fakes/forgejo/server.py).
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from tests.fakes.contract_base import ContractChecks, ContractViolation, RecordingValidator

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

    from tests.fakes.github.webhooks import WebhookDelivery


class QuietHandler(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:
        pass


def serve(
    app: WSGIApplication, name: str, handler: type[WSGIRequestHandler] = QuietHandler
) -> tuple[BaseWSGIServer, threading.Thread]:
    """A threaded server for ``app`` on a free port of 127.0.0.1, and the thread that
    will run it (not started: the caller starts it once every URL is known)."""
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=handler)
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    thread = threading.Thread(
        target=functools.partial(server.serve_forever, poll_interval=0.05),
        name=name,
        daemon=True,
    )
    return server, thread


def base_url(server: BaseWSGIServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"


class FakeServer:
    """The life cycle and the problem lists of a forge's test server.

    A subclass calls ``_init_server`` in its ``__init__``, appends what ``serve`` gives it
    to ``_servers`` in its ``start`` and sets ``client_recorder`` and ``webhooks``."""

    root: Path
    contract: ContractChecks
    client_recorder: RecordingValidator
    webhooks: Any  # the forge's webhook hub: ``start``, ``stop`` and ``violations``

    def _init_server(self, root: Path | None, prefix: str) -> Path:
        """The root directory (a fresh temporary one, removed on stop, unless given) and
        the empty problem lists."""
        self._own_root = root is None
        self.violations: list[ContractViolation] = []
        self.request_violations: list[ContractViolation] = []
        self.server_errors: list[str] = []
        #: Requests for described operations the fake does not model (recorded).
        self.unmodelled: list[str] = []
        self._servers: list[tuple[BaseWSGIServer, threading.Thread]] = []
        return root or Path(tempfile.mkdtemp(prefix=prefix))

    def start(self) -> Self:
        raise NotImplementedError

    def _run(self, contract: ContractChecks) -> None:
        """With the contract on the servers' URLs (and a client recorder checking
        against it), start every server's thread and the webhook sender."""
        self.contract = contract
        self.client_recorder = RecordingValidator(contract)
        for _, thread in self._servers:
            thread.start()
        self.webhooks.start()

    def stop(self) -> None:
        self.webhooks.stop()
        for server, thread in self._servers:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
        self._servers.clear()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def webhook_deliveries(self) -> list[WebhookDelivery]:
        """Every webhook delivery so far, in the order the events happened."""
        return self.webhooks.deliveries_of()  # type: ignore[no-any-return]

    def problems(self, *, requests_too: bool = True) -> list[str]:
        """Every contract violation and server error seen so far."""
        found = [str(v) for v in self.violations]
        found += [
            str(v) for v in self.client_recorder.violations if requests_too or not v.is_request
        ]
        found += self.server_errors + self.unmodelled + self.webhooks.violations
        if requests_too:
            found += [str(v) for v in self.request_violations]
        return found

    def assert_clean(self, *, requests_too: bool = True) -> None:
        """No contract violation, server error or unmodelled operation so far."""
        problems = self.problems(requests_too=requests_too)
        assert not problems, "\n".join(problems)
