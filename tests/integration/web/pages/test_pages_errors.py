"""The page's errors are pages: 404, 403, 500 and 503 in HTML with what to do and a way
back, under the page's headers; the API under ``/api`` keeps its problem JSON; the
favicon is reposync's own, at ``/favicon.ico`` too."""

from __future__ import annotations

import pytest

from reposync.errors import DatabaseUnavailable
from reposync.web.pages import views
from tests.integration.web.conftest import assert_problem, bearer, url
from tests.integration.web.pages.test_pages import sign_in


def assert_page(response, status: int, heading: str) -> str:
    """An HTML error page with this status and heading, and the page's headers."""
    assert response.status_code == status
    assert response.mimetype == "text/html"
    html = response.get_data(as_text=True)
    assert f"<h1>{heading}</h1>" in html
    assert f'data-status="{status}"' in html
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
    return html


@pytest.mark.parametrize("signed_in", [False, True])
def test_a_path_no_route_matches_is_a_404_page(client, tokens, signed_in):
    """Signed in or not, an unknown page path is an HTML 404, not the API's JSON."""
    if signed_in:
        sign_in(client, tokens.admin)
    html = assert_page(client.get("/no/such/page"), 404, "Not found")
    assert "What to do: check the address" in html
    assert 'href="/" id="back"' in html


def test_the_api_keeps_problem_json_for_its_own_errors(client, tokens):
    """Unknown API paths, wrong methods and missing records stay problem+json."""
    assert_problem(
        client.get(url("/no-such-thing"), headers=bearer(tokens.admin)), 404, "route_not_found"
    )
    assert_problem(
        client.delete(url("/overview"), headers=bearer(tokens.admin)), 405, "method_not_allowed"
    )
    assert_problem(
        client.get(url("/bindings/999999"), headers=bearer(tokens.admin)), 404, "record_not_found"
    )


def test_a_record_the_user_may_not_see_is_a_404_page(client, tokens, binding):
    sign_in(client, tokens.stranger)
    html = assert_page(client.get(f"/bindings/{binding.id}"), 404, "Not found")
    assert binding.a_locator not in html


def test_an_admins_page_is_a_403_page_for_a_member(client, tokens):
    sign_in(client, tokens.member)
    assert_page(client.get("/owners"), 403, "Not allowed")


def test_an_unexpected_failure_is_a_500_page_that_names_nothing_inside(client, tokens, monkeypatch):
    def broken(*_, **__):
        raise RuntimeError("secret /srv/internal/path exploded")

    monkeypatch.setattr(views, "overview_rows", broken)
    sign_in(client, tokens.admin)
    html = assert_page(client.get("/"), 500, "Something went wrong on the server")
    assert "/srv/internal/path" not in html
    assert "server log" in html


def test_a_database_outage_is_a_503_page_that_says_when_to_retry(client, tokens, monkeypatch):
    def down(*_, **__):
        raise DatabaseUnavailable("the database server is not answering")

    monkeypatch.setattr(views, "overview_rows", down)
    sign_in(client, tokens.admin)
    response = client.get("/")
    html = assert_page(response, 503, "Unavailable for now")
    assert response.headers["Retry-After"] == str(DatabaseUnavailable.retry_after)
    assert "database_unavailable" in html


def test_the_favicon_is_served_without_a_session_and_linked_from_every_page(client, tokens):
    """``/favicon.ico`` and the linked SVG are the same icon, served by reposync."""
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.mimetype == "image/svg+xml"
    assert icon.get_data().lstrip().startswith(b"<svg")
    linked = client.get("/ui/static/favicon.svg")
    assert linked.get_data() == icon.get_data()
    for page in (client.get("/signin"), client.get("/no/such/page")):
        assert 'rel="icon" type="image/svg+xml" href="/ui/static/favicon.svg"' in page.get_data(
            as_text=True
        )
