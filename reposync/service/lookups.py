"""The Binding and Run rows that operations start from, and a Binding side as an endpoint.

Kept apart from the domain operations (``bindings``, ``runs``) because everything needs
them, the pipeline included: a lookup here never imports an operation, so no operation
and no stage has to import another one only to find a row.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reposync.errors import RecordNotFound
from reposync.lifecycle import ACTIVE_RUN_STATUSES, Side
from reposync.models import Binding, Run
from reposync.providers.base import EndpointSpec


def get_binding(session: Session, binding_id: int) -> Binding:
    binding = session.get(Binding, binding_id)
    if binding is None:
        raise RecordNotFound(f"binding {binding_id} does not exist")
    return binding


def endpoint_spec(binding: Binding, side: Side) -> EndpointSpec:
    provider, repository_id, locator, connection_id = binding.side(side)
    return EndpointSpec(provider, locator, repository_id, connection_id)


def get_run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise RecordNotFound(f"run {run_id} does not exist")
    return run


def active_run(session: Session, binding_id: int) -> Run | None:
    return session.execute(
        select(Run).where(
            Run.binding_id == binding_id,
            Run.status.in_([s.value for s in ACTIVE_RUN_STATUSES]),
        )
    ).scalar_one_or_none()
