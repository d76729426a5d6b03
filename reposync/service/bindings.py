"""Bindings: create one for a pair of repositories, change it, forget it.

Creation validates in an order that writes nothing until every input is known good:
locators and connections, source, target, database; only then is a missing target
created and the Binding made. ``reposync sync``, ``reposync handoff``, ``POST /bindings``
and the web page's New Binding form all bind here.

Visibility is judged when the Binding is made, by the access stage's own rule
(``visibility.observe``): a standby more public than its authority is refused
(``VisibilityUnconfirmed``, no Binding written) unless the request confirms it, and a
confirmation is stored with the new row in its transaction. Finding the pair's existing
Binding refuses nothing: its Runs judge it, as they always do.

A side may name a connection (``SyncRequest.source_connection``/``target_connection``):
the credentials its provider opens it with (GitHub: ``github:installation:<id>``, an App
installation). It is stored on the Binding (``a_connection_id``/``b_connection_id``), so
every Run opens the side the same way on any worker. Who may name which connection is the
entry point's question (``authorization.authorize_connections``), not this module's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.errors import (
    ConnectionMismatch,
    NotAllowedNow,
    RecordNotFound,
    RepositoryNotFound,
    UsageError,
    VisibilityUnconfirmed,
    WrongDirection,
)
from reposync.lifecycle import Side
from reposync.models import Binding, utcnow
from reposync.providers.base import EndpointInfo, EndpointSpec, ProviderEnvironment
from reposync.providers.registry import parse_locator, provider_class
from reposync.service import standby
from reposync.service.context import ServiceContext
from reposync.service.lookups import active_run, endpoint_spec, get_binding
from reposync.service.pipeline.stages.visibility import (
    confirmation_hash,
    observe,
    reported_visibility,
)
from reposync.service.scheduling.cron import next_slot, validate_cron
from reposync.service.unknown_outcomes import require_no_unknown, unresolved_unknown
from reposync.sync.vocabulary import RefConflictPolicy

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A pair to bind, and how to sync it (``embedded.sync`` takes the same request)."""

    source: str
    target: str
    dry_run: bool = False
    full_audit: bool = False
    conflict_policy: RefConflictPolicy | None = None
    #: The operator's yes to a standby more public than the authority: required to make
    #: such a Binding, and stored for both sides' visibilities as they are now.
    confirm_visibility: bool = False
    #: The connection each side is opened with; None: the configured credentials.
    source_connection: str | None = None
    target_connection: str | None = None
    #: Whether a missing target is created (a member's request may not create one).
    create_target: bool = True


#: Called with both opened endpoints before anything is written (an entry point's last
#: check: what the repositories turned out to be); raises to refuse.
Admit = Callable[[EndpointInfo, EndpointInfo], None]


def side_spec(locator: str, connection_id: str | None) -> EndpointSpec:
    """A side as the request names it: its locator, and its connection in the provider's
    canonical spelling (``InvalidConnection`` when the provider cannot read it)."""
    spec = parse_locator(locator)
    if connection_id is None:
        return spec
    normalized = provider_class(spec.provider).normalize_connection(connection_id)
    return replace(spec, connection_id=normalized)


def validate(
    request: SyncRequest, env: ProviderEnvironment | None = None
) -> tuple[EndpointSpec, EndpointSpec, bool]:
    """Check both locators without writing anything; returns (source, target, exists)."""
    source = side_spec(request.source, request.source_connection)
    target = side_spec(request.target, request.target_connection)
    if not provider_class(source.provider).exists(source, env):
        raise RepositoryNotFound(f"source {source.display} does not exist")
    target_exists = provider_class(target.provider).exists(target, env)
    if not target_exists and not request.create_target:
        raise RepositoryNotFound(f"target {target.display} does not exist")
    if not target_exists and request.dry_run:
        raise UsageError(
            f"target {target.display} does not exist; a dry run writes nothing, so it cannot "
            "create it (run without --dry-run)"
        )
    if (source.provider, source.locator) == (target.provider, target.locator):
        raise UsageError("SOURCE and TARGET are the same repository")
    return source, target, target_exists


