"""The HTTP API application factory: ``create_app(settings, ctx=...)``.

Views reach the database only through ``reposync.service``, with the ``ServiceContext``
the factory was given (tests pass theirs; ``reposync api`` lets the factory build one:
dispatching to Celery, or in the embedded mode to an in-process executor).
"""

from __future__ import annotations

import http
import re
from collections import Counter
from typing import Any

# swagger-ui-bundle ships no types and has no stubs package (one path is used).
import swagger_ui_bundle  # type: ignore[import-untyped]
from flask import Flask, Response, send_from_directory
from flask_smorest import Api
from flask_smorest.utils import prepare_response
from werkzeug.middleware.proxy_fix import ProxyFix

from reposync.config import Settings
from reposync.models.db import Database
from reposync.service.context import ServiceContext
from reposync.service.scheduling.executor import InProcessExecutor
from reposync.web.endpoints import (
    bindings,
    events,
    github,
    health,
    items,
    overview,
    owner_bindings,
    reconcile,
    runs,
    subscriptions,
    users,
    watches,
    webhooks,
)
from reposync.web.endpoints.metrics import register as register_metrics
from reposync.web.errors import PROBLEM_CONTENT_TYPE, register_error_handlers
from reposync.web.limits import MAX_BODY_BYTES, refuse_deep_json
from reposync.web.pages import register as register_pages
from reposync.web.schemas.common import ProblemSchema
from reposync.web.schemas.subscriptions import PAYLOAD_SCHEMAS
from reposync.web.streams import StreamSlots

API_PREFIX = "/api/ext/v1/sync"
SWAGGER_ASSETS = "docs-assets"

#: An operationId is the name generated clients give an operation (``list_bindings``), so
#: it is a Python/JavaScript identifier in snake_case: verb first, then the resource.
OPERATION_ID = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

#: Server-Sent Events: how often a Run's feed reads the database, how long one stream
#: lasts at most (clients reconnect with Last-Event-ID; proxies never see an endless
#: request), and how often a quiet stream sends a comment to keep proxies from closing it.
SSE_DEFAULTS = {
    "REPOSYNC_SSE_POLL_SECONDS": 1.0,
    "REPOSYNC_SSE_MAX_SECONDS": 25.0,
    "REPOSYNC_SSE_KEEPALIVE_SECONDS": 10.0,
}


class ReposyncApi(Api):
    """flask-smorest's Api speaking problem+json for every error, documented as such."""

    ERROR_SCHEMA = ProblemSchema

    def check_operation_ids(self) -> None:
        """Refuse a document in which an operation has no explicit ``operationId``, or
        shares one, or has one that is not snake_case.

        Generated clients name their functions after these ids, so they are wire
        protocol: they are written where each operation is declared
        (``@blueprint.doc(operationId=...)``), never derived from the URL, and a new
        endpoint that forgets its id fails at start-up instead of shipping a derived name.
        """
        ids: Counter[str] = Counter()
        problems: list[str] = []
        for path, item in self.spec.to_dict()["paths"].items():
            for method in HTTP_METHODS:
                if method not in item:
                    continue
                operation_id = item[method].get("operationId")
                if operation_id is None:
                    problems.append(f"{method.upper()} {path} has no operationId")
                elif not OPERATION_ID.fullmatch(operation_id):
                    problems.append(f"{method.upper()} {path}: {operation_id!r} is not snake_case")
                else:
                    ids[operation_id] += 1
        problems.extend(
            f"operationId {name!r} is used {n} times" for name, n in ids.items() if n > 1
        )
        if problems:
            raise RuntimeError("the OpenAPI document's operations: " + "; ".join(problems))

    def _register_error_handlers(self) -> None:
        register_error_handlers(self._app)

    def _register_responses(self) -> None:
        for status in http.HTTPStatus:
            response: dict[str, Any] = {"description": status.phrase}
            if status >= 400:
                response["schema"] = self.ERROR_SCHEMA
            prepare_response(response, self.spec, PROBLEM_CONTENT_TYPE)
            self.spec.components.response(status.name, response, lazy=True)
        default = {"description": "Any error", "schema": self.ERROR_SCHEMA}
        prepare_response(default, self.spec, PROBLEM_CONTENT_TYPE)
        self.spec.components.response(self.DEFAULT_ERROR_RESPONSE_NAME, default, lazy=True)


