"""Log records in text (the default) or JSON lines, with the Run they belong to.

``REPOSYNC_LOG_FORMAT=json`` (``Settings.log_format``) makes every entry point (the CLI,
the API under gunicorn, Celery's workers) write one JSON object per line:
``time``, ``level``, ``logger``, ``message``, ``process``, and, wherever they apply,
``run_id``, ``binding_id``, ``stage``, ``generation`` and ``task_id`` (plus ``exc_info``
with the traceback). Those five come from context variables: ``execute_step`` binds the
Run's, the Celery task base binds the task id (``log_context``/``bind``), so a record of
any module logged during a stage carries them without passing anything down. A record
may also carry one of them itself (``log.info(..., extra={"run_id": 3})``).

A leaf: the standard library only.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any, TextIO

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: The fields taken from the context (or the record), in the order they are written.
CONTEXT_FIELDS = ("run_id", "binding_id", "stage", "generation", "task_id")

_MARK = "_reposync_handler"

_context: ContextVar[dict[str, Any]] = ContextVar("reposync_log_context", default={})  # noqa: B039


def bind(**fields: Any) -> Token[dict[str, Any]]:
    """Add fields to this context's records until ``unbind`` (None values are skipped)."""
    current = _context.get()
    return _context.set({**current, **{k: v for k, v in fields.items() if v is not None}})


def unbind(token: Token[dict[str, Any]]) -> None:
    _context.reset(token)


@contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    token = bind(**fields)
    try:
        yield
    finally:
        unbind(token)


def current_context() -> dict[str, Any]:
    return dict(_context.get())


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        context = _context.get()
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is None:
                value = context.get(name)
            if value is not None:
                document[name] = value
        if record.exc_info:
            document["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            document["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(document, default=str)


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "json":
        return JsonFormatter()
    return logging.Formatter(TEXT_FORMAT)


def configure(log_format: str, level: int, stream: TextIO | None = None) -> None:
    """The root logger of a CLI process: one handler on ``stream`` (stderr) in the
    format asked for. The text format is what the CLI always wrote. Like
    ``logging.basicConfig``, a root logger someone else configured (a test harness, an
    embedding program) is left alone; a second call replaces the first one's handler."""
    root = logging.getLogger()
    ours = [h for h in root.handlers if getattr(h, _MARK, False)]
    if len(ours) != len(root.handlers):
        return
    for old in ours:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(log_format))
    setattr(handler, _MARK, True)
    root.addHandler(handler)
    root.setLevel(level)


def reformat(logger: logging.Logger, log_format: str) -> None:
    """Give every handler of ``logger`` the format asked for (JSON); text keeps the
    handlers' own formatters (Celery's, gunicorn's): nothing changes by default."""
    if log_format != "json":
        return
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())
