"""``GET /overview``: every Binding the user may see, its health and Runs, in one answer."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.queries import overview
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.schemas.overview import OverviewSchema

blueprint = Blueprint("overview", __name__, description="Bindings at a glance")
blueprint.before_request(load_user)


@blueprint.route("/overview")
class Overview(MethodView):
    @blueprint.doc(operationId="get_overview")
    @blueprint.response(200, OverviewSchema)
    @documents(blueprint, 401)
    def get(self) -> Any:
        """Visible Bindings with connection health, latest and active Run and progress.

        The number of database queries does not depend on the number of Bindings.
        """
        return {"bindings": overview(service_context(), current_user())}