def bind(ctx: ServiceContext, request: SyncRequest) -> Binding:
    """Validate the pair, create a missing target, and create or reuse its Binding."""
    return bind_pair(ctx, request)[0]


def bind_pair(
    ctx: ServiceContext, request: SyncRequest, admit: Admit | None = None
) -> tuple[Binding, bool]:
    """``bind``, also saying whether the Binding is new; ``admit`` sees both endpoints
    before the Binding is written.

    A missing target is created before the sides' visibilities can be read: only a local
    forge creates one, and it is private, so it is never the more public side.
    """
    source_spec, target_spec, target_exists = validate(request, ctx.environment)
    ctx.db.ensure_current()
    env = ctx.environment
    source = provider_class(source_spec.provider).open(source_spec, env)
    if not target_exists:
        provider_class(target_spec.provider).create(target_spec, env)
    target = provider_class(target_spec.provider).open(target_spec, env)
    try:
        source_info, target_info = source.endpoint(), target.endpoint()
        seen = Visibilities(reported_visibility(source), reported_visibility(target))
    finally:
        source.close()
        target.close()
    if source_info.repository_id == target_info.repository_id:
        raise UsageError("SOURCE and TARGET are the same repository")
    if admit is not None:
        admit(source_info, target_info)
    binding, created = get_or_create_binding(
        ctx,
        source_info,
        target_info,
        ref_conflict_policy=request.conflict_policy or RefConflictPolicy.KEEP_TARGET,
        connections=(source_spec.connection_id, target_spec.connection_id),
        visibilities=seen,
        confirm_visibility=request.confirm_visibility,
    )
    if request.conflict_policy is not None:
        _set_policy(ctx, binding.id, request.conflict_policy)
    if created and not request.dry_run:
        # The standby refuses edits and pushes from now on, not from its first Run (a dry
        # run writes nothing: its Binding's standby is locked by its first applying Run).
        standby.guard(ctx, binding)
    log.info(
        "binding %s (%s): %s -> %s",
        binding.id,
        "new" if created else "existing",
        request.source,
        request.target,
    )
    return binding, created


def find_binding(session: Session, one: EndpointInfo, other: EndpointInfo) -> Binding | None:
    """The Binding of this pair, whichever side each endpoint is on."""

    def pair(a: EndpointInfo, b: EndpointInfo) -> ColumnElement[bool]:
        return (
            (Binding.a_provider == a.provider)
            & (Binding.a_repository_id == a.repository_id)
            & (Binding.b_provider == b.provider)
            & (Binding.b_repository_id == b.repository_id)
        )

    return session.execute(
        select(Binding).where(or_(pair(one, other), pair(other, one)))
    ).scalar_one_or_none()


@dataclass(frozen=True, slots=True)
class Visibilities:
    """What the source and the target said of their visibility when they were opened
    (None: the provider cannot say)."""

    source: str | None = None
    target: str | None = None


