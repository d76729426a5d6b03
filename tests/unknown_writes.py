"""A Run that ended with one write whose outcome nobody observed: what a worker dying
between a push and its bookkeeping leaves. Recovery, handoff and the web page's Recover
button all start from it, so the tests plant the same thing."""

from __future__ import annotations

from sqlalchemy import insert

from reposync.models import Run, RunItem
from reposync.service.context import ServiceContext
from reposync.service.runs import create_run
from reposync.sync.canonical import git_ref_hash


def plant_unknown(
    ctx: ServiceContext, binding_id: int, ref: str, object_id: str, *, object_key: str = "branch x"
) -> int:
    """A blocked Run of ``binding_id`` whose one item updated ``ref`` to ``object_id``
    with an unknown result; returns the Run's id."""
    run = create_run(ctx, binding_id)
    with ctx.db.transaction() as session:
        session.execute(
            insert(RunItem).values(
                run_id=run.id,
                phase=0,
                object_type="git_ref",
                object_key=object_key,
                action="update",
                reason="changed",
                state="blocked",
                error_code="result_unknown",
                source_identity=ref,
                target_identity=ref,
                source_revision=object_id,
                desired_hash=git_ref_hash(object_id),
                verify_hash=git_ref_hash(object_id),
                intent={},
                attempt_count=1,
            )
        )
        stored = session.get(Run, run.id)
        assert stored is not None
        stored.status, stored.stage, stored.plan_complete = "blocked", "completed", True
    return run.id
