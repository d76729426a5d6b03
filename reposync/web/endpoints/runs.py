"""``/runs``: create, list and show Runs, their progress; cancel, retry and recover them.

Reads show the Runs of the Bindings the user may see. Creating, cancelling, retrying and
recovering need the admin role or a grant on the Run's Binding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flask import url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.lifecycle import AuditMode, RunMode
from reposync.models import Run
from reposync.service.accounts.authorization import authorize_binding, authorize_run
from reposync.service.queries import get_run_for, list_runs, run_progress
from reposync.service.recovery import recover_run
from reposync.service.runs import enqueue_run, request_cancel, retry_run
from reposync.service.scheduling.waits import waiting
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import page
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.runs import (
    RecoverySchema,
    RunCreateSchema,
    RunPageSchema,
    RunProgressSchema,
    RunQueryArgsSchema,
    RunSchema,
)

blueprint = Blueprint("runs", __name__, description="Executions of a Binding")
blueprint.before_request(load_user)

LOCATION = {"Location": {"schema": {"type": "string"}}}


def _accepted(run: Run) -> tuple[Any, int, dict[str, str]]:
    return _with_waiting(run), 202, {"Location": url_for("runs.RunView", run_id=run.id)}


class _Waiting:
    """A Run and where it waits (``waiting``), as the Run schemas dump it."""

    def __init__(self, run: Run, where: str) -> None:
        self._run = run
        self.waiting = where

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)


def _with_waiting(run: Run) -> Any:
    return _all_with_waiting([run])[0]


def _all_with_waiting(runs: Sequence[Run]) -> list[Any]:
    found = waiting(service_context(), runs)
    return [_Waiting(run, found[run.id]) if run.id in found else run for run in runs]


@blueprint.route(f"/bindings/{id_rule('binding_id')}/runs")
class BindingRunsView(MethodView):
    @blueprint.doc(operationId="create_binding_run")
    @blueprint.arguments(RunCreateSchema)
    @blueprint.response(202, RunSchema, headers=LOCATION)
    @documents(blueprint, 401, 404, 409)
    def post(self, args: dict[str, Any], binding_id: int) -> Any:
        """Queue a Run of the Binding; a worker executes it (admin, or a grant on the Binding).

        409 when the Binding has an active Run or an unresolved unknown write.
        """
        ctx = service_context()
        authorize_binding(ctx, current_user(), binding_id)
        run = enqueue_run(
            ctx, binding_id, mode=RunMode(args["mode"]), audit_mode=AuditMode(args["audit_mode"])
        )
        return _accepted(run)


@blueprint.route("/runs")
class RunsView(MethodView):
    @blueprint.doc(operationId="list_runs")
    @blueprint.arguments(RunQueryArgsSchema, location="query")
    @blueprint.response(200, RunPageSchema)
    @documents(blueprint, 401)
    def get(self, args: dict[str, Any]) -> Any:
        """List the visible Runs, newest first; ``after_id`` continues below the last id."""
        rows = list_runs(service_context(), current_user(), **args)
        return page(_all_with_waiting(rows), args["limit"])


@blueprint.route(f"/runs/{id_rule('run_id')}")
class RunView(MethodView):
    @blueprint.doc(operationId="get_run")
    @blueprint.response(200, RunSchema)
    @documents(blueprint, 401, 404)
    def get(self, run_id: int) -> Any:
        """Show one Run: stage, status, counters and report."""
        return _with_waiting(get_run_for(service_context(), current_user(), run_id))


@blueprint.route(f"/runs/{id_rule('run_id')}/progress")
class ProgressView(MethodView):
    @blueprint.doc(operationId="get_run_progress")
    @blueprint.response(200, RunProgressSchema)
    @documents(blueprint, 401, 404)
    def get(self, run_id: int) -> Any:
        """Item totals and per-type state counts of a Run (no item is loaded)."""
        return run_progress(service_context(), current_user(), run_id)


@blueprint.route(f"/runs/{id_rule('run_id')}/cancel")
class CancelView(MethodView):
    @blueprint.doc(operationId="cancel_run")
    @blueprint.response(200, RunSchema)
    @documents(blueprint, 401, 404)
    def post(self, run_id: int) -> Any:
        """Ask an active Run to stop (admin, or a grant): between two steps, or within
        about a second while git pushes or fetches (the git child is stopped and what it
        may have written is read back); a forge API batch already sent finishes first.

        A Run that already ended is returned unchanged.
        """
        ctx = service_context()
        authorize_run(ctx, current_user(), run_id)
        return _with_waiting(request_cancel(ctx, run_id))


@blueprint.route(f"/runs/{id_rule('run_id')}/retry")
class RetryView(MethodView):
    @blueprint.doc(operationId="retry_run")
    @blueprint.response(202, RunSchema, headers=LOCATION)
    @documents(blueprint, 401, 404, 409)
    def post(self, run_id: int) -> Any:
        """Queue a new Run like this one, with it as parent (admin, or a grant on the Binding)."""
        ctx = service_context()
        authorize_run(ctx, current_user(), run_id)
        return _accepted(retry_run(ctx, run_id))


@blueprint.route(f"/runs/{id_rule('run_id')}/recover")
class RecoverView(MethodView):
    @blueprint.doc(operationId="recover_run")
    @blueprint.response(200, RecoverySchema)
    @documents(blueprint, 401, 404, 409)
    def post(self, run_id: int) -> Any:
        """Prove the outcome of the Run's unknown writes by read-back (admin, or a grant).

        Recovery never re-sends a write whose outcome it cannot prove.
        """
        ctx = service_context()
        authorize_run(ctx, current_user(), run_id)
        return {"run_id": run_id, "counts": recover_run(ctx, run_id)}
