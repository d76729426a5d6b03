"""``/bindings``: create, list, show, change and delete Bindings; hand authority over.

Reads show the Bindings the user may see; every change needs the admin role, but for
one: a member creates a Binding of repositories they reach through Connect GitHub, each
side naming its connection (``authorization.authorize_connections``).
"""

from __future__ import annotations

from typing import Any

from flask import url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.accounts.authorization import authorize_binding, authorize_connections
from reposync.service.accounts.users import grant
from reposync.service.bindings import (
    SyncRequest,
    bind_pair,
    confirm_visibility,
    delete_binding,
    update_binding,
)
from reposync.service.confinement import confine
from reposync.service.handoff import start_handoff
from reposync.service.queries import get_binding_for, list_bindings
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web.auth import admin_only, current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import page
from reposync.web.schemas.bindings import (
    BindingCreateSchema,
    BindingPageSchema,
    BindingQueryArgsSchema,
    BindingSchema,
    BindingUpdateSchema,
    HandoffSchema,
)
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.runs import RunSchema

blueprint = Blueprint("bindings", __name__, description="Pairs of repositories kept in sync")
blueprint.before_request(load_user)


def _location(binding_id: int) -> dict[str, str]:
    return {"Location": url_for("bindings.BindingView", binding_id=binding_id)}


@blueprint.route("/bindings")
class BindingsView(MethodView):
    @blueprint.doc(operationId="list_bindings")
    @blueprint.arguments(BindingQueryArgsSchema, location="query")
    @blueprint.response(200, BindingPageSchema)
    @documents(blueprint, 401)
    def get(self, args: dict[str, Any]) -> Any:
        """List the visible Bindings, oldest first, optionally of one repository."""
        rows = list_bindings(service_context(), current_user(), **args)
        return page(rows, args["limit"])

    @blueprint.doc(operationId="create_binding")
    @blueprint.arguments(BindingCreateSchema)
    @blueprint.response(201, BindingSchema, headers={"Location": {"schema": {"type": "string"}}})
    @blueprint.alt_response(200, schema=BindingSchema, description="The pair's existing Binding")
    @documents(blueprint, 400, 401, 403, 404, 409)
    def post(self, args: dict[str, Any]) -> Any:
        """Create the Binding of two repositories (200 with the pair's Binding when it
        exists already).

        ``source`` becomes the authority; a missing target repository is created. A
        target more public than the source (a private repository mirrored to a public
        one) needs ``confirm_visibility: true``: without it the request is refused (409
        ``visibility_unconfirmed``) and nothing is written; with it the current
        visibilities are confirmed at once (also on the pair's existing Binding). A side's
        ``*_connection_id`` (``GET /github/repositories`` lists one per repository) is the
        GitHub App installation whose token opens it; omitted, the configured credentials.

        An admin may name any connection. A member may create a Binding only when each
        side names a connection Connect GitHub granted them that reaches its repository
        (403 when a side names none, 404 ``connection_not_granted`` otherwise; no target
        is created for a member); they are then granted both repositories, so they see
        the Binding and may run it.
        """
        user, ctx = current_user(), service_context()
        policy = args["ref_conflict_policy"]
        admit = authorize_connections(
            ctx,
            user,
            (
                (args["source"], args["source_connection_id"]),
                (args["target"], args["target_connection_id"]),
            ),
        )
        sides = (
            (confine(args["source"], ctx.settings), args["source_connection_id"]),
            (confine(args["target"], ctx.settings), args["target_connection_id"]),
        )
        bound, created = bind_pair(
            ctx,
            SyncRequest(
                sides[0][0],
                sides[1][0],
                conflict_policy=RefConflictPolicy(policy) if policy else None,
                source_connection=sides[0][1],
                target_connection=sides[1][1],
                create_target=admit is None,
                confirm_visibility=args["confirm_visibility"],
            ),
            admit,
        )
        if admit is not None:  # a member: they see (and may run) what they bound
            grant(ctx, user.id, bound.a_provider, bound.a_repository_id)
            grant(ctx, user.id, bound.b_provider, bound.b_repository_id)
        # bind() answers the row as it found it: read it back to show what was stored.
        status = 201 if created else 200
        return get_binding_for(ctx, user, bound.id), status, _location(bound.id)


@blueprint.route(f"/bindings/{id_rule('binding_id')}")
class BindingView(MethodView):
    @blueprint.doc(operationId="get_binding")
    @blueprint.response(200, BindingSchema)
    @documents(blueprint, 401, 404)
    def get(self, binding_id: int) -> Any:
        """Show one Binding."""
        return get_binding_for(service_context(), current_user(), binding_id)

    @blueprint.doc(operationId="update_binding")
    @admin_only
    @blueprint.arguments(BindingUpdateSchema)
    @blueprint.response(200, BindingSchema)
    @documents(blueprint, 400, 401, 403, 404, 409)
    def patch(self, changes: dict[str, Any], binding_id: int) -> Any:
        """Change the schedule, sync switch, conflict policy or visibility confirmation; admin only.

        ``sync_enabled: true`` needs a successful full apply in the current authority
        epoch and no active Run or unresolved unknown write (409 otherwise).
        ``confirm_visibility: true`` confirms the current visibilities; ``false`` withdraws
        the confirmation.
        """
        ctx = service_context()
        authorize_binding(ctx, current_user(), binding_id)
        confirm = changes.pop("confirm_visibility", None)
        if confirm is True:
            confirm_visibility(ctx, binding_id)
        elif confirm is False:
            changes["visibility_confirmation"] = None
        if "ref_conflict_policy" in changes:
            changes["ref_conflict_policy"] = RefConflictPolicy(changes["ref_conflict_policy"])
        return update_binding(ctx, binding_id, **changes)

    @blueprint.doc(operationId="delete_binding")
    @admin_only
    @blueprint.response(204)
    @documents(blueprint, 401, 403, 404, 409)
    def delete(self, binding_id: int) -> Any:
        """Delete a Binding with its Runs and links; admin only.

        Refused (409) while a Run is active or a write's outcome is unknown.
        """
        ctx = service_context()
        authorize_binding(ctx, current_user(), binding_id)
        delete_binding(ctx, binding_id)
        return None


@blueprint.route(f"/bindings/{id_rule('binding_id')}/handoff")
class HandoffView(MethodView):
    @blueprint.doc(operationId="hand_off_binding")
    @admin_only
    @blueprint.arguments(HandoffSchema, required=False)
    @blueprint.response(202, RunSchema, headers={"Location": {"schema": {"type": "string"}}})
    @documents(blueprint, 401, 403, 404, 409)
    def post(self, args: dict[str, Any], binding_id: int) -> Any:
        """Hand authority to the standby: queue a handoff Run; admin only.

        The Run syncs forward in full, proves the reverse direction has nothing to do and
        flips the authority in one fenced transaction (409 when the Binding forbids it).
        An authority reposync cannot freeze (GitHub) needs ``confirm_writes_stopped``.
        """
        ctx = service_context()
        authorize_binding(ctx, current_user(), binding_id)
        run = start_handoff(
            ctx, binding_id, writes_stopped=args.get("confirm_writes_stopped", False)
        )
        return run, 202, {"Location": url_for("runs.RunView", run_id=run.id)}
