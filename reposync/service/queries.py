"""Read-side operations of the API: who sees what, listings with cursors, progress.

Every listing is keyset-paginated (``after_id`` / ``after_seq``), every count is one
GROUP BY. The overview, which answers any number of Bindings in a fixed number of
queries, is ``overview.py``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.sql import ColumnElement

from reposync.errors import (
    RecordNotFound,
    ResultUnknown,
)
from reposync.lifecycle import ACTIVE_RUN_STATUSES
from reposync.models import (
    Binding,
    BranchWatch,
    GitHubGrantRepository,
    GitHubInstallationGrant,
    RepositoryGrant,
    Run,
    RunEvent,
    RunItem,
    User,
    WebhookDelivery,
    WebhookSubscription,
)
from reposync.service.context import ServiceContext

MAX_PAGE = 200


def visible(user: User) -> ColumnElement[bool]:
    """SQL condition on ``Binding``: the Bindings this user may see."""
    if user.role == "admin":
        return Binding.id.is_not(None)
    granted = select(RepositoryGrant.provider, RepositoryGrant.repository_id).where(
        RepositoryGrant.user_id == user.id
    )
    pairs = granted.subquery()
    return or_(
        select(pairs)
        .where(
            pairs.c.provider == Binding.a_provider, pairs.c.repository_id == Binding.a_repository_id
        )
        .exists(),
        select(pairs)
        .where(
            pairs.c.provider == Binding.b_provider, pairs.c.repository_id == Binding.b_repository_id
        )
        .exists(),
    )


def watch_visible(user: User) -> ColumnElement[bool]:
    """SQL condition on ``BranchWatch``: admins see every watch; a member the watches it
    made, while it holds a grant on the repository (as a Binding's visibility follows
    its grants: a revoked grant hides the watch too)."""
    if user.role == "admin":
        return BranchWatch.id.is_not(None)
    granted = (
        select(RepositoryGrant.id)
        .where(
            RepositoryGrant.user_id == user.id,
            RepositoryGrant.provider == BranchWatch.provider,
            RepositoryGrant.repository_id == BranchWatch.repository_id,
        )
        .exists()
    )
    return and_(BranchWatch.created_by == user.id, granted)


def repository_visible(ctx: ServiceContext, user: User, provider: str, repository_id: str) -> bool:
    """Whether the user may see a repository: admins all, a member those granted to it."""
    if user.role == "admin":
        return True
    with ctx.db.session() as session:
        found = session.execute(
            select(RepositoryGrant.id).where(
                RepositoryGrant.user_id == user.id,
                RepositoryGrant.provider == provider,
                RepositoryGrant.repository_id == repository_id,
            )
        ).first()
    return found is not None


#: A Binding side's ``connection_id`` for a repository reached through an installation
#: (Connect GitHub's picker lists it; the GitHub provider reads it).
CONNECTION_PREFIX = "github:installation:"


def connection_id(installation_id: str) -> str:
    return CONNECTION_PREFIX + installation_id


def granted_connection(ctx: ServiceContext, user_id: int, connection: str) -> dict[str, str] | None:
    """What the user's Connect GitHub grant of ``connection`` reaches: casefolded full
    name -> GitHub repository id; None when the connection is not granted to them."""
    if not connection.startswith(CONNECTION_PREFIX):
        return None
    installation = connection.removeprefix(CONNECTION_PREFIX)
    with ctx.db.session() as session:
        grant = session.execute(
            select(GitHubInstallationGrant.id).where(
                GitHubInstallationGrant.user_id == user_id,
                GitHubInstallationGrant.installation_id == installation,
            )
        ).scalar_one_or_none()
        if grant is None:
            return None
        rows = session.execute(
            select(GitHubGrantRepository.full_name, GitHubGrantRepository.repository_id).where(
                GitHubGrantRepository.grant_id == grant
            )
        ).all()
    return {name.casefold(): repository_id for name, repository_id in rows}


def page_limit(limit: int | None, default: int = 50) -> int:
    return max(1, min(limit or default, MAX_PAGE))


def get_binding_for(ctx: ServiceContext, user: User, binding_id: int) -> Binding:
    with ctx.db.session() as session:
        binding = session.execute(
            select(Binding).where(Binding.id == binding_id, visible(user))
        ).scalar_one_or_none()
        if binding is None:  # not visible is not found: ids of others leak nothing
            raise RecordNotFound(f"binding {binding_id} does not exist")
        session.expunge(binding)
        return binding


def list_bindings(
    ctx: ServiceContext,
    user: User,
    *,
    repository_id: str | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[Binding]:
    with ctx.db.session() as session:
        query = select(Binding).where(visible(user))
        if repository_id is not None:
            query = query.where(
                (Binding.a_repository_id == repository_id)
                | (Binding.b_repository_id == repository_id)
            )
        if after_id is not None:
            query = query.where(Binding.id > after_id)
        rows = session.execute(query.order_by(Binding.id).limit(page_limit(limit))).scalars().all()
        for row in rows:
            session.expunge(row)
        return list(rows)


def get_watch_for(ctx: ServiceContext, user: User, watch_id: int) -> BranchWatch:
    with ctx.db.session() as session:
        watch = session.execute(
            select(BranchWatch).where(BranchWatch.id == watch_id, watch_visible(user))
        ).scalar_one_or_none()
        if watch is None:
            raise RecordNotFound(f"watch {watch_id} does not exist")
        session.expunge(watch)
        return watch


def list_watches(
    ctx: ServiceContext,
    user: User,
    *,
    repository_id: str | None = None,
    branch: str | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[BranchWatch]:
    """The visible watches, oldest first."""
    with ctx.db.session() as session:
        query = select(BranchWatch).where(watch_visible(user))
        if repository_id is not None:
            query = query.where(BranchWatch.repository_id == repository_id)
        if branch is not None:
            query = query.where(BranchWatch.branch == branch)
        if after_id is not None:
            query = query.where(BranchWatch.id > after_id)
        rows = (
            session.execute(query.order_by(BranchWatch.id).limit(page_limit(limit))).scalars().all()
        )
        for row in rows:
            session.expunge(row)
        return list(rows)


def get_run_for(ctx: ServiceContext, user: User, run_id: int) -> Run:
    with ctx.db.session() as session:
        run = session.execute(
            select(Run)
            .join(Binding, Binding.id == Run.binding_id)
            .where(Run.id == run_id, visible(user))
        ).scalar_one_or_none()
        if run is None:
            raise RecordNotFound(f"run {run_id} does not exist")
        session.expunge(run)
        return run


def list_runs(
    ctx: ServiceContext,
    user: User,
    *,
    status: str | None = None,
    binding_id: int | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[Run]:
    """Newest first; ``after_id`` continues below the last id seen."""
    with ctx.db.session() as session:
        query = select(Run).join(Binding, Binding.id == Run.binding_id).where(visible(user))
        if status is not None:
            query = query.where(Run.status == status)
        if binding_id is not None:
            query = query.where(Run.binding_id == binding_id)
        if after_id is not None:
            query = query.where(Run.id < after_id)
        rows = (
            session.execute(query.order_by(Run.id.desc()).limit(page_limit(limit))).scalars().all()
        )
        for row in rows:
            session.expunge(row)
        return list(rows)


def run_progress(ctx: ServiceContext, user: User, run_id: int) -> dict[str, Any]:
    """Totals and per-type state counts from one aggregate; no item is loaded. While a
    push runs, ``transfer`` says what git reports of it (phase, objects, bytes): the
    items of a batch only move once its push has ended."""
    run = get_run_for(ctx, user, run_id)
    progress = progress_of(ctx, [run_id]).get(run_id, Progress())
    shown = {
        "run_id": run.id,
        "stage": run.stage,
        "status": run.status,
        "plan_complete": run.plan_complete,
        **progress.to_dict(),
    }
    if run.transfer is not None and run.is_active:
        shown["transfer"] = run.transfer
    return shown


@dataclass
class Progress:
    totals: dict[str, int] = field(default_factory=dict)
    object_types: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals,
            "object_types": self.object_types,
            "items": sum(self.totals.values()),
        }


def progress_of(ctx: ServiceContext, run_ids: list[int]) -> dict[int, Progress]:
    if not run_ids:
        return {}
    found: dict[int, Progress] = defaultdict(Progress)
    with ctx.db.session() as session:
        rows = session.execute(
            select(RunItem.run_id, RunItem.object_type, RunItem.state, func.count())
            .where(RunItem.run_id.in_(run_ids))
            .group_by(RunItem.run_id, RunItem.object_type, RunItem.state)
        ).all()
    for run_id, object_type, state, count in rows:
        progress = found[run_id]
        progress.totals[state] = progress.totals.get(state, 0) + count
        progress.object_types.setdefault(object_type, {})[state] = count
    return dict(found)


def run_items(
    ctx: ServiceContext,
    user: User,
    run_id: int,
    *,
    state: str | None = None,
    object_type: str | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[RunItem]:
    get_run_for(ctx, user, run_id)
    with ctx.db.session() as session:
        query = select(RunItem).where(RunItem.run_id == run_id)
        if state is not None:
            query = query.where(RunItem.state == state)
        if object_type is not None:
            query = query.where(RunItem.object_type == object_type)
        if after_id is not None:
            query = query.where(RunItem.id > after_id)
        rows = session.execute(query.order_by(RunItem.id).limit(page_limit(limit))).scalars().all()
        for row in rows:
            session.expunge(row)
        return list(rows)


@dataclass(frozen=True, slots=True)
class EventPage:
    """One page of a Run's events and the cursor of the next."""

    items: list[RunEvent]
    #: The seq to ask after for more: the last of this page (or the given ``after_seq``
    #: when it is empty) while the Run is active or more events exist; ``None`` once the
    #: Run has ended and this page holds its last event, which ends a paging loop.
    next_after_seq: int | None


