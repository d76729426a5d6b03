"""What a member may read in Run errors, events and reports: no server paths.

Messages come from every layer (git, SQLite, the forges) and name the service's files
(its data directory, push workspaces, caches, code). Admins operate the server and see
them whole; for members, every absolute path becomes ``<path>``. Locators (``local:/…``)
and URLs are kept: a member sees its Bindings' locators anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from flask import g, has_request_context

# One rule for the API and for webhook bodies sent to members' subscriptions.
from reposync.service.webhooks.outbox import REDACTED, redact_paths

__all__ = ["REDACTED", "for_viewer", "operator_view", "redact_paths"]

_OPERATOR: ContextVar[bool] = ContextVar("reposync_operator_view", default=False)


@contextmanager
def operator_view() -> Iterator[None]:
    """Dump for the operator at the command line, who acts with their own rights on the
    server's files (``reposync runs show --json``): nothing is redacted inside."""
    token = _OPERATOR.set(True)
    try:
        yield
    finally:
        _OPERATOR.reset(token)


def for_viewer(data: dict[str, Any], *names: str) -> dict[str, Any]:
    """``data`` with the named fields redacted unless the requesting user is an admin (or
    the operator at the command line)."""
    if _OPERATOR.get():
        return data
    user = g.get("user") if has_request_context() else None
    if user is not None and user.role == "admin":
        return data
    return {key: redact_paths(value) if key in names else value for key, value in data.items()}
