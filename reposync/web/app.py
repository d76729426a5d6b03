"""The HTTP API application factory (``create_app(settings)``)."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_smorest import Api

from reposync.config import Settings
from reposync.models.db import Database

API_PREFIX = "/api/ext/v1/sync"


def create_app(settings: Settings | None = None, *, db: Database | None = None) -> Flask:
    settings = settings or Settings.from_env()
    app = Flask(__name__)
    app.config.update(
        API_TITLE="reposync",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=API_PREFIX,
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="docs",
        OPENAPI_SWAGGER_UI_URL="https://cdn.jsdelivr.net/npm/swagger-ui-dist/",
    )
    app.extensions["reposync.settings"] = settings
    app.extensions["reposync.db"] = db or Database(settings.effective_database_url)
    api = Api(app)

    from reposync.web.health import blueprint as health

    api.register_blueprint(health, url_prefix=API_PREFIX)
    return app


def extension(app: Flask, name: str) -> Any:
    return app.extensions[f"reposync.{name}"]
