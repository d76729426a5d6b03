"""Find Runs that nobody is executing: their worker died, or their message was lost."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import and_, or_, select

from reposync.models import Binding, Run
from reposync.service.context import ServiceContext, Step
from reposync.service.leases import database_now
from reposync.sync.vocabulary import ACTIVE_RUN_STATUSES, RunStatus


def stalled_runs(ctx: ServiceContext, limit: int = 100) -> list[Step]:
    """Active Runs whose lease expired, or queued Runs never claimed within the grace.

    Dispatching a resume step for each is safe even when two ticks do it: the claim
    lets exactly one execution through.
    """
    with ctx.db.session() as session:
        now = database_now(session)
        grace = now - timedelta(seconds=ctx.settings.dispatch_grace)
        rows = session.execute(
            select(Run.id)
            .join(Binding, Binding.id == Run.binding_id)
            .where(
                Run.status.in_([s.value for s in ACTIVE_RUN_STATUSES]),
                or_(
                    and_(Binding.lease_run_id == Run.id, Binding.lease_expires_at < now),
                    and_(  # never claimed, or deferred by a rate limit until now
                        Run.status == RunStatus.QUEUED.value,
                        Binding.lease_run_id.is_(None),
                        or_(
                            and_(Run.retry_at.is_(None), Run.created_at < grace),
                            Run.retry_at <= now,
                        ),
                    ),
                    and_(
                        Run.status == RunStatus.RUNNING.value,
                        or_(Binding.lease_run_id.is_(None), Binding.lease_run_id != Run.id),
                    ),
                ),
            )
            .order_by(Run.id)
            .limit(limit)
        ).scalars()
        return [Step(run_id, None, None) for run_id in rows]
