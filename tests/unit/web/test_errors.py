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