def get_or_create_binding(
    ctx: ServiceContext,
    source: EndpointInfo,
    target: EndpointInfo,
    *,
    ref_conflict_policy: RefConflictPolicy = RefConflictPolicy.KEEP_TARGET,
    connections: tuple[str | None, str | None] = (None, None),
    visibilities: Visibilities = Visibilities(),
    confirm_visibility: bool = False,
) -> tuple[Binding, bool]:
    """Reuse the pair's Binding (refreshing moved locators) or create it, source = authority.

    ``connections`` are the source's and the target's connection ids. Raises
    ``WrongDirection`` when the pair exists with ``source`` as its standby, and
    ``ConnectionMismatch`` when it exists and a named connection differs from the one it
    stores (a side named without one keeps its own). A new Binding whose target is more
    public than its source (``visibilities``) is refused with ``VisibilityUnconfirmed``
    unless ``confirm_visibility``; with it, the confirmation of these visibilities is
    stored on the Binding, new or found, in the same transaction.
    """
    for _ in range(2):  # a concurrent creator may win the unique constraint once
        with ctx.db.transaction() as session:
            binding = find_binding(session, source, target)
            if binding is not None:
                authority = binding.side(binding.authority)
                if (authority[0], authority[1]) != (source.provider, source.repository_id):
                    raise WrongDirection(
                        f"{source.display} is the standby of binding {binding.id}; normal "
                        "Runs copy its authority to it, not the other way"
                    )
                _check_connections(binding, (source, target), connections)
                _refresh_locators(binding, source, target)
                if confirm_visibility:
                    binding.visibility_confirmation = confirmation_hash(
                        binding,
                        binding.authority,
                        visibilities.source or "",
                        visibilities.target or "",
                    )
                return binding, False
            try:
                with session.begin_nested():
                    binding = Binding(
                        a_provider=source.provider,
                        a_repository_id=source.repository_id,
                        a_locator=source.locator,
                        b_provider=target.provider,
                        b_repository_id=target.repository_id,
                        b_locator=target.locator,
                        a_connection_id=connections[0],
                        b_connection_id=connections[1],
                        authority_side=Side.A.value,
                        ref_conflict_policy=ref_conflict_policy.value,
                    )
                    judge_visibility(binding, visibilities, confirm_visibility)
                    session.add(binding)
                    session.flush()
                return binding, True
            except IntegrityError:
                continue
    raise RuntimeError("binding creation raced twice")  # pragma: no cover


def judge_visibility(binding: Binding, seen: Visibilities, confirm: bool) -> None:
    """Record what both sides said of their visibility on a new Binding, and refuse one
    whose standby would publish the authority's data without the operator's yes (the
    rule the access stage applies to every Run: ``visibility.observe``)."""
    _, refused = observe(binding, Side.A, seen.source, seen.target)
    if refused and not confirm:
        raise VisibilityUnconfirmed(
            f"{binding.b_provider}:{binding.b_locator} is {seen.target} but "
            f"{binding.a_provider}:{binding.a_locator} is {seen.source}: syncing would "
            "publish private data; bind with confirm_visibility (--confirm-visibility) "
            "if the standby may be more public"
        )
    binding.a_visibility = seen.source
    binding.b_visibility = seen.target
    if confirm:
        binding.visibility_confirmation = confirmation_hash(
            binding, Side.A, seen.source or "", seen.target or ""
        )


def _check_connections(
    binding: Binding,
    infos: tuple[EndpointInfo, EndpointInfo],
    connections: tuple[str | None, str | None],
) -> None:
    for info, named in zip(infos, connections, strict=True):
        if named is None:
            continue
        ours = (binding.a_provider, binding.a_repository_id) == (info.provider, info.repository_id)
        side = Side.A if ours else Side.B
        stored = binding.side(side)[3]
        if stored != named:
            raise ConnectionMismatch(
                f"binding {binding.id} opens {info.display} with "
                f"{stored or 'the configured credentials'}, not {named}"
            )


def _refresh_locators(binding: Binding, *infos: EndpointInfo) -> None:
    """Renames refresh the locator, never the immutable id."""
    for info in infos:
        if (binding.a_provider, binding.a_repository_id) == (info.provider, info.repository_id):
            if binding.a_locator != info.locator:
                binding.a_locator = info.locator
        elif binding.b_locator != info.locator:
            binding.b_locator = info.locator


class _Unset:
    """A PATCH field that was not sent."""


UNSET: Any = _Unset()


