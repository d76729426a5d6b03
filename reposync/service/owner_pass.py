"""One pass of an owner binding: list both owners, bind what is new, report the rest.

What a pass does with each source repository (``Outcome``), in order of the checks:

* a member of the owner binding already is left alone (``already_bound``), or, when an
  operator deleted its Binding, is not bound again (``unbound``);
* a missing target is created where its forge can (``RepositoryCreator``), as public as
  its source at most, and bound (``created``); elsewhere it is reported
  (``cannot_create``). A creation whose answer was lost is looked for before anything
  else: found, it is bound;
* an existing target is adopted when the pair's Binding exists (``adopted``), bound when
  it is empty (``bound``: an operator made it for this), and otherwise reported as a
  clash and never written to (``clash``);
* a member whose source is no longer listed keeps its Binding (``gone``).

Every Binding is made by ``bindings.bind_pair``: the validation, visibility rule and
standby guard of ``reposync sync`` (the owner binding's ``confirm_visibility`` is the
operator's yes to a more public existing target). A new member gets the owner binding's
schedule with its offset (``spread``), and its first Run is queued: a full audit, after
which the tick switches its sync on (``owners.switch_sync_on``). Each member is written
as soon as it is bound, so a pass cut short loses nothing. An error of one repository is
its outcome (``failed``, with its code) and the pass goes on; a rate limit stops the pass
(every later write would wait too).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import func, select

from reposync.errors import (
    GitRateLimited,
    RateLimited,
    ReposyncError,
    ResultUnknown,
    UnschedulableCron,
    UsageError,
)
from reposync.lifecycle import AuditMode, Trigger
from reposync.models import Binding, OwnerBindingMember
from reposync.providers.base import (
    EmptyChecker,
    EndpointSpec,
    OwnedRepository,
    OwnerLister,
    OwnerSpec,
    RepositoryCreator,
)
from reposync.providers.registry import provider_class
from reposync.service.bindings import SyncRequest, bind_pair, find_binding
from reposync.service.confinement import confine
from reposync.service.context import ServiceContext
from reposync.service.pipeline.leases import database_now
from reposync.service.runs import enqueue_run
from reposync.service.scheduling.cron import period
from reposync.sync.vocabulary import RefConflictPolicy

log = logging.getLogger(__name__)

#: The slots of one owner binding's Bindings are spread over their cron's period, at most
#: this long (a nightly cron starts its Bindings within an hour, not over the day).
SPREAD_MAX = timedelta(hours=1)
#: The golden ratio's fractional part: member k's offset is frac(k * GOLDEN) of the
#: spread, so every prefix of members is evenly spread and a new member moves no other.
GOLDEN = (math.sqrt(5) - 1) / 2


class Outcome(StrEnum):
    """What a pass did (or, in a dry run, would do) with one source repository."""

    CREATED = "created"  # the target was created and bound
    BOUND = "bound"  # an existing empty target was bound
    ADOPTED = "adopted"  # the pair's existing Binding joined the owner binding
    ALREADY_BOUND = "already_bound"
    UNBOUND = "unbound"  # an operator deleted its Binding: not bound again
    CLASH = "clash"  # the target exists and holds something: reported, untouched
    CANNOT_CREATE = "cannot_create"  # the target is missing; its forge creates none
    FAILED = "failed"  # an error, with its code
    GONE = "gone"  # bound once, no longer in the source: its Binding is kept
    WOULD_CREATE = "would_create"
    WOULD_BIND = "would_bind"
    WOULD_ADOPT = "would_adopt"


#: Outcomes an operator must act on (a CLI exit status of 1).
NEEDS_ACTION = frozenset({Outcome.FAILED, Outcome.CLASH, Outcome.CANNOT_CREATE})


@dataclass(frozen=True, slots=True)
class Options:
    """What a pass needs of its owner binding (the row's columns, or a dry run's request)."""

    source: OwnerSpec
    target: OwnerSpec
    conflict_policy: RefConflictPolicy | None
    schedule_cron: str | None
    confirm_visibility: bool
    confined: bool


@dataclass(slots=True)
class RepositoryOutcome:
    name: str
    source: str
    target: str
    outcome: Outcome
    binding_id: int | None = None
    run_id: int | None = None
    error_code: str | None = None
    message: str | None = None
    #: The source's immutable id once known (a member's, or the Binding's just made).
    source_repository_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "target": self.target,
            "outcome": self.outcome.value,
            "binding_id": self.binding_id,
            "run_id": self.run_id,
            "error_code": self.error_code,
            "message": self.message,
        }


@dataclass(slots=True)
class PassReport:
    """What one pass found and did, kept on its owner binding (``last_pass``)."""

    source: str
    target: str
    dry_run: bool
    started_at: datetime
    owner_binding_id: int | None = None
    finished_at: datetime | None = None
    #: Source repositories listed.
    found: int = 0
    repositories: list[RepositoryOutcome] = field(default_factory=list)
    #: Why the pass stopped before the end (the source could not be listed, a rate
    #: limit); what it did before is in ``repositories``.
    error_code: str | None = None
    message: str | None = None

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for repo in self.repositories:
            found[repo.outcome.value] = found.get(repo.outcome.value, 0) + 1
        return dict(sorted(found.items()))

    def needs_action(self) -> bool:
        return self.error_code is not None or any(
            repo.outcome in NEEDS_ACTION for repo in self.repositories
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "owner_binding_id": self.owner_binding_id,
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "found": self.found,
            "counts": self.counts(),
            "error_code": self.error_code,
            "message": self.message,
            "repositories": [repo.to_dict() for repo in self.repositories],
        }


def list_owners(
    ctx: ServiceContext, options: Options
) -> tuple[list[OwnedRepository], list[OwnedRepository]]:
    """Both owners' repositories (sources, targets): ``OwnerNotFound`` and the forges'
    errors as they come."""
    source_cls = lister(options.source)
    target_cls = lister(options.target)
    env = ctx.environment
    return (
        source_cls.list_repositories(options.source, env),
        target_cls.list_repositories(options.target, env),
    )


def lister(owner: OwnerSpec) -> type[OwnerLister]:
    cls = provider_class(owner.provider)
    if not issubclass(cls, OwnerLister):
        raise UsageError(f"{owner.provider} cannot list an owner's repositories")
    return cls


@dataclass(slots=True)
class _Pass:
    """One pass in progress: what it knows of both owners and the owner binding."""

    ctx: ServiceContext
    options: Options
    owner_binding_id: int | None
    dry_run: bool
    trigger: Trigger
    queue_runs: bool
    targets: dict[str, OwnedRepository]
    members: dict[str, OwnerBindingMember]
    report: PassReport


def run(
    ctx: ServiceContext,
    options: Options,
    owner_binding_id: int | None,
    *,
    dry_run: bool,
    listings: tuple[list[OwnedRepository], list[OwnedRepository]] | None = None,
    trigger: Trigger = Trigger.MANUAL,
    queue_runs: bool = True,
    report: PassReport | None = None,
) -> PassReport:
    """The pass, filling ``report`` (a new one if none) as each repository is settled, so
    a caller holding it keeps what was done should the pass stop on the way."""
    if report is None:
        report = PassReport(
            options.source.display,
            options.target.display,
            dry_run,
            current_time(ctx),
            owner_binding_id,
        )
    try:
        sources, targets = listings if listings is not None else list_owners(ctx, options)
    except ReposyncError as error:
        report.error_code, report.message = error.code, error.message
        report.finished_at = current_time(ctx)
        return report
    report.found = len(sources)
    state = _Pass(
        ctx,
        options,
        owner_binding_id,
        dry_run,
        trigger,
        queue_runs,
        {repo.name: repo for repo in targets},
        members(ctx, owner_binding_id),
        report,
    )
    seen: set[str | None] = set()
    for repo in sources:
        try:
            outcome = _one(state, repo)
        except (RateLimited, GitRateLimited) as limited:  # the API's or the Git host's:
            # every repository after it would wait too; the next pass goes on
            report.error_code, report.message = limited.code, limited.message
            break
        report.repositories.append(outcome)
        seen |= {repo.repository_id, outcome.source_repository_id}
    source_cls = lister(options.source)
    for member in state.members.values():
        if member.source_repository_id not in seen and report.error_code is None:
            where = source_cls.repository_locator(options.source.locator, member.name)
            report.repositories.append(
                RepositoryOutcome(
                    member.name,
                    f"{options.source.provider}:{where}",
                    "",
                    Outcome.GONE,
                    member.binding_id,
                    message="no longer in the source owner; its Binding is kept",
                )
            )
    report.finished_at = current_time(ctx)
    return report


def _one(state: _Pass, repo: OwnedRepository) -> RepositoryOutcome:
    options = state.options
    target_cls = lister(options.target)
    outcome = RepositoryOutcome(
        repo.name, f"{options.source.provider}:{repo.locator}", "", Outcome.FAILED
    )
    outcome.source_repository_id = repo.repository_id
    try:
        target_locator = target_cls.repository_locator(options.target.locator, repo.name)
        outcome.target = f"{options.target.provider}:{target_locator}"
        member = state.members.get(repo.repository_id or "")
        if member is not None:
            outcome.binding_id = member.binding_id
            bound = member.binding_id is not None
            outcome.outcome = Outcome.ALREADY_BOUND if bound else Outcome.UNBOUND
            return outcome
        source, target = outcome.source, outcome.target
        if options.confined:
            settings = state.ctx.settings
            source, target = confine(source, settings), confine(target, settings)
        source_spec = EndpointSpec(
            options.source.provider,
            source.partition(":")[2],
            connection_id=options.source.connection_id,
        )
        target_spec = EndpointSpec(
            options.target.provider,
            target.partition(":")[2],
            connection_id=options.target.connection_id,
        )
        existing = state.targets.get(repo.name)
        if existing is None:
            return _missing(state, repo, source_spec, target_spec, outcome)
        return _existing(state, source_spec, target_spec, outcome)
    except (RateLimited, GitRateLimited):
        raise
    except ReposyncError as error:
        outcome.outcome, outcome.error_code, outcome.message = (
            Outcome.FAILED,
            error.code,
            error.message,
        )
        return outcome


def _missing(
    state: _Pass,
    repo: OwnedRepository,
    source: EndpointSpec,
    target: EndpointSpec,
    outcome: RepositoryOutcome,
) -> RepositoryOutcome:
    """No target of that name: create it where the forge can, then bind."""
    target_cls = provider_class(target.provider)
    if not issubclass(target_cls, RepositoryCreator):
        outcome.outcome = Outcome.CANNOT_CREATE
        outcome.message = f"{target.provider} repositories are not created by reposync"
        return outcome
    if state.dry_run:
        outcome.outcome = Outcome.WOULD_CREATE
        return outcome
    env = state.ctx.environment
    try:
        target_cls.create_repository(
            state.options.target, repo.name, repo.visibility or "private", repo.description, env
        )
    except ResultUnknown:
        if not target_cls.exists(target, env):
            raise
        log.warning("%s: created, its answer lost; binding what is there", target.display)
    return _bind(state, source, target, outcome, Outcome.CREATED)


def _existing(
    state: _Pass, source: EndpointSpec, target: EndpointSpec, outcome: RepositoryOutcome
) -> RepositoryOutcome:
    """A target of that name exists: adopt the pair's Binding, bind it when it is empty,
    or report the clash (never write to what holds something else)."""
    ctx = state.ctx
    assert ctx.open_provider is not None
    opened = [ctx.open_provider(source), ctx.open_provider(target)]
    try:
        source_info, target_info = opened[0].endpoint(), opened[1].endpoint()
        empty = isinstance(opened[1], EmptyChecker) and opened[1].is_empty()
    finally:
        for provider in opened:
            provider.close()
    with ctx.db.session() as session:
        pair = find_binding(session, source_info, target_info)
    if pair is not None:
        if state.dry_run:
            outcome.outcome, outcome.binding_id = Outcome.WOULD_ADOPT, pair.id
            return outcome
        return _bind(state, source, target, outcome, Outcome.ADOPTED)
    if not empty:
        outcome.outcome = Outcome.CLASH
        outcome.message = (
            f"{target.display} exists and holds data no Binding of {source.display} put "
            "there; it is left as it is"
        )
        return outcome
    if state.dry_run:
        outcome.outcome = Outcome.WOULD_BIND
        return outcome
    return _bind(state, source, target, outcome, Outcome.BOUND)


def _bind(
    state: _Pass,
    source: EndpointSpec,
    target: EndpointSpec,
    outcome: RepositoryOutcome,
    joined: Outcome,
) -> RepositoryOutcome:
    """Make (or find) the Binding as ``reposync sync`` would, then make it a member: its
    schedule spread by its offset, and its first Run queued when it is new."""
    ctx, options = state.ctx, state.options
    binding, created = bind_pair(
        ctx,
        SyncRequest(
            source.display,
            target.display,
            conflict_policy=options.conflict_policy,
            confirm_visibility=options.confirm_visibility,
            source_connection=source.connection_id,
            target_connection=target.connection_id,
            create_target=False,
        ),
    )
    assert state.owner_binding_id is not None
    _join(
        ctx, state.owner_binding_id, binding, outcome.name, new=created, cron=options.schedule_cron
    )
    outcome.outcome, outcome.binding_id = joined, binding.id
    outcome.source_repository_id = binding.a_repository_id
    if created and state.queue_runs:
        run = enqueue_run(
            ctx,
            binding.id,
            audit_mode=AuditMode.FULL,
            trigger=state.trigger,
            # A scheduled pass's bootstraps wait behind operators' and webhooks' Runs.
            background=state.trigger is Trigger.SCHEDULE,
        )
        outcome.run_id = run.id
    return outcome


def _join(
    ctx: ServiceContext,
    owner_binding_id: int,
    binding: Binding,
    name: str,
    *,
    new: bool,
    cron: str | None,
) -> None:
    with ctx.db.transaction() as session:
        member = session.execute(
            select(OwnerBindingMember.id).where(
                OwnerBindingMember.owner_binding_id == owner_binding_id,
                OwnerBindingMember.source_repository_id == binding.a_repository_id,
            )
        ).scalar_one_or_none()
        if member is not None:
            return  # a member already (a repository the listing could not name by its id)
        ordinal = session.execute(
            select(func.coalesce(func.max(OwnerBindingMember.ordinal) + 1, 0)).where(
                OwnerBindingMember.owner_binding_id == owner_binding_id
            )
        ).scalar_one()
        session.add(
            OwnerBindingMember(
                owner_binding_id=owner_binding_id,
                source_repository_id=binding.a_repository_id,
                name=name,
                binding_id=binding.id,
                ordinal=ordinal,
            )
        )
        if new and cron is not None:
            stored = session.get(Binding, binding.id)
            assert stored is not None
            stored.schedule_cron = cron
            stored.schedule_offset = spread(cron, ordinal, database_now(session))


def spread(cron: str, ordinal: int, now: datetime) -> int:
    """The schedule offset (seconds) of an owner binding's ``ordinal``-th member: a stable
    share of the cron's period (at most ``SPREAD_MAX``) that no later member changes."""
    try:
        window = min(period(cron, now), SPREAD_MAX).total_seconds()
    except UnschedulableCron:  # it fires once more at most: nothing to spread
        return 0
    return int(((ordinal * GOLDEN) % 1.0) * window)


def members(ctx: ServiceContext, owner_binding_id: int | None) -> dict[str, OwnerBindingMember]:
    if owner_binding_id is None:
        return {}
    with ctx.db.session() as session:
        rows = session.execute(
            select(OwnerBindingMember).where(
                OwnerBindingMember.owner_binding_id == owner_binding_id
            )
        ).scalars()
        found = {row.source_repository_id: row for row in rows}
        session.expunge_all()
    return found


def current_time(ctx: ServiceContext) -> datetime:
    """The database's clock (a report's times)."""
    with ctx.db.session() as session:
        return database_now(session)
