"""``/watches``: watch a branch of a repository; each watch keeps a revision cursor.

Any user may watch a repository it may see (admins any, members those granted to them);
a watch is seen by its creator (while the grant lasts) and by admins. A repository that
does not exist and one the caller may not see answer alike (404).
"""

from __future__ import annotations

from typing import Any

from flask import url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.accounts.authorization import authorize_repository, authorize_watch
from reposync.service.confinement import confine
from reposync.service.queries import get_watch_for, list_watches
from reposync.service.webhooks.watches import create_watch, delete_watch, resolve_repository
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import page
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.watches import (
    WatchCreateSchema,
    WatchPageSchema,
    WatchQueryArgsSchema,
    WatchSchema,
)

blueprint = Blueprint("watches", __name__, description="Branch watches and revision cursors")
blueprint.before_request(load_user)


@blueprint.route("/watches")
class WatchesView(MethodView):
    @blueprint.doc(operationId="list_watches")
    @blueprint.arguments(WatchQueryArgsSchema, location="query")
    @blueprint.response(200, WatchPageSchema)
    @documents(blueprint, 401)
    def get(self, args: dict[str, Any]) -> Any:
        """List the visible watches, oldest first, optionally of one repository or branch."""
        rows = list_watches(service_context(), current_user(), **args)
        return page(rows, args["limit"])

    @blueprint.doc(operationId="create_watch")
    @blueprint.arguments(WatchCreateSchema)
    @blueprint.response(201, WatchSchema, headers={"Location": {"schema": {"type": "string"}}})
    @blueprint.alt_response(200, schema=WatchSchema, description="The caller's existing watch")
    @documents(blueprint, 400, 401, 403, 404)
    def post(self, args: dict[str, Any]) -> Any:
        """Watch a branch (200 with the caller's watch when it exists already); admin, or a
        grant on the repository.

        Its cursor is empty until the first movement of the branch is observed.
        """
        ctx, user = service_context(), current_user()
        locator = confine(args["repository"], ctx.settings)
        repository = resolve_repository(ctx, locator)
        authorize_repository(ctx, user, repository.provider, repository.repository_id, locator)
        watch, created = create_watch(ctx, repository, args["branch"], created_by=user.id)
        location = {"Location": url_for("watches.WatchView", watch_id=watch.id)}
        return watch, 201 if created else 200, location


@blueprint.route(f"/watches/{id_rule('watch_id')}")
class WatchView(MethodView):
    @blueprint.doc(operationId="get_watch")
    @blueprint.response(200, WatchSchema)
    @documents(blueprint, 401, 404)
    def get(self, watch_id: int) -> Any:
        """Show one watch with its revision cursor."""
        return get_watch_for(service_context(), current_user(), watch_id)

    @blueprint.doc(operationId="delete_watch")
    @blueprint.response(204)
    @documents(blueprint, 401, 404)
    def delete(self, watch_id: int) -> Any:
        """Stop watching (the watch's creator, or an admin)."""
        ctx = service_context()
        authorize_watch(ctx, current_user(), watch_id)
        delete_watch(ctx, watch_id)
        return None
