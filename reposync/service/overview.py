"""The overview: every Binding a user may see, its health and Runs, in a fixed number of
queries whatever their number (the API's ``GET /overview`` and the page's Overview and
Binding history).

The Runs here are summaries: a Run's report, I/O and inventory counts stay in the
database (with 1,000 Bindings, loading each latest Run's report was most of the
overview's time, issue 26).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import defer

from reposync.errors import (
    DatabaseUnavailable,
    GitTransportError,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    RepositoryMismatch,
)
from reposync.lifecycle import ACTIVE_RUN_STATUSES
from reposync.models import (
    Binding,
    Run,
    User,
)
from reposync.service.context import ServiceContext
from reposync.service.queries import Progress, get_binding_for, page_limit, progress_of, visible
from reposync.service.unknown_outcomes import unresolved_unknown_by_binding

#: The overview's Runs are summaries (``RunSummarySchema``): their report, I/O and
#: inventory counts stay in the database, raising if read (the report alone was most of
#: the overview's time with 1,000 Bindings, issue 26).
_SUMMARY_ONLY = tuple(
    defer(column, raiseload=True)
    for column in (Run.report, Run.io, Run.unsupported, Run.rejected, Run.planning_counters)
)


def overview(
    ctx: ServiceContext,
    user: User,
    *,
    binding_id: int | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Every visible Binding with its latest and active Run and their progress.

    Five queries whatever the number of Bindings: Bindings, latest Runs, active Runs,
    unresolved unknown writes, and one aggregate of the active Runs' items.
    ``binding_id``: only that one (the web page's Binding page shows the same entry);
    ``after_id`` and ``limit``: one page in id order (every Binding without a limit).
    """
    with ctx.db.session() as session:
        query = select(Binding).where(visible(user))
        if binding_id is not None:
            query = query.where(Binding.id == binding_id)
        if after_id is not None:
            query = query.where(Binding.id > after_id)
        query = query.order_by(Binding.id)
        if limit is not None:
            query = query.limit(limit)
        bindings = session.execute(query).scalars().all()
        ids = [b.id for b in bindings]
        latest_ids = (
            select(func.max(Run.id)).where(Run.binding_id.in_(ids)).group_by(Run.binding_id)
        )
        latest = {
            r.binding_id: r
            for r in session.execute(
                select(Run).options(*_SUMMARY_ONLY).where(Run.id.in_(latest_ids))
            ).scalars()
        }
        active = {
            r.binding_id: r
            for r in session.execute(
                select(Run)
                .options(*_SUMMARY_ONLY)
                .where(
                    Run.binding_id.in_(ids), Run.status.in_([s.value for s in ACTIVE_RUN_STATUSES])
                )
            ).scalars()
        }
        unknown = unresolved_unknown_by_binding(session, ids)
        progress = progress_of(ctx, [r.id for r in active.values()])
        result = []
        for binding in bindings:
            last = latest.get(binding.id)
            current = active.get(binding.id)
            result.append(
                {
                    "binding": binding,
                    "latest_run": last,
                    "active_run": current,
                    "active_progress": progress.get(current.id, Progress()).to_dict()
                    if current is not None
                    else None,
                    "connection_health": health(last),
                    "result_unknown": unknown.get(binding.id, 0),
                }
            )
        session.expunge_all()  # the active Run is also the latest: detach each object once
        return result


@dataclass(frozen=True, slots=True)
class RunGlance:
    """A Run as the page's Overview row and Binding history show it: the few columns
    they read, never the JSON report, I/O or inventory counts (loading a whole report
    per Binding cost the overview more than everything else together, issue 26)."""

    id: int
    binding_id: int
    status: str
    stage: str
    mode: str
    audit_mode: str
    trigger: str
    error_code: str | None
    error_message: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    retry_at: datetime | None
    cancel_requested_at: datetime | None
    counters: dict[str, Any]
    #: The report's problems (only its ``problems`` key is read), for a finished Run.
    problems: list[dict[str, Any]] = field(default_factory=list)
    #: Where a queued Run waits (``service.waits``), filled in by whoever shows it.
    waiting: str | None = None

    @property
    def is_active(self) -> bool:
        return self.status in {status.value for status in ACTIVE_RUN_STATUSES}

    @property
    def written(self) -> int:
        """Objects this Run created, updated or deleted on the target."""
        return sum(int(self.counters.get(name) or 0) for name in ("created", "updated", "deleted"))