def run_events(
    ctx: ServiceContext, user: User, run_id: int, *, after_seq: int = 0, limit: int | None = None
) -> EventPage:
    """A page of a Run's events after ``after_seq`` (``user`` must see the Run)."""
    run = get_run_for(ctx, user, run_id)  # before the events: an ended Run's are all there
    size = page_limit(limit, 100)
    rows = _events_after(ctx, run_id, after_seq, size + 1)  # one more: is there a next page?
    more, rows = len(rows) > size, rows[:size]
    if not more and run.status not in {status.value for status in ACTIVE_RUN_STATUSES}:
        return EventPage(rows, None)
    return EventPage(rows, rows[-1].seq if rows else after_seq)


def events_after(
    ctx: ServiceContext, run_id: int, *, after_seq: int, limit: int | None = None
) -> list[RunEvent]:
    """A Run's events after ``after_seq``, for a caller that has authorized the reader.

    The API's shared event feed reads once per Run for every stream of it, whoever holds
    them; each stream was authorized when it opened (``get_run_for``).
    """
    return _events_after(ctx, run_id, after_seq, page_limit(limit, 100))


def _events_after(ctx: ServiceContext, run_id: int, after_seq: int, count: int) -> list[RunEvent]:
    with ctx.db.session() as session:
        rows = (
            session.execute(
                select(RunEvent)
                .where(RunEvent.run_id == run_id, RunEvent.seq > after_seq)
                .order_by(RunEvent.seq)
                .limit(count)
            )
            .scalars()
            .all()
        )
        for row in rows:
            session.expunge(row)
        return list(rows)


