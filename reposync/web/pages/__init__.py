"""The web management page served by ``reposync api`` at ``/`` (issue 15).

Server-rendered Jinja templates and a little plain JavaScript, every asset shipped in
this package (the machine may be offline). A Flask blueprint outside the OpenAPI
document: it is for people, the JSON API under ``/api/ext/v1/sync`` is for programs. It
reads and changes through the same service layer and authorization as the API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, make_response, request
from werkzeug.exceptions import HTTPException

from reposync.web.pages import owners, runs, views  # noqa: F401  (their routes, on the blueprint)
from reposync.web.pages.common import CONTENT_SECURITY_POLICY, blueprint, problem_page

#: Paths that are not pages: the JSON API (problem JSON), Prometheus' text.
NOT_PAGES = ("/api/", "/metrics")


def register(app: Flask) -> None:
    """Serve the page's routes (``/``, ``/signin``, ``/bindings/<id>``, ``/runs/<id>``,
    ``/activity``, ``/owners``), its static files under ``/ui/static`` and
    ``/favicon.ico``; a path no route matches is an HTML page too, unless it is the API's.

    The blueprint's own handlers answer errors of its routes; a request no route
    matched belongs to no blueprint, so the app's handler answers it: it is wrapped here
    (the API registered it first) to render the page for page paths and keep the API's
    problem JSON for the others."""
    app.register_blueprint(blueprint)
    api_handler = app.error_handler_spec[None][None].get(HTTPException)
    if api_handler is not None:
        app.register_error_handler(HTTPException, _page_or(api_handler))


def _page_or(api_handler: Callable[[Any], Any]) -> Callable[[HTTPException], Any]:
    def handle(error: HTTPException) -> Any:
        if request.blueprint is None and not request.path.startswith(NOT_PAGES):
            # Outside the blueprint its after_request does not run: the same headers.
            response = make_response(problem_page(error))
            response.headers["Cache-Control"] = "no-store"
            response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
            response.headers["X-Frame-Options"] = "DENY"
            return response
        return api_handler(error)

    return handle
