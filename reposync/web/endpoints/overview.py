"""``GET /overview``: every Binding the user may see, its health and Runs, in one answer."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.overview import overview
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import next_cursor
from reposync.web.schemas.overview import OverviewArgsSchema, OverviewSchema

blueprint = Blueprint("overview", __name__, description="Bindings at a glance")
blueprint.before_request(load_user)


@blueprint.route("/overview")
class Overview(MethodView):
    @blueprint.doc(operationId="get_overview")
    @blueprint.arguments(OverviewArgsSchema, location="query")
    @blueprint.response(200, OverviewSchema)
    @documents(blueprint, 401)
    def get(self, args: dict[str, Any]) -> Any:
        """Visible Bindings with connection health, latest and active Run and progress,
        in Binding id order; all of them, or a page with ``limit`` (and ``after_id``).

        The number of database queries does not depend on the number of Bindings.
        """
        limit = args.get("limit")
        entries = overview(
            service_context(), current_user(), after_id=args.get("after_id"), limit=limit
        )
        cursor = (
            next_cursor(entries, limit, lambda entry: entry["binding"].id)
            if limit is not None
            else None
        )
        return {"bindings": entries, "next_after_id": cursor}
