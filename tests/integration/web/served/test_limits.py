"""Issue 12 #8: what a request may weigh, and an API that works offline."""

from __future__ import annotations

import pytest

from reposync.web.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, json_depth
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def admin(tokens) -> dict[str, str]:
    return bearer(tokens.admin)


def test_a_body_over_the_cap_is_413_problem_json_unread(client, admin):
    """A 10 MB body was parsed in full; the cap answers before reading it."""
    body = b'{"source": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
    response = client.post(
        url("/bindings"),
        headers={**admin, "Content-Type": "application/json"},
        data=body,
    )
    assert_problem(response, 413, "payload_too_large")


def test_json_nested_100000_deep_is_400_not_500(client, admin):
    """Python's JSON decoder recursed into it and raised RecursionError: a 500."""
    body = "[" * 100_000 + "]" * 100_000
    response = client.post(
        url("/bindings"),
        headers={**admin, "Content-Type": "application/json"},
        data=body,
    )
    problem = assert_problem(response, 400, "invalid_input")
    assert f"deeper than {MAX_JSON_DEPTH} levels" in problem["detail"]


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"{}", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'{"a": "[[[[[[ not nesting ]"}', 1),
        (b'["\\"[[[", [[]]]', 3),
        (b"42", 0),
    ],
)
def test_json_depth_skips_strings_and_escapes(text, depth):
    assert json_depth(text) == depth


def test_swagger_ui_assets_are_served_by_the_api_itself(client):
    """/docs loaded its JavaScript and CSS from a CDN, so it was blank offline."""
    page = client.get(url("/docs")).get_data(as_text=True)
    assert "cdn." not in page
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert f"{url('/docs-assets/')}{asset}" in page
        response = client.get(url(f"/docs-assets/{asset}"))
        assert response.status_code == 200
        assert len(response.get_data()) > 1000
