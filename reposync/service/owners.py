"""Whole owners: one Binding per repository of an owner (``reposync bind-all``).

An owner binding pairs a source owner (``local:/srv/forge``, ``github:acme``) with a
target owner and keeps what its Bindings are given (conflict policy, schedule,
connections, the operator's visibility confirmation). Its **passes** bind each source
repository not bound yet to the target owner's namesake (``owner_pass.py`` says what a
pass does with each repository); a pass runs on the owner binding's own cron (the tick
hands it to a worker) and on demand.

A pass holds a claim on its row (``pass_started_at``), so two passes never bind one
repository at once; a claim older than ``PASS_TIMEOUT`` is a dead worker's. Its report
is kept on the row (``last_pass``), also when it stopped early.

Fair sharing across the Bindings of one owner binding: their schedule slots are spread
(``owner_pass.spread``), so fifty Bindings of one cron do not start in one tick nor crowd
out another account's Runs; and each Binding's writes take its share of its account's
write budget (``budgets``).

A dry run lists what a pass would do and writes nothing: no owner binding, repository,
Binding or Run (judging an existing target opens it, which gives a local repository its
id in its Git config, as ``reposync sync --dry-run`` does).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, or_, select, update
from sqlalchemy.exc import IntegrityError

from reposync.errors import (
    NotAllowedNow,
    OwnerBindingBusy,
    RecordNotFound,
    UnschedulableCron,
    UsageError,
)
from reposync.lifecycle import Trigger
from reposync.models import Binding, OwnerBinding, OwnerBindingMember, utcnow
from reposync.models.owner_binding import OWNER_LENGTH
from reposync.providers.base import OwnedRepository, OwnerSpec
from reposync.providers.registry import parse_owner, provider_class
from reposync.service import owner_pass
from reposync.service.bindings import UNSET, update_binding
from reposync.service.confinement import confine_owner
from reposync.service.context import ServiceContext
from reposync.service.owner_pass import Options, PassReport
from reposync.service.pipeline.leases import database_now
from reposync.service.scheduling.cron import next_slot, validate_cron
from reposync.sync.vocabulary import RefConflictPolicy

log = logging.getLogger(__name__)

#: When a pass starts by itself unless told otherwise: hourly.
DEFAULT_PASS_CRON = "0 * * * *"
#: A pass's claim older than this belongs to a worker that died.
PASS_TIMEOUT = timedelta(hours=1)
#: Owner bindings one tick starts passes of, and members it switches sync on for.
TICK_BATCH = 50


@dataclass(frozen=True, slots=True)
class OwnerRequest:
    """Two owners to bind whole, and what their Bindings are given."""

    source: str
    target: str
    dry_run: bool = False
    conflict_policy: RefConflictPolicy | None = None
    #: The schedule each Binding made gets (spread by its offset); None: none.
    schedule_cron: str | None = None
    #: When passes start by themselves; None: on demand only; not given (``UNSET``): as
    #: the pair's owner binding has it, hourly (``DEFAULT_PASS_CRON``) for a new one.
    pass_cron: str | None = UNSET
    confirm_visibility: bool = False
    source_connection: str | None = None
    target_connection: str | None = None
    #: Over the API: ``local:`` owners and each repository stay in the local roots.
    confined: bool = False


# -- binding an owner -----------------------------------------------------------------------


def bind_all(
    ctx: ServiceContext, request: OwnerRequest, *, run_now: bool = True, queue_runs: bool = True
) -> tuple[OwnerBinding | None, PassReport | None]:
    """Bind the two owners: validate, then (unless a dry run) create or update their owner
    binding and run its first pass now (``run_now``) or hand it to a worker.

    Both owners are listed before anything is written, so an owner that does not exist
    or cannot be read is refused with nothing written. A dry run returns no row and the
    report of what a pass would do. The pair's existing owner binding takes the options
    the request names (a policy, a schedule, a pass schedule, a confirmation).
    ``queue_runs``: queue each new Binding's first Run (the embedded mode runs them itself).
    """
    options = _options(ctx, request)
    listings = owner_pass.list_owners(ctx, options)
    ctx.db.ensure_current()  # the embedded mode's first write may be this one
    if request.dry_run:
        return None, owner_pass.run(ctx, options, None, dry_run=True, listings=listings)
    owner_id = _store(ctx, request, options)
    if not run_now:
        return request_pass(ctx, owner_id), None
    report = run_pass(ctx, owner_id, queue_runs=queue_runs, listings=listings)
    return get_owner_binding(ctx, owner_id), report


def _options(ctx: ServiceContext, request: OwnerRequest) -> Options:
    settings = ctx.settings
    source_locator, target_locator = request.source, request.target
    if request.confined:
        source_locator = confine_owner(source_locator, settings)
        target_locator = confine_owner(target_locator, settings)
    source = _side(source_locator, request.source_connection)
    target = _side(target_locator, request.target_connection)
    if (source.provider, source.locator) == (target.provider, target.locator):
        raise UsageError("SOURCE_OWNER and TARGET_OWNER are the same owner")
    for owner in (source, target):
        if len(owner.locator) > OWNER_LENGTH:
            raise UsageError(f"{owner.display} is longer than {OWNER_LENGTH} characters")
    now = utcnow()  # whether a cron fires again: no database needed to know
    for cron in (request.schedule_cron, request.pass_cron):
        if cron is not None and cron is not UNSET:
            validate_cron(cron, now)
    return Options(
        source,
        target,
        request.conflict_policy,
        request.schedule_cron.strip() if request.schedule_cron else None,
        request.confirm_visibility,
        request.confined,
    )


def _side(locator: str, connection_id: str | None) -> OwnerSpec:
    spec = parse_owner(locator)
    if connection_id is None:
        return spec
    return replace(
        spec, connection_id=provider_class(spec.provider).normalize_connection(connection_id)
    )


def _store(ctx: ServiceContext, request: OwnerRequest, options: Options) -> int:
    """Create the pair's owner binding, or give the existing one the request's options."""
    for _ in range(2):  # a concurrent creator may win the unique constraint once
        with ctx.db.transaction() as session:
            now = database_now(session)
            found = session.execute(
                select(OwnerBinding).where(
                    OwnerBinding.source_provider == options.source.provider,
                    OwnerBinding.source_owner == options.source.locator,
                    OwnerBinding.target_provider == options.target.provider,
                    OwnerBinding.target_owner == options.target.locator,
                )
            ).scalar_one_or_none()
            if found is None:
                found = OwnerBinding(
                    source_provider=options.source.provider,
                    source_owner=options.source.locator,
                    target_provider=options.target.provider,
                    target_owner=options.target.locator,
                    pass_cron=DEFAULT_PASS_CRON,
                )
            # A side named without a connection keeps its own (as a Binding's does).
            if options.source.connection_id is not None:
                found.source_connection_id = options.source.connection_id
            if options.target.connection_id is not None:
                found.target_connection_id = options.target.connection_id
            if options.conflict_policy is not None:
                found.ref_conflict_policy = options.conflict_policy.value
            if options.schedule_cron is not None:
                found.schedule_cron = options.schedule_cron
            found.confirm_visibility = found.confirm_visibility or options.confirm_visibility
            found.confined = found.confined or options.confined
            if request.pass_cron is not UNSET:
                found.pass_cron = request.pass_cron.strip() if request.pass_cron else None
            if found.id is None or request.pass_cron is not UNSET:
                found.next_pass_at = _following(found, now)
            try:
                with session.begin_nested():
                    session.add(found)
                    session.flush()
            except IntegrityError:
                continue
            return found.id
    raise RuntimeError("owner binding creation raced twice")  # pragma: no cover


# -- a pass ---------------------------------------------------------------------------------


def run_pass(
    ctx: ServiceContext,
    owner_binding_id: int,
    *,
    dry_run: bool = False,
    trigger: Trigger = Trigger.MANUAL,
    queue_runs: bool = True,
    listings: tuple[list[OwnedRepository], list[OwnedRepository]] | None = None,
) -> PassReport:
    """One pass of the owner binding: bind what is new, report the rest; keeps the report
    (``last_pass``) unless a dry run. ``OwnerBindingBusy`` while another pass runs."""
    row = get_owner_binding(ctx, owner_binding_id)
    options = Options(
        OwnerSpec(row.source_provider, row.source_owner, row.source_connection_id),
        OwnerSpec(row.target_provider, row.target_owner, row.target_connection_id),
        RefConflictPolicy(row.ref_conflict_policy) if row.ref_conflict_policy else None,
        row.schedule_cron,
        row.confirm_visibility,
        row.confined,
    )
    if dry_run:
        return owner_pass.run(ctx, options, owner_binding_id, dry_run=True, listings=listings)
    claimed_at = _claim(ctx, owner_binding_id)
    report = PassReport(
        options.source.display, options.target.display, False, claimed_at, owner_binding_id
    )
    try:
        owner_pass.run(
            ctx,
            options,
            owner_binding_id,
            dry_run=False,
            listings=listings,
            trigger=trigger,
            queue_runs=queue_runs,
            report=report,
        )
    finally:
        _release(ctx, owner_binding_id, claimed_at, report)
    log.info("owner binding %s: pass %s", owner_binding_id, report.counts())
    return report


def _claim(ctx: ServiceContext, owner_binding_id: int) -> datetime:
    with ctx.db.transaction() as session:
        now = database_now(session)
        claimed = cast(
            CursorResult[Any],
            session.execute(
                update(OwnerBinding)
                .where(
                    OwnerBinding.id == owner_binding_id,
                    or_(
                        OwnerBinding.pass_started_at.is_(None),
                        OwnerBinding.pass_started_at < now - PASS_TIMEOUT,
                    ),
                )
                .values(pass_started_at=now)
            ),
        ).rowcount
        if claimed == 1:  # this is the pass that was due: the tick owes none now
            row = session.get(OwnerBinding, owner_binding_id)
            assert row is not None
            if row.next_pass_at is not None and row.next_pass_at <= now:
                row.next_pass_at = _following(row, now)
    if claimed != 1:
        raise OwnerBindingBusy(f"a pass of owner binding {owner_binding_id} is running")
    return now


def _following(row: OwnerBinding, now: datetime) -> datetime | None:
    """The row's next pass on its own cron (None: on demand only, or a cron that stopped
    firing, which pauses its passes)."""
    if row.pass_cron is None:
        return None
    try:
        return next_slot(row.pass_cron, now)
    except UnschedulableCron as exc:
        log.warning("owner binding %s: passes paused: %s", row.id, exc.message)
        return None


def request_pass(ctx: ServiceContext, owner_binding_id: int) -> OwnerBinding:
    """Ask for a pass now and hand it to a worker. The pass is made due at once, so the
    tick hands it on should the message be lost; the pass that runs takes that due slot
    (``_claim``), so a delivered message and the tick do not both start one."""
    with ctx.db.transaction() as session:
        row = session.get(OwnerBinding, owner_binding_id)
        if row is None:
            raise RecordNotFound(f"owner binding {owner_binding_id} does not exist")
        row.next_pass_at = database_now(session)
    ctx.dispatcher.dispatch_owner_pass(owner_binding_id, Trigger.MANUAL)
    return get_owner_binding(ctx, owner_binding_id)


def _release(
    ctx: ServiceContext, owner_binding_id: int, claimed_at: datetime, report: PassReport
) -> None:
    """Keep the report and free the claim (only if it is still this pass's)."""
    with ctx.db.transaction() as session:
        now = database_now(session)
        if report.finished_at is None:
            report.finished_at = now
            report.error_code = report.error_code or "interrupted"
            report.message = report.message or "the pass stopped before its end"
        session.execute(
            update(OwnerBinding)
            .where(
                OwnerBinding.id == owner_binding_id,
                OwnerBinding.pass_started_at == claimed_at,
            )
            .values(pass_started_at=None, last_pass_at=now, last_pass=report.to_dict())
        )


# -- the tick -------------------------------------------------------------------------------


def tick(ctx: ServiceContext, now: datetime | None = None) -> list[int]:
    """Beat's part for owner bindings: switch on the sync of members whose first full
    apply is done, and hand each owner binding whose pass is due (its cron's slot, or one
    asked for whose message may be lost) to a worker; the next slot is taken in the same
    transaction, so two ticks never start one pass twice. Returns the owner bindings
    whose pass was handed on."""
    switch_sync_on(ctx)
    due: list[int] = []
    with ctx.db.transaction() as session:
        now = now or database_now(session)
        rows = (
            session.execute(
                select(OwnerBinding)
                .where(OwnerBinding.next_pass_at <= now)
                .order_by(OwnerBinding.next_pass_at)
                .limit(TICK_BATCH)
                .with_for_update(skip_locked=True)
            )
            .scalars()
            .all()
        )
        for row in rows:
            row.next_pass_at = _following(row, now)
            due.append(row.id)
    for owner_binding_id in due:
        ctx.dispatcher.dispatch_owner_pass(owner_binding_id, Trigger.SCHEDULE)
    return due


def switch_sync_on(ctx: ServiceContext) -> list[int]:
    """Switch on the sync of each member Binding once its first full apply is done (the
    rule ``update_binding`` enforces), once: a Binding an operator switches off later
    stays off. A Binding with an active Run or an unknown write waits for the next tick.
    Returns the Bindings switched on."""
    with ctx.db.session() as session:
        ready = session.execute(
            select(OwnerBindingMember.id, Binding.id)
            .join(Binding, Binding.id == OwnerBindingMember.binding_id)
            .where(
                OwnerBindingMember.sync_switched_on.is_(False),
                Binding.last_full_apply_epoch == Binding.authority_epoch,
            )
            .order_by(OwnerBindingMember.id)
            .limit(TICK_BATCH)
        ).all()
    switched = []
    for member_id, binding_id in ready:
        try:
            update_binding(ctx, binding_id, sync_enabled=True)
        except (NotAllowedNow, RecordNotFound) as exc:
            log.info("binding %s: sync not switched on yet: %s", binding_id, exc.message)
            continue
        with ctx.db.transaction() as session:
            session.execute(
                update(OwnerBindingMember)
                .where(OwnerBindingMember.id == member_id)
                .values(sync_switched_on=True)
            )
        switched.append(binding_id)
    return switched


# -- reads and forgetting ---------------------------------------------------------------------


def get_owner_binding(ctx: ServiceContext, owner_binding_id: int) -> OwnerBinding:
    with ctx.db.session() as session:
        row = session.get(OwnerBinding, owner_binding_id)
        if row is None:
            raise RecordNotFound(f"owner binding {owner_binding_id} does not exist")
        session.expunge(row)
    return row


def list_owner_bindings(
    ctx: ServiceContext, *, after_id: int | None = None, limit: int = 50
) -> list[OwnerBinding]:
    with ctx.db.session() as session:
        query = select(OwnerBinding).order_by(OwnerBinding.id).limit(limit)
        if after_id is not None:
            query = query.where(OwnerBinding.id > after_id)
        rows = list(session.execute(query).scalars())
        session.expunge_all()
    return rows


def members_of(ctx: ServiceContext, owner_binding_id: int) -> list[OwnerBindingMember]:
    get_owner_binding(ctx, owner_binding_id)
    return sorted(owner_pass.members(ctx, owner_binding_id).values(), key=lambda m: m.ordinal)


def delete_owner_binding(ctx: ServiceContext, owner_binding_id: int) -> None:
    """Forget the owner binding and which Bindings it made; the Bindings stay (delete
    them one by one: each may hold links and Runs an operator wants to keep)."""
    with ctx.db.transaction() as session:
        row = session.get(OwnerBinding, owner_binding_id)
        if row is None:
            raise RecordNotFound(f"owner binding {owner_binding_id} does not exist")
        session.delete(row)


def _now(ctx: ServiceContext) -> datetime:
    with ctx.db.session() as session:
        return database_now(session)