def update_binding(
    ctx: ServiceContext,
    binding_id: int,
    *,
    schedule_cron: str | None = UNSET,
    sync_enabled: bool = UNSET,
    ref_conflict_policy: RefConflictPolicy = UNSET,
    full_audit_interval: int = UNSET,
    visibility_confirmation: str | None = UNSET,
    now: datetime | None = None,
) -> Binding:
    """Change what an operator may change; the rules of each field are checked here."""
    with ctx.db.transaction() as session:
        binding = session.execute(
            select(Binding).where(Binding.id == binding_id).with_for_update()
        ).scalar_one_or_none()
        if binding is None:
            raise RecordNotFound(f"binding {binding_id} does not exist")
        now = now or utcnow()
        if schedule_cron is not UNSET:
            binding.schedule_cron = (
                None if schedule_cron is None else validate_cron(schedule_cron, now)
            )
        if ref_conflict_policy is not UNSET:
            binding.ref_conflict_policy = RefConflictPolicy(ref_conflict_policy).value
        if full_audit_interval is not UNSET:
            if full_audit_interval < 3600:
                raise UsageError("full_audit_interval must be at least 3600 seconds")
            binding.full_audit_interval = full_audit_interval
        if visibility_confirmation is not UNSET:
            binding.visibility_confirmation = visibility_confirmation
        if sync_enabled is not UNSET:
            if sync_enabled and not binding.sync_enabled:
                if binding.last_full_apply_epoch != binding.authority_epoch:
                    raise NotAllowedNow(
                        f"binding {binding_id} has had no successful full apply since its "
                        "authority changed; run one (audit_mode=full) before enabling sync"
                    )
                if active_run(session, binding_id) is not None:
                    raise NotAllowedNow(f"binding {binding_id} has an active Run")
                require_no_unknown(session, binding_id, "enabling sync")
            binding.sync_enabled = bool(sync_enabled)
        if binding.sync_enabled and binding.schedule_cron:
            if binding.next_run_at is None or schedule_cron is not UNSET:
                binding.next_run_at = next_slot(binding.schedule_cron, now, binding.schedule_offset)
        else:
            binding.next_run_at = None
        session.flush()
        session.expunge(binding)
    return binding


def sync_blockers(ctx: ServiceContext, binding_id: int) -> list[str]:
    """Why ``sync_enabled`` cannot be switched on now (empty: it can), by the rules
    ``update_binding`` enforces, all of them at once: the web page shows them beside the
    switch instead of letting an operator discover them one refusal at a time."""
    with ctx.db.session() as session:
        binding = get_binding(session, binding_id)
        reasons = []
        if binding.last_full_apply_epoch != binding.authority_epoch:
            reasons.append(
                "no successful full apply since the authority changed: run a full audit first"
            )
        running = active_run(session, binding_id)
        if running is not None:
            reasons.append(f"Run {running.id} is active: wait for it or cancel it")
        unknown = unresolved_unknown(session, binding_id)
        if unknown:
            reasons.append(
                f"{unknown} write(s) of unknown outcome: recover their Run to prove them"
            )
    return reasons


def delete_binding(ctx: ServiceContext, binding_id: int) -> None:
    """Forget a Binding, its Runs and links; never while it runs or a write is unknown.
    Its standby takes edits and pushes again (unless another Binding keeps it one)."""
    with ctx.db.transaction() as session:
        binding = get_binding(session, binding_id)
        if active_run(session, binding_id) is not None:
            raise NotAllowedNow(f"binding {binding_id} has an active Run; cancel it first")
        require_no_unknown(session, binding_id, "deleting the Binding")
        session.delete(binding)
    standby.release(ctx, binding)  # nobody keeps its standby in sync any more


def confirm_visibility(ctx: ServiceContext, binding_id: int) -> Binding:
    """Store the operator's confirmation for the sides' current visibilities."""
    with ctx.db.session() as session:
        binding = get_binding(session, binding_id)
        session.expunge(binding)
    assert ctx.open_provider is not None
    source_side = binding.authority
    source = ctx.open_provider(endpoint_spec(binding, source_side))
    target = ctx.open_provider(endpoint_spec(binding, source_side.other))
    try:
        digest = confirmation_hash(
            binding,
            source_side,
            reported_visibility(source) or "",
            reported_visibility(target) or "",
        )
    finally:
        source.close()
        target.close()
    with ctx.db.transaction() as session:
        stored = get_binding(session, binding_id)
        stored.visibility_confirmation = digest
        session.flush()
        session.expunge(stored)
    return stored


def _set_policy(ctx: ServiceContext, binding_id: int, policy: RefConflictPolicy) -> None:
    with ctx.db.transaction() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        binding.ref_conflict_policy = policy.value
