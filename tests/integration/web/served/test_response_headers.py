"""Issue 23 #7: every response says ``X-Content-Type-Options: nosniff`` (a browser must
not guess a script or a page from bytes reposync sent as something else): JSON, problem
documents of every origin, pages, their assets, Swagger UI, metrics, event streams.
(gunicorn's own refusals: test_served_errors.py; a database outage: test_database_outage.py.)
"""

from __future__ import annotations

import pytest
from flask import Flask

from reposync.web.app import SWAGGER_ASSETS
from tests.integration.web.conftest import bearer, url
from tests.integration.web.pages.test_pages import sign_in

STREAM = {"Accept": "text/event-stream"}


@pytest.fixture
def app(app: Flask) -> Flask:
    """The web tests' app, with a route that fails as a bug would."""

    def broken() -> str:
        raise RuntimeError("a bug")

    app.add_url_rule("/broken", "broken", broken)
    return app


def test_every_kind_of_response_says_nosniff(app, tokens, finished_run):
    """One request per kind of response the app makes; each carries nosniff."""
    client = app.test_client()
    admin = bearer(tokens.admin)
    requests = {
        "json": lambda: client.get(url("/overview"), headers=admin),
        "health": lambda: client.get(url("/health")),
        "openapi document": lambda: client.get(url("/openapi.json")),
        "swagger ui": lambda: client.get(url("/docs")),
        "swagger asset": lambda: client.get(url(f"/{SWAGGER_ASSETS}/swagger-ui-bundle.js")),
        "metrics": lambda: client.get("/metrics"),
        "event stream": lambda: client.get(
            url(f"/runs/{finished_run.id}/events"), headers={**admin, **STREAM}
        ),
        "401 problem": lambda: client.get(url("/overview")),
        "404 problem": lambda: client.get(url("/nowhere")),
        "405 problem": lambda: client.put(url("/overview"), headers=admin),
        "422 problem": lambda: client.get(url("/runs?limit=0"), headers=admin),
        "500 problem": lambda: client.get("/broken"),
        "sign-in page": lambda: client.get("/signin"),
        "page asset": lambda: client.get("/ui/static/run.js"),
        "page redirect": lambda: client.get("/"),
    }
    seen = {}
    for kind, request in requests.items():
        response = request()
        seen[kind] = (response.status_code, response.headers.get("X-Content-Type-Options"))
        response.close()
    sign_in(client, tokens.admin)
    for kind, path in (("page", "/"), ("page problem", f"/runs/{finished_run.id + 99}")):
        response = client.get(path)
        seen[kind] = (response.status_code, response.headers.get("X-Content-Type-Options"))
    assert {kind: sniff for kind, (_, sniff) in seen.items()} == dict.fromkeys(seen, "nosniff")
    statuses = {kind: status for kind, (status, _) in seen.items()}
    assert statuses["500 problem"] == 500
    assert statuses["page problem"] == 404
    assert statuses["event stream"] == 200
