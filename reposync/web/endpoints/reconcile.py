"""``/bindings/{id}/reconcile``: what a Run would change (dry run), or queue it (apply),
safely retried with an ``Idempotency-Key``.

Admin, or a grant on the Binding (as creating a Run). The rules of keys are the
service's (``service/idempotency.py``); this module only says how an answer looks.
"""

from __future__ import annotations

from typing import Any

from flask import Response, json, url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.lifecycle import AuditMode, RunMode
from reposync.models import Run
from reposync.service.accounts.authorization import authorize_binding
from reposync.service.idempotency import Answer, parse_key
from reposync.service.pipeline.proposal import Proposal
from reposync.service.reconcile import Reconciled, ReconcileRequest, reconcile
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.reconcile import (
    IdempotencyHeadersSchema,
    ProposalSchema,
    ReconcileResultSchema,
    ReconcileSchema,
)
from reposync.web.schemas.runs import RunSchema

blueprint = Blueprint("reconcile", __name__, description="Reconcile a Binding, idempotently")
blueprint.before_request(load_user)

#: Set on an answer given again for a retried key (Stripe's header).
REPLAYED = "Idempotent-Replayed"
HEADERS = {
    "Location": {"schema": {"type": "string"}, "description": "apply: the queued Run"},
    REPLAYED: {"schema": {"type": "string"}, "description": "true: the stored answer"},
}


def _render(result: Run | Proposal) -> Answer:
    """The answer to store and give: a proposal (200) or the queued Run (202)."""
    if isinstance(result, Proposal):
        body = {
            "mode": RunMode.DRY_RUN.value,
            "binding_id": result.binding_id,
            "proposal": ProposalSchema().dump(result),
            "run": None,
        }
        return Answer(200, body)
    body = {
        "mode": RunMode.APPLY.value,
        "binding_id": result.binding_id,
        "proposal": None,
        "run": RunSchema().dump(result),
    }
    return Answer(202, body, {"Location": url_for("runs.RunView", run_id=result.id)})


def _respond(done: Reconciled) -> Response:
    response = Response(
        json.dumps(done.answer.body), status=done.answer.status, mimetype="application/json"
    )
    for name, value in done.answer.headers.items():
        response.headers[name] = value
    if done.replayed:
        response.headers[REPLAYED] = "true"
    return response


@blueprint.route(f"/bindings/{id_rule('binding_id')}/reconcile")
class ReconcileView(MethodView):
    @blueprint.doc(operationId="reconcile_binding")
    @blueprint.arguments(IdempotencyHeadersSchema, location="headers")
    @blueprint.arguments(ReconcileSchema)
    @blueprint.response(200, ReconcileResultSchema, headers=HEADERS)
    @blueprint.alt_response(
        202, schema=ReconcileResultSchema, headers=HEADERS, description="apply: the Run is queued"
    )
    @documents(blueprint, 400, 401, 404, 409, 422)
    def post(self, headers: dict[str, Any], args: dict[str, Any], binding_id: int) -> Any:
        """Propose what a Run would change (dry_run, writes nothing) or queue it (apply);
        admin, or a grant on the Binding.

        ``dry_run`` answers 200 with the proposal: per object type the creates, updates,
        deletes and conflicts, and the items (at most ``item_limit``), computed in the
        request from both repositories; no Run, item or event is written. ``apply`` queues
        a normal Run as ``POST /bindings/{id}/runs`` does (409 binding_busy while a Run is
        active) and answers 202 with it; it needs an ``Idempotency-Key``. A retry with the
        key answers the first answer again (the Run as it was queued: follow Location).
        """
        ctx, user = service_context(), current_user()
        authorize_binding(ctx, user, binding_id)
        key = parse_key(headers.get("idempotency_key"), required=False)
        request = ReconcileRequest(
            RunMode(args["mode"]), AuditMode(args["audit_mode"]), args["item_limit"]
        )
        done = reconcile(ctx, binding_id, request, user_id=user.id, key=key, render=_render)
        return _respond(done)
