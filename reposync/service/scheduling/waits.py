"""Where a queued Run waits, in words: the ``waiting`` of the API's Run and the page's.

A Run that stays ``queued`` says nothing by itself; the operator needs to know whether
it is deferred (until when, by which rate limit or after which error: its latest
``deferred`` or ``retry_scheduled`` event), held up by another
execution on its Binding, in a queue (whose, at which place), or sent where nothing
takes it (no worker, a broker away). The first two are read from the database; the
rest only the dispatcher knows, so it says it when it can (``DescribesWaits``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol, runtime_checkable

from sqlalchemy import select

from reposync.lifecycle import RunStatus
from reposync.models import Binding
from reposync.service.context import ServiceContext
from reposync.service.pipeline.leases import database_now
from reposync.service.queries import Deferral, deferrals


class QueuedRun(Protocol):
    """What telling a Run's wait reads of it: a ``Run`` row, or the page's glance of one."""

    @property
    def id(self) -> int: ...
    @property
    def binding_id(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def retry_at(self) -> datetime | None: ...
    @property
    def created_at(self) -> datetime: ...


@runtime_checkable
class DescribesWaits(Protocol):
    """A dispatcher that can say where a Run it was handed waits."""

    def describe_wait(self, run_id: int, waited: float) -> str | None:
        """Where ``run_id``, queued ``waited`` seconds ago, is; None when it cannot tell."""


def waiting(ctx: ServiceContext, runs: Iterable[QueuedRun]) -> dict[int, str]:
    """``run id -> where it waits`` for the queued Runs among ``runs`` (the others are
    left out: a running or ended Run waits for nothing)."""
    queued = [run for run in runs if run.status == RunStatus.QUEUED.value]
    if not queued:
        return {}
    with ctx.db.session() as session:
        now = database_now(session)
        leases = {
            row.id: row
            for row in session.execute(
                select(Binding.id, Binding.lease_run_id, Binding.lease_expires_at).where(
                    Binding.id.in_({run.binding_id for run in queued})
                )
            )
        }
    why = deferrals(ctx, [run.id for run in queued if run.retry_at and run.retry_at > now])
    found: dict[int, str] = {}
    for run in queued:
        lease = leases.get(run.binding_id)
        text = _deferred(run, now, why.get(run.id))
        if text is None and lease is not None:
            text = _behind(run, lease.lease_run_id, lease.lease_expires_at, now)
        if text is None and isinstance(ctx.dispatcher, DescribesWaits):
            since = run.retry_at or run.created_at
            text = ctx.dispatcher.describe_wait(run.id, (now - since).total_seconds())
        if text is not None:
            found[run.id] = text
    return found


def _deferred(run: QueuedRun, now: datetime, why: Deferral | None) -> str | None:
    """Until when, and why: which limit or which error, as the Run's event said it."""
    if run.retry_at is None or run.retry_at <= now:
        return None
    until = run.retry_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    if why is None:
        return f"deferred until {until} (a rate limit, or a retry's backoff); it resumes then"
    if why.rate_limit:
        return f"deferred until {until} by a rate limit ({why.error_code}): {why.message}"
    return f"deferred until {until}, a retry's backoff: {why.message}"


def _behind(
    run: QueuedRun, lease_run_id: int | None, expires_at: datetime | None, now: datetime
) -> str | None:
    if lease_run_id is None or lease_run_id == run.id:
        return None
    if expires_at is not None and expires_at <= now:
        return None
    return f"queued behind run {lease_run_id} of this Binding, which holds its lease"