def stage_times(ctx: ServiceContext, user: User, run_id: int) -> dict[str, datetime]:
    """When a visible Run first reached each stage (its first event there): one
    aggregate, for the web page's stage timeline."""
    get_run_for(ctx, user, run_id)
    with ctx.db.session() as session:
        rows = session.execute(
            select(RunEvent.stage, func.min(RunEvent.created_at))
            .where(RunEvent.run_id == run_id)
            .group_by(RunEvent.stage)
        ).all()
    return {stage: first for stage, first in rows}


def unknown_writes(ctx: ServiceContext, user: User, run_id: int) -> int:
    """A visible Run's items whose write outcome nobody has proven (what recovery
    settles), counted from the items themselves: a report can be older than them."""
    get_run_for(ctx, user, run_id)
    with ctx.db.session() as session:
        return session.execute(
            select(func.count())
            .select_from(RunItem)
            .where(
                RunItem.run_id == run_id,
                RunItem.state == "blocked",
                RunItem.error_code == ResultUnknown.code,
            )
        ).scalar_one()


def last_event_seq(ctx: ServiceContext, run_id: int) -> int:
    """The sequence number of a Run's latest event (0: none yet), unchecked like the above."""
    with ctx.db.session() as session:
        last = session.execute(
            select(func.max(RunEvent.seq)).where(RunEvent.run_id == run_id)
        ).scalar_one()
        return int(last or 0)


