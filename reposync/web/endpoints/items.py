"""``GET /runs/{id}/items``: a Run's items, one object's change each, by cursor."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.queries import run_items
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import page
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.items import RunItemPageSchema, RunItemQueryArgsSchema

blueprint = Blueprint("items", __name__, description="What a Run changes, object by object")
blueprint.before_request(load_user)


@blueprint.route(f"/runs/{id_rule('run_id')}/items")
class RunItemsView(MethodView):
    @blueprint.doc(operationId="list_run_items")
    @blueprint.arguments(RunItemQueryArgsSchema, location="query")
    @blueprint.response(200, RunItemPageSchema)
    @documents(blueprint, 401, 404)
    def get(self, args: dict[str, Any], run_id: int) -> Any:
        """List a Run's items in id order, optionally by state and object type."""
        rows = run_items(service_context(), current_user(), run_id, **args)
        return page(rows, args["limit"])
