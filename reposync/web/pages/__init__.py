"""The web management page served by ``reposync api`` at ``/`` (issue 15).

Server-rendered Jinja templates and a little plain JavaScript, every asset shipped in
this package (the machine may be offline). A Flask blueprint outside the OpenAPI
document: it is for people, the JSON API under ``/api/ext/v1/sync`` is for programs. It
reads and changes through the same service layer and authorization as the API.
"""

from __future__ import annotations

from flask import Flask

from reposync.web.pages import owners, runs, views  # noqa: F401  (their routes, on the blueprint)
from reposync.web.pages.common import blueprint


def register(app: Flask) -> None:
    """Serve the page's routes (``/``, ``/signin``, ``/bindings/<id>``, ``/runs/<id>``,
    ``/activity``, ``/owners``) and its static files under ``/ui/static``."""
    app.register_blueprint(blueprint)
