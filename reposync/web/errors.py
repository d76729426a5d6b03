"""One error shape for the whole API: ``application/problem+json`` (RFC 9457).

Every failure answers ``{type, title, status, detail, code}``; ``code`` is stable:

- a ``ReposyncError`` keeps its own code and ``http_status`` (plus ``suggested_action``
  and ``retryable``);
- request validation (webargs/marshmallow) is 422 ``validation_error`` with the messages
  by location and field in ``errors``;
- other HTTP errors raised by Flask or Werkzeug get the code of their status
  (``route_not_found``, ``method_not_allowed``, ...);
- a driver error that means the database cannot be used now (``models.db.unavailable``:
  down, unreachable, its file unreadable, out of connections) is 503
  ``database_unavailable`` with ``Retry-After``, wherever it was raised: this handler is
  the web's one boundary for them (the token lookup of every request is the first);
- anything else is 500 ``internal_error``; its details go to the log, never the client.

A refusal that ends by itself (``database_unavailable``, ``too_many_attempts``) says when
to come back in ``Retry-After`` (seconds).
"""

from __future__ import annotations

import http
import logging
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from flask import Flask, Response, json
from flask_smorest import Blueprint
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from reposync.errors import DatabaseUnavailable, RateLimited, ReposyncError, TooManyAttempts
from reposync.models import db

log = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:reposync:problem:"

#: Codes of the HTTP errors that do not come from the error tree.
HTTP_CODES: dict[int, str] = {
    400: "invalid_input",
    401: "unauthenticated",
    403: "forbidden",
    404: "route_not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "too_many_requests",
    500: "internal_error",
}


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    """The problem document of one failure."""
    body = {
        "type": TYPE_PREFIX + code,
        "title": http.HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
        **{key: value for key, value in extra.items() if value is not None},
    }
    response = Response(json.dumps(body), status=status, content_type=PROBLEM_CONTENT_TYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def retry_headers(error: ReposyncError) -> dict[str, str]:
    """``Retry-After`` for a refusal that ends by itself (the page sends it too); a forge's
    rate limit says when in ``retry_at``, counted from now here."""
    if isinstance(error, DatabaseUnavailable | TooManyAttempts):
        return {"Retry-After": str(max(1, error.retry_after))}
    if isinstance(error, RateLimited):
        wait = (error.retry_at - datetime.now(UTC)).total_seconds()
        return {"Retry-After": str(max(1, math.ceil(wait)))}
    return {}


def database_unavailable(error: BaseException) -> DatabaseUnavailable | None:
    """The tree's error for a driver error meaning the database is away (logged once,
    without a traceback: an outage would repeat it for every request), else None."""
    mapped = db.unavailable(error)
    if mapped is not None and mapped is not error:
        log.warning("the database is unavailable: %s", db.reason(error))
    return mapped


def _reposync_error(error: ReposyncError) -> Response:
    if error.http_status >= 500 and not isinstance(error, DatabaseUnavailable):
        log.error("request failed: %s", error, exc_info=error)
    headers = retry_headers(error)
    if error.http_status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    extra = {k: v for k, v in error.to_dict().items() if k not in ("error_code", "message")}
    return problem(error.http_status, error.code, error.message, headers=headers, **extra)


def _validation_detail(messages: Any) -> str:
    """``the request is not valid: json.source, query.limit`` from webargs' messages."""
    names: list[str] = []
    if isinstance(messages, Mapping):
        for location, fields in messages.items():
            if isinstance(fields, Mapping):
                names.extend(f"{location}.{field}" for field in fields)
            else:
                names.append(str(location))
    return "the request is not valid" + (": " + ", ".join(names) if names else "")


def _first_message(messages: Any) -> str:
    """``json: Invalid JSON body.`` from webargs' messages of a 400."""
    if isinstance(messages, Mapping):
        for location, value in messages.items():
            return f"{location}: {_first_message(value)}"
    if isinstance(messages, list | tuple) and messages:
        return _first_message(messages[0])
    return str(messages)


def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    code = HTTP_CODES.get(status, f"http_{status}")
    data = getattr(error, "data", None) or {}
    messages = data.get("messages")
    headers = {
        name: value
        for name, value in error.get_headers()
        if name.lower() not in ("content-type", "content-length")
    }
    headers.update(data.get("headers") or {})
    if status >= 500:
        return problem(status, code, "an internal error occurred; the server log has details")
    if messages is not None:
        detail = _validation_detail(messages) if status == 422 else _first_message(messages)
        return problem(status, code, detail, headers=headers, errors=_jsonable(messages))
    return problem(status, code, error.description or error.name, headers=headers)


def _jsonable(messages: Any) -> Any:
    """webargs' messages, with integer keys (list indexes) made strings."""
    if isinstance(messages, Mapping):
        return {str(key): _jsonable(value) for key, value in messages.items()}
    if isinstance(messages, list | tuple):
        return [_jsonable(value) for value in messages]
    return messages


def _validation_error(error: ValidationError) -> Response:
    """A ``ValidationError`` a view raised itself (not through webargs)."""
    # marshmallow leaves normalized_messages unannotated (it returns a dict).
    messages = error.normalized_messages()  # type: ignore[no-untyped-call]
    return problem(
        422, "validation_error", _validation_detail(messages), errors=_jsonable(messages)
    )


def _unexpected(error: Exception) -> Response:
    unavailable = database_unavailable(error)
    if unavailable is not None:
        return _reposync_error(unavailable)
    log.exception("unhandled error", exc_info=error)
    return problem(500, "internal_error", "an internal error occurred; the server log has details")


def register_error_handlers(app: Flask) -> None:
    app.register_error_handler(ReposyncError, _reposync_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(ValidationError, _validation_error)
    app.register_error_handler(Exception, _unexpected)


F = TypeVar("F", bound=Callable[..., Any])


def documents(blueprint: Blueprint, *statuses: int) -> Callable[[F], F]:
    """Document the error responses a view can answer (besides the default)."""

    def decorate(view: F) -> F:
        for status in statuses:
            view = blueprint.alt_response(status, response=http.HTTPStatus(status).name)(view)
        return view

    return decorate