def default_context(settings: Settings, db: Database | None = None) -> ServiceContext:
    """The API's own context: the configured database; Runs dispatched to Celery, or to
    an in-process executor when ``settings.runs_in_process`` (the embedded mode with no
    broker). That executor is not started here: ``reposync api`` starts it in its one
    worker process (``web/server.py``), so building an app starts no thread."""
    db = db or Database(settings.effective_database_url)
    if settings.runs_in_process:
        return InProcessExecutor(settings, db).context
    from reposync.tasks.base import CeleryDispatcher

    return ServiceContext(settings=settings, db=db, dispatcher=CeleryDispatcher())


def create_app(
    settings: Settings | None = None,
    *,
    ctx: ServiceContext | None = None,
    db: Database | None = None,
) -> Flask:
    if ctx is None:
        ctx = default_context(settings or Settings.from_env(), db)
    settings = settings or ctx.settings
    app = Flask(__name__)
    app.config.update(
        API_TITLE="reposync",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=API_PREFIX,
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="docs",
        # Served by reposync itself: the machine may be offline (a CDN left /docs blank).
        OPENAPI_SWAGGER_UI_URL=f"{API_PREFIX}/{SWAGGER_ASSETS}/",
        # ...and without the online validator's badge, an image from validator.swagger.io.
        OPENAPI_SWAGGER_UI_CONFIG={"validatorUrl": None},
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        API_SPEC_OPTIONS={
            "info": {
                "description": "Operate reposync: Bindings, Runs and their progress; "
                "webhooks out (docs/webhooks.md); webhooks in (POST /webhooks/github, "
                "/webhooks/forgejo, /webhooks/gitea)."
            },
            "components": {
                "securitySchemes": {
                    "bearerAuth": {"type": "http", "scheme": "bearer"},
                    **webhooks.SECURITY_SCHEMES,
                }
            },
            "security": [{"bearerAuth": []}],
        },
        **SSE_DEFAULTS,
    )
    app.extensions["reposync.settings"] = settings
    app.extensions["reposync.streams"] = StreamSlots(
        settings.api_max_streams, settings.api_streams_per_user
    )
    app.extensions["reposync.db"] = ctx.db
    app.extensions["reposync.ctx"] = ctx
    api = ReposyncApi(app)
    modules = (health, overview, bindings, reconcile, runs, items, events, users, watches)
    for module in (*modules, subscriptions, webhooks):
        api.register_blueprint(module.blueprint, url_prefix=API_PREFIX)
    # Whole owners (issue 24): bind-all's API.
    api.register_blueprint(owner_bindings.blueprint, url_prefix=API_PREFIX)
    # Connect GitHub (issue 15): the self-service flow and the user's repository picker.
    api.register_blueprint(github.blueprint, url_prefix=API_PREFIX)
    for name, schema in PAYLOAD_SCHEMAS.items():  # what webhook deliveries carry
        api.spec.components.schema(name, schema=schema)
    api.check_operation_ids()
    app.add_url_rule(f"{API_PREFIX}/{SWAGGER_ASSETS}/<path:name>", "swagger_assets", _swagger_asset)
    app.before_request(refuse_deep_json)
    # Prometheus's /metrics (issue 15): outside the JSON API and its OpenAPI document.
    register_metrics(app, settings)
    # The web management page (issue 15): `/` and its pages, outside the OpenAPI document.
    register_pages(app)
    app.after_request(_no_sniffing)
    if settings.proxy_hops:
        # The client and scheme as the proxies forwarded them (the throttle counts the
        # client; cookies are Secure over HTTPS); without proxies declared, a client's
        # own X-Forwarded-For is ignored.
        hops = settings.proxy_hops
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops)  # type: ignore[method-assign]
    return app


def _no_sniffing(response: Response) -> Response:
    """Every response (JSON, problem, page, asset, metrics, event stream) is what its
    Content-Type says: a browser must not guess a script or a page from its bytes."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _swagger_asset(name: str) -> Response:
    return send_from_directory(swagger_ui_bundle.swagger_ui_path, name, max_age=86400)
