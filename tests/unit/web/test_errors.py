"""The one error shape: every error of the tree and of HTTP becomes problem+json."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from flask import Flask
from marshmallow import ValidationError
from werkzeug.exceptions import BadRequest

from reposync import errors
from reposync.web.errors import HTTP_CODES, PROBLEM_CONTENT_TYPE, register_error_handlers


def instance(cls: type[errors.ReposyncError]) -> errors.ReposyncError:
    if cls is errors.RateLimited:
        return cls("slow down", retry_at=datetime(2026, 1, 1, tzinfo=UTC))
    if cls is errors.TooManyAttempts:
        return cls("too many refused tokens", retry_after=42)
    return cls(f"{cls.__name__} happened")


@pytest.fixture
def app() -> Flask:
    app = Flask(__name__)
    register_error_handlers(app)
    raised: dict[str, BaseException] = {}

    @app.route("/raise/<name>")
    def boom(name: str) -> str:
        raise raised[name]

    app.extensions["raise"] = raised
    return app


def raise_through(app: Flask, error: BaseException):
    app.extensions["raise"]["it"] = error
    return app.test_client().get("/raise/it")


def problem_of(response) -> dict:
    assert response.mimetype == PROBLEM_CONTENT_TYPE
    body = response.get_json(force=True)
    assert {"type", "title", "status", "detail", "code"} <= body.keys()
    assert body["status"] == response.status_code
    return body


@pytest.mark.parametrize("cls", errors.all_error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_class_answers_its_status_and_code(app, cls):
    """Each class of the tree keeps its http_status, code, message and suggested action."""
    error = instance(cls)
    response = raise_through(app, error)
    body = problem_of(response)
    assert response.status_code == cls.http_status
    assert body["code"] == cls.code
    assert body["type"] == f"urn:reposync:problem:{cls.code}"
    assert body["detail"] == error.message
    assert body["suggested_action"] == cls.suggested_action
    assert body["retryable"] is cls.retryable
    assert body["problem_type"] == cls.problem_type.value


def test_rate_limits_say_when_to_come_back(app):
    """RateLimited carries retry_at into the problem."""
    body = problem_of(raise_through(app, instance(errors.RateLimited)))
    assert body["retry_at"] == "2026-01-01T00:00:00+00:00"


def test_refusals_that_end_by_themselves_say_when_in_retry_after(app):
    """A database outage and a throttled client get Retry-After (seconds); others none."""
    throttled = raise_through(app, instance(errors.TooManyAttempts))
    assert (throttled.status_code, throttled.headers["Retry-After"]) == (429, "42")
    assert problem_of(throttled)["retry_after"] == 42
    away = raise_through(app, instance(errors.DatabaseUnavailable))
    assert away.headers["Retry-After"] == str(errors.DatabaseUnavailable.retry_after)
    assert "Retry-After" not in raise_through(app, instance(errors.BindingBusy)).headers


def _driver_errors() -> list[tuple[str, BaseException, int]]:
    """Errors the database layer raises, and the status each must answer."""
    import sqlite3

    import psycopg
    from kombu.exceptions import OperationalError as BrokerDown
    from sqlalchemy import exc as sa

    refused = psycopg.OperationalError("connection failed: Connection refused")
    return [
        ("server refused", sa.OperationalError("SELECT 1", {}, refused), 503),
        ("file unopenable", sa.OperationalError("x", {}, sqlite3.OperationalError("unable")), 503),
        ("driver interface", sa.InterfaceError("x", {}, psycopg.InterfaceError("closed")), 503),
        (
            "connection lost",
            sa.DBAPIError("x", {}, Exception("gone"), connection_invalidated=True),
            503,
        ),
        ("pool exhausted", sa.TimeoutError("QueuePool limit of size 5 overflow 5 reached"), 503),
        ("raw driver", psycopg.errors.AdminShutdown("terminating connection"), 503),
        ("raw sqlite", sqlite3.OperationalError("unable to open database file"), 503),
        (
            "a wrong statement",
            sa.ProgrammingError("x", {}, psycopg.ProgrammingError("syntax")),
            500,
        ),
        ("a broken constraint", sa.IntegrityError("x", {}, sqlite3.IntegrityError("unique")), 500),
        ("the broker, not the database", BrokerDown("redis is away"), 500),
    ]


@pytest.mark.parametrize(
    ("name", "error", "status"), [pytest.param(*case, id=case[0]) for case in _driver_errors()]
)
def test_driver_errors_meaning_the_database_is_away_are_503(app, caplog, name, error, status):
    """An outage, whatever the driver or layer said it with, is 503 database_unavailable
    with Retry-After and a detail naming no host; a wrong statement stays a 500 bug."""
    response = raise_through(app, error)
    body = problem_of(response)
    assert response.status_code == status, name
    if status == 503:
        assert body["code"] == "database_unavailable"
        assert response.headers["Retry-After"].isdigit()
        assert "refused" not in body["detail"]
        assert "unable" not in body["detail"]
    else:
        assert body["code"] == "internal_error"


def test_unauthenticated_asks_for_a_bearer_token(app):
    """401 answers carry WWW-Authenticate: Bearer."""
    response = raise_through(app, errors.Unauthenticated("no token"))
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_an_unexpected_exception_is_500_without_internals(app, caplog):
    """A bug answers 500 internal_error; the message stays in the log, not the response."""
    with caplog.at_level(logging.ERROR):
        response = raise_through(app, RuntimeError("password=hunter2 at /srv/secret"))
    body = problem_of(response)
    assert response.status_code == 500
    assert body["code"] == "internal_error"
    assert "hunter2" not in response.get_data(as_text=True)
    assert "hunter2" in caplog.text


def test_a_view_validation_error_is_422_with_its_fields(app):
    """A marshmallow ValidationError raised by a view is 422 validation_error."""
    body = problem_of(raise_through(app, ValidationError({"limit": ["too big"]})))
    assert body["code"] == "validation_error"
    assert body["errors"] == {"limit": ["too big"]}
    assert "limit" in body["detail"]


def test_webargs_messages_become_errors_by_location(app):
    """An HTTP error carrying webargs messages lists them under ``errors``."""
    error = BadRequest()
    error.data = {"messages": {"json": ["Invalid JSON body."]}}  # type: ignore[attr-defined]
    body = problem_of(raise_through(app, error))
    assert body["code"] == "invalid_input"
    assert body["detail"] == "json: Invalid JSON body."
    assert body["errors"] == {"json": ["Invalid JSON body."]}


def test_unknown_routes_and_methods(app):
    """404 route_not_found and 405 method_not_allowed (with Allow) come in the same shape."""
    client = app.test_client()
    missing = client.get("/nowhere")
    assert (missing.status_code, problem_of(missing)["code"]) == (404, "route_not_found")
    wrong = client.post("/raise/it")
    assert (wrong.status_code, problem_of(wrong)["code"]) == (405, "method_not_allowed")
    assert "GET" in wrong.headers["Allow"]


def test_http_codes_reuse_the_trees_codes_only_for_the_same_meaning():
    """An HTTP-only code never names a different error of the tree."""
    tree = {cls.code: cls.http_status for cls in errors.all_error_classes()}
    for status, code in HTTP_CODES.items():
        if code in tree:
            assert tree[code] in (status, 400), code  # invalid_input is the 400 of the tree