@dataclass(frozen=True, slots=True)
class Deferral:
    """Why a queued Run waits for a time: its latest ``deferred`` event (a rate limit:
    the API's ``rate_limited``, the Git host's ``git_rate_limited``) or
    ``retry_scheduled`` one (a retry's backoff after a retryable error)."""

    rate_limit: bool
    error_code: str | None
    #: Which request met what, as the event says it.
    message: str


def deferrals(ctx: ServiceContext, run_ids: Collection[int]) -> dict[int, Deferral]:
    """``run id -> Deferral`` for the Runs among ``run_ids`` that were ever deferred, in
    one query (unchecked like the above)."""
    if not run_ids:
        return {}
    kinds = ("deferred", "retry_scheduled")
    latest = (
        select(RunEvent.run_id, func.max(RunEvent.seq).label("seq"))
        .where(RunEvent.run_id.in_(list(run_ids)), RunEvent.type.in_(kinds))
        .group_by(RunEvent.run_id)
        .subquery()
    )
    with ctx.db.session() as session:
        rows = session.execute(
            select(RunEvent.run_id, RunEvent.type, RunEvent.counts, RunEvent.message).join(
                latest, and_(RunEvent.run_id == latest.c.run_id, RunEvent.seq == latest.c.seq)
            )
        ).all()
    found: dict[int, Deferral] = {}
    for run_id, kind, counts, message in rows:
        code = (counts or {}).get("error_code")
        found[run_id] = Deferral(kind == "deferred", None if code is None else str(code), message)
    return found


def run_status(ctx: ServiceContext, run_id: int) -> str | None:
    """The status of a Run (None: no such Run), for a caller that has authorized the reader."""
    with ctx.db.session() as session:
        return session.execute(select(Run.status).where(Run.id == run_id)).scalar_one_or_none()


def subscription_visible(user: User) -> ColumnElement[bool]:
    """SQL condition on ``WebhookSubscription``: its owner and the admins see it."""
    if user.role == "admin":
        return WebhookSubscription.id.is_not(None)
    return WebhookSubscription.owner_id == user.id


def get_subscription_for(
    ctx: ServiceContext, user: User, subscription_id: int
) -> WebhookSubscription:
    with ctx.db.session() as session:
        subscription = session.execute(
            select(WebhookSubscription).where(
                WebhookSubscription.id == subscription_id, subscription_visible(user)
            )
        ).scalar_one_or_none()
        if subscription is None:
            raise RecordNotFound(f"subscription {subscription_id} does not exist")
        session.expunge(subscription)
        return subscription


def list_subscriptions(
    ctx: ServiceContext,
    user: User,
    *,
    binding_id: int | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[WebhookSubscription]:
    """Oldest first; ``after_id`` continues after the last id seen."""
    with ctx.db.session() as session:
        query = select(WebhookSubscription).where(subscription_visible(user))
        if binding_id is not None:
            query = query.where(WebhookSubscription.binding_id == binding_id)
        if after_id is not None:
            query = query.where(WebhookSubscription.id > after_id)
        rows = (
            session.execute(query.order_by(WebhookSubscription.id).limit(page_limit(limit)))
            .scalars()
            .all()
        )
        for row in rows:
            session.expunge(row)
        return list(rows)


def list_deliveries(
    ctx: ServiceContext,
    user: User,
    subscription_id: int,
    *,
    status: str | None = None,
    after_id: int | None = None,
    limit: int | None = None,
) -> list[WebhookDelivery]:
    """A subscription's deliveries, newest first; ``after_id`` continues below it."""
    get_subscription_for(ctx, user, subscription_id)
    with ctx.db.session() as session:
        query = select(WebhookDelivery).where(WebhookDelivery.subscription_id == subscription_id)
        if status is not None:
            query = query.where(WebhookDelivery.status == status)
        if after_id is not None:
            query = query.where(WebhookDelivery.id < after_id)
        rows = (
            session.execute(query.order_by(WebhookDelivery.id.desc()).limit(page_limit(limit)))
            .scalars()
            .all()
        )
        for row in rows:
            session.expunge(row)
        return list(rows)
