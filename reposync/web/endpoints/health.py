"""``GET /health``: is the API up, and can it reach its database."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields

from reposync.errors import DatabaseUnavailable
from reposync.models.db import Database

blueprint = Blueprint("health", __name__, description="Liveness and readiness")


class HealthSchema(Schema):
    status = fields.String(required=True)
    database = fields.String(required=True)


@blueprint.route("/health")
class Health(MethodView):
    @blueprint.doc(operationId="get_health")
    @blueprint.doc(security=[])
    @blueprint.response(200, HealthSchema)
    @blueprint.alt_response(503, schema=HealthSchema, description="database unreachable")
    def get(self) -> Any:
        """Report whether the API can serve requests."""
        db: Database = current_app.extensions["reposync.db"]
        try:
            db.check_connection()
        except DatabaseUnavailable:
            retry = {"Retry-After": str(DatabaseUnavailable.retry_after)}
            return {"status": "degraded", "database": "unreachable"}, 503, retry
        return {"status": "ok", "database": "ok"}
