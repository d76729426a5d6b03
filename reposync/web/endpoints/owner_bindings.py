"""``/owner-bindings``: bind two owners whole, repository by repository; their passes.

Admin only, reads too: an owner binding reaches every repository of two owners, past
any member's grants. Creating one lists both owners in the request (an owner that does
not exist is 404 with nothing written) and hands its first pass to a worker (202); a
dry run answers what a pass would do (200) and writes nothing. ``local:`` owners, and
each repository bound, stay under the configured local roots.
"""

from __future__ import annotations

from typing import Any

from flask import jsonify, make_response, url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.bindings import UNSET
from reposync.service.owners import (
    OwnerRequest,
    bind_all,
    delete_owner_binding,
    get_owner_binding,
    list_owner_bindings,
    members_of,
    request_pass,
    run_pass,
)
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web.auth import admin_only, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import page
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.owner_bindings import (
    OwnerBindingCreateSchema,
    OwnerBindingMemberListSchema,
    OwnerBindingPageSchema,
    OwnerBindingQueryArgsSchema,
    OwnerBindingResultSchema,
    OwnerBindingSchema,
    PassCreateSchema,
    PassReportSchema,
)

blueprint = Blueprint(
    "owner_bindings",
    __name__,
    description="Whole owners (organizations, users, directories) bound repository by repository",
)
blueprint.before_request(load_user)

LOCATION = {"Location": {"schema": {"type": "string"}}}


def _location(owner_binding_id: int) -> dict[str, str]:
    return {
        "Location": url_for("owner_bindings.OwnerBindingView", owner_binding_id=owner_binding_id)
    }


@blueprint.route("/owner-bindings")
class OwnerBindingsView(MethodView):
    @blueprint.doc(operationId="list_owner_bindings")
    @admin_only
    @blueprint.arguments(OwnerBindingQueryArgsSchema, location="query")
    @blueprint.response(200, OwnerBindingPageSchema)
    @documents(blueprint, 401, 403)
    def get(self, args: dict[str, Any]) -> Any:
        """List the owner bindings, oldest first; admin only."""
        rows = list_owner_bindings(service_context(), **args)
        return page(rows, args["limit"])

    @blueprint.doc(operationId="create_owner_binding")
    @admin_only
    @blueprint.arguments(OwnerBindingCreateSchema)
    @blueprint.response(202, OwnerBindingResultSchema, headers=LOCATION)
    @blueprint.alt_response(
        200, schema=OwnerBindingResultSchema, description="dry_run: what a pass would do"
    )
    @documents(blueprint, 400, 401, 403, 404, 409, 422)
    def post(self, args: dict[str, Any]) -> Any:
        """Bind every repository of the source owner to its namesake of the target owner,
        and keep doing so for new ones; admin only.

        Both owners are listed first (404 ``owner_not_found`` when one does not exist,
        nothing written). The owner binding is then created (or, for the pair's existing
        one, given the options sent) and its first pass queued (202): each source
        repository's target is created where the forge can (never more public than its
        source), bound when it exists empty, reported when it holds data; each Binding
        made gets ``schedule_cron`` and its first Run. ``GET`` it for the pass's report.
        ``dry_run`` answers what a pass would do (200) and writes nothing.
        """
        ctx = service_context()
        policy = args["ref_conflict_policy"]
        request = OwnerRequest(
            args["source"],
            args["target"],
            dry_run=args["dry_run"],
            conflict_policy=RefConflictPolicy(policy) if policy else None,
            schedule_cron=args["schedule_cron"],
            pass_cron=args.get("pass_cron", UNSET),
            confirm_visibility=args["confirm_visibility"],
            source_connection=args["source_connection_id"],
            target_connection=args["target_connection_id"],
            confined=True,
        )
        row, report = bind_all(ctx, request, run_now=False)
        if row is None:
            assert report is not None
            return {"owner_binding": None, "pass_report": report.to_dict()}, 200
        return {"owner_binding": row, "pass_report": None}, 202, _location(row.id)


@blueprint.route(f"/owner-bindings/{id_rule('owner_binding_id')}")
class OwnerBindingView(MethodView):
    @blueprint.doc(operationId="get_owner_binding")
    @admin_only
    @blueprint.response(200, OwnerBindingSchema)
    @documents(blueprint, 401, 403, 404)
    def get(self, owner_binding_id: int) -> Any:
        """Show one owner binding with its last pass's report; admin only."""
        return get_owner_binding(service_context(), owner_binding_id)

    @blueprint.doc(operationId="delete_owner_binding")
    @admin_only
    @blueprint.response(204)
    @documents(blueprint, 401, 403, 404)
    def delete(self, owner_binding_id: int) -> Any:
        """Forget the owner binding; the Bindings it made stay (delete them one by one);
        admin only."""
        delete_owner_binding(service_context(), owner_binding_id)
        return None


@blueprint.route(f"/owner-bindings/{id_rule('owner_binding_id')}/members")
class OwnerBindingMembersView(MethodView):
    @blueprint.doc(operationId="list_owner_binding_members")
    @admin_only
    @blueprint.response(200, OwnerBindingMemberListSchema)
    @documents(blueprint, 401, 403, 404)
    def get(self, owner_binding_id: int) -> Any:
        """List the source repositories the owner binding bound and their Bindings, in
        the order they were bound; admin only."""
        return {"items": members_of(service_context(), owner_binding_id)}


@blueprint.route(f"/owner-bindings/{id_rule('owner_binding_id')}/passes")
class OwnerBindingPassesView(MethodView):
    @blueprint.doc(operationId="create_owner_binding_pass")
    @admin_only
    @blueprint.arguments(PassCreateSchema, required=False)
    @blueprint.response(202, OwnerBindingSchema, headers=LOCATION)
    @blueprint.alt_response(
        200, schema=PassReportSchema, description="dry_run: what the pass would do"
    )
    @documents(blueprint, 401, 403, 404, 409)
    def post(self, args: dict[str, Any], owner_binding_id: int) -> Any:
        """Run a pass now: bind the source repositories that are new since the last one
        (202, handed to a worker; ``GET`` the owner binding for its report); admin only.

        ``dry_run`` answers what the pass would do (200) and writes nothing; 409
        ``owner_binding_busy`` while another pass of it runs.
        """
        ctx = service_context()
        if args.get("dry_run"):  # answered as it is: the 202's schema is another
            report = run_pass(ctx, owner_binding_id, dry_run=True).to_dict()
            return make_response(jsonify(PassReportSchema().dump(report)), 200)
        return request_pass(ctx, owner_binding_id), 202, _location(owner_binding_id)
