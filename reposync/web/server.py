"""``reposync api``: the API under gunicorn.

Two worker processes serve the distributed mode (Celery executes the Runs). In the
embedded mode with no broker (``Settings.runs_in_process``) the API executes them itself
(``service/scheduling/executor.py``), so it runs ONE worker process: exactly one executor and one
tick exist. That process starts the executor once gunicorn's signal handlers are in
place, begins stopping it at the SIGTERM that starts a graceful shutdown (a Run's step
gives its lease up at once, not after the requests in flight end), and waits for it
when the worker exits.

It starts only on a database at the schema it was built for: a configured database
(``REPOSYNC_DATABASE_URL``) that is unreachable or not migrated makes it exit at once,
naming ``reposync db upgrade``, rather than serve errors from every worker; migrating is
the ``migrate`` step's job (compose), never the API's. The embedded data directory's
database is migrated here, as every command of the CLI does with it.
"""

from __future__ import annotations

import json
import signal
import threading
from types import FrameType
from typing import Any

from gunicorn import glogging
from gunicorn import util as gunicorn_util
from gunicorn.app.base import BaseApplication

from reposync import logs, metrics
from reposync.config import Settings
from reposync.models.db import Database
from reposync.service.scheduling.executor import InProcessExecutor
from reposync.web.app import create_app
from reposync.web.errors import PROBLEM_CONTENT_TYPE, TYPE_PREFIX

#: gunicorn's own refusals (a header line too long, a NUL in a header) by status.
GUNICORN_CODES = {
    400: "invalid_request",
    403: "forbidden",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_header_fields_too_large",
    500: "internal_error",
    501: "not_implemented",
}


def write_problem(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's ``util.write_error``, answering problem JSON like the rest of the API.

    gunicorn refuses malformed requests (an oversized or NUL-carrying ``Authorization``
    header) before Flask sees them and offers no hook for the body: it answered HTML.
    """
    code = GUNICORN_CODES.get(status_int, f"http_{status_int}")
    body = json.dumps(
        {
            "type": TYPE_PREFIX + code,
            "title": reason,
            "status": status_int,
            "detail": mesg or reason,
            "code": code,
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: {PROBLEM_CONTENT_TYPE}\r\nX-Content-Type-Options: nosniff\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    gunicorn_util.write_nonblock(sock, head.encode("latin-1") + body)


class JsonGunicornLogger(glogging.Logger):
    """gunicorn's error and access logs as JSON lines (``REPOSYNC_LOG_FORMAT=json``)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        logs.reformat(self.error_log, "json")
        logs.reformat(self.access_log, "json")


def _child_exit(server: Any, worker: Any) -> None:
    """A gunicorn worker ended: its live metric values go with it (``mark_process_dead``)."""
    metrics.process_dead(worker.pid)


#: The worker process's in-process executor (``load`` builds it, the hooks below run it).
_executor: InProcessExecutor | None = None


def _start_executor(worker: Any) -> None:
    """``post_worker_init``: start the executor; SIGTERM (a graceful stop) stops it too."""
    executor = _executor
    if executor is None:
        return
    executor.start()
    graceful = signal.getsignal(signal.SIGTERM)

    def on_term(signum: int, frame: FrameType | None) -> None:
        # A thread of its own: a signal handler must not wait for the executor's lock.
        threading.Thread(target=executor.stop, name="reposync-executor-stop").start()
        if callable(graceful):
            graceful(signum, frame)

    signal.signal(signal.SIGTERM, on_term)


def _stop_executor(worker: Any) -> None:
    """``worker_int`` (SIGINT, SIGQUIT): stop it, waiting (bounded) before the exit."""
    if _executor is not None:
        _executor.stop()


def _executor_exit(server: Any, worker: Any) -> None:
    """``worker_exit``: whatever ended the worker, the executor's threads end first."""
    _stop_executor(worker)


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings, bind: str) -> None:
        self._settings = settings
        self._bind = bind
        super().__init__()

    def load_config(self) -> None:
        gunicorn_util.write_error = write_problem  # inherited by the forked workers
        self.cfg.set("bind", self._bind)
        # One process when it executes Runs itself: one executor, one tick (module).
        self.cfg.set("workers", 1 if self._settings.runs_in_process else 2)
        # Threads: the API's own, and one more for each event stream the process may
        # hold, so that streams (up to 25 s each, capped per process) never take the
        # threads the rest of the API answers with.
        threads = self._settings.api_threads + self._settings.api_max_streams
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", threads)
        self.cfg.set("worker_connections", max(1000, 2 * threads))
        self.cfg.set("accesslog", "-")
        self.cfg.set("child_exit", _child_exit)
        if self._settings.runs_in_process:
            self.cfg.set("post_worker_init", _start_executor)
            self.cfg.set("worker_int", _stop_executor)
            self.cfg.set("worker_exit", _executor_exit)
        if self._settings.log_format == "json":
            self.cfg.set("logger_class", JsonGunicornLogger)

    def load(self) -> Any:
        global _executor
        app = create_app(self._settings)
        dispatcher = app.extensions["reposync.ctx"].dispatcher
        if isinstance(dispatcher, InProcessExecutor):
            _executor = dispatcher
        return app


def check_database(settings: Settings) -> None:
    """Refuse to serve on a database that is away or at another schema (see module)."""
    db = Database(settings.effective_database_url)
    try:
        if settings.database_url:
            db.require_current()
        else:
            db.ensure_current()
    finally:
        db.dispose()


def serve(settings: Settings, bind: str | None = None) -> int:
    check_database(settings)
    # Before gunicorn forks its workers: they count into files /metrics sums.
    metrics.setup_multiprocess(settings.effective_metrics_dir, "api")
    _Gunicorn(settings, bind or settings.api_bind).run()
    return 0
