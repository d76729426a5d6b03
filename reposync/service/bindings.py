"""Bindings: create or find the pair of endpoints a Run syncs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.errors import NotAllowedNow, RecordNotFound, UsageError, WrongDirection
from reposync.models import Binding, utcnow
from reposync.providers.base import EndpointInfo, EndpointSpec
from reposync.service.context import ServiceContext
from reposync.sync.vocabulary import RefConflictPolicy, Side


def endpoint_spec(binding: Binding, side: Side) -> EndpointSpec:
    provider, repository_id, locator, connection_id = binding.side(side)
    return EndpointSpec(provider, locator, repository_id, connection_id)


def get_binding(session: Session, binding_id: int) -> Binding:
    binding = session.get(Binding, binding_id)
    if binding is None:
        raise RecordNotFound(f"binding {binding_id} does not exist")
    return binding


def find_binding(session: Session, one: EndpointInfo, other: EndpointInfo) -> Binding | None:
    """The Binding of this pair, whichever side each endpoint is on."""

    def pair(a: EndpointInfo, b: EndpointInfo):  # noqa: ANN202 (a SQL expression)
        return (
            (Binding.a_provider == a.provider)
            & (Binding.a_repository_id == a.repository_id)
            & (Binding.b_provider == b.provider)
            & (Binding.b_repository_id == b.repository_id)
        )

    return session.execute(
        select(Binding).where(or_(pair(one, other), pair(other, one)))
    ).scalar_one_or_none()


def get_or_create_binding(
    ctx: ServiceContext,
    source: EndpointInfo,
    target: EndpointInfo,
    *,
    ref_conflict_policy: RefConflictPolicy = RefConflictPolicy.KEEP_TARGET,
) -> tuple[Binding, bool]:
    """Reuse the pair's Binding (refreshing moved locators) or create it, source = authority.

    Raises ``WrongDirection`` when the pair exists with ``source`` as its standby.
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
                _refresh_locators(binding, source, target)
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
                        authority_side=Side.A.value,
                        ref_conflict_policy=ref_conflict_policy.value,
                    )
                    session.add(binding)
                    session.flush()
                return binding, True
            except IntegrityError:
                continue
    raise RuntimeError("binding creation raced twice")  # pragma: no cover


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
    from reposync.service.runs import active_run
    from reposync.service.schedules import next_slot, validate_cron
    from reposync.service.unknown_outcomes import require_no_unknown

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
                binding.next_run_at = next_slot(binding.schedule_cron, now)
        else:
            binding.next_run_at = None
        session.flush()
        session.expunge(binding)
    return binding


def delete_binding(ctx: ServiceContext, binding_id: int) -> None:
    """Forget a Binding, its Runs and links; never while it runs or a write is unknown."""
    from reposync.service.runs import active_run
    from reposync.service.unknown_outcomes import require_no_unknown

    with ctx.db.transaction() as session:
        binding = get_binding(session, binding_id)
        if active_run(session, binding_id) is not None:
            raise NotAllowedNow(f"binding {binding_id} has an active Run; cancel it first")
        require_no_unknown(session, binding_id, "deleting the Binding")
        session.delete(binding)