_GLANCE = (
    Run.id,
    Run.binding_id,
    Run.status,
    Run.stage,
    Run.mode,
    Run.audit_mode,
    Run.trigger,
    Run.error_code,
    Run.error_message,
    Run.created_at,
    Run.started_at,
    Run.finished_at,
    Run.retry_at,
    Run.cancel_requested_at,
    Run.counters,
)


_GLANCE_NAMES = tuple(column.key for column in _GLANCE)


def _glance(row: Any, problems: Any = None) -> RunGlance:
    fields: dict[str, Any] = dict(zip(_GLANCE_NAMES, row, strict=False))
    return RunGlance(**fields, problems=list(problems) if isinstance(problems, list) else [])


@dataclass(slots=True)
class OverviewRow:
    """One Binding as the page's Overview shows it (``overview_rows``)."""

    binding: Binding
    #: The newest Run that has ended, with its report's problems.
    last_finished: RunGlance | None
    #: The queued or running Run (at most one per Binding), and its item counts.
    active: RunGlance | None
    progress: Progress | None
    #: When the last Run that converged (a completed apply) finished.
    last_in_sync_at: datetime | None
    result_unknown: int


def overview_rows(ctx: ServiceContext, user: User) -> list[OverviewRow]:
    """Every visible Binding for the page's Overview, in five statements whatever their
    number: Bindings (with the end of their last converged Run), the last ended Run of
    each (its report's ``problems`` alone, read by a JSON path), the active Runs, their
    item counts, and unresolved unknown writes. Sorting and filtering are the caller's:
    they work on these rows, so they add no statement."""
    active_statuses = [s.value for s in ACTIVE_RUN_STATUSES]
    converged = Run.__table__.alias("converged")
    with ctx.db.session() as session:
        found = session.execute(
            select(Binding, converged.c.finished_at)
            .outerjoin(converged, converged.c.id == Binding.last_converged_run_id)
            .where(visible(user))
            .order_by(Binding.id)
        ).all()
        ids = [binding.id for binding, _ in found]
        last_ids = (
            select(func.max(Run.id))
            .where(Run.binding_id.in_(ids), Run.status.not_in(active_statuses))
            .group_by(Run.binding_id)
        )
        finished = {
            row.binding_id: _glance(row, row[-1])
            for row in session.execute(
                select(*_GLANCE, Run.report["problems"]).where(Run.id.in_(last_ids))
            )
        }
        active = {
            row.binding_id: _glance(row)
            for row in session.execute(
                select(*_GLANCE).where(Run.binding_id.in_(ids), Run.status.in_(active_statuses))
            )
        }
        unknown = unresolved_unknown_by_binding(session, ids)
        session.expunge_all()
    progress = progress_of(ctx, [run.id for run in active.values()])
    rows = []
    for binding, in_sync_at in found:
        current = active.get(binding.id)
        rows.append(
            OverviewRow(
                binding=binding,
                last_finished=finished.get(binding.id),
                active=current,
                progress=progress.get(current.id, Progress()) if current else None,
                last_in_sync_at=in_sync_at,
                result_unknown=int(unknown.get(binding.id, 0)),
            )
        )
    return rows


def run_history(
    ctx: ServiceContext, user: User, binding_id: int, *, limit: int = 30
) -> list[RunGlance]:
    """A visible Binding's latest Runs, oldest first, for the Binding page's chart: one
    statement, no report."""
    get_binding_for(ctx, user, binding_id)
    with ctx.db.session() as session:
        rows = session.execute(
            select(*_GLANCE)
            .where(Run.binding_id == binding_id)
            .order_by(Run.id.desc())
            .limit(page_limit(limit))
        ).all()
    return [_glance(row) for row in reversed(rows)]


_UNHEALTHY = {
    PermissionDenied.code,
    ProviderUnavailable.code,
    RepositoryMismatch.code,
    GitTransportError.code,
    DatabaseUnavailable.code,
}


def health(run: Run | None) -> str:
    """A connection's health as its latest Run saw it."""
    if run is None:
        return "unknown"
    if run.error_code in _UNHEALTHY:
        return f"failing: {run.error_code}"
    if run.retry_at is not None and run.status == "queued":
        return RateLimited.code
    return "ok"
