"""Authority handoff: the standby becomes the authority without losing anything.

1. A final forward Run, full audit (kind ``handoff``): the standby equals the authority.
2. The old authority is frozen where the provider can (a local forge refuses edits), and
   its digest is taken.
3. A reverse dry-run from the new authority must plan no write at all.
4. The old authority's digest must be unchanged (nothing moved during the handoff).
5. One fenced transaction flips ``authority_side``, increments ``authority_epoch`` and
   turns ``sync_enabled`` off until a full apply in the new direction.

Any failed step aborts with the reason in the handoff Run's report; the authority stays
where it was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.orm import Session

from reposync.errors import NotAllowedNow, ReposyncError
from reposync.lifecycle import AuditMode, RunKind, RunMode, Side, Stage, Trigger
from reposync.models import Binding, Run
from reposync.providers.base import StandbyMarker
from reposync.service.context import ServiceContext, Step
from reposync.service.events import emit
from reposync.service.lookups import active_run, endpoint_spec, get_binding
from reposync.service.outbox import HANDOFF_COMPLETED, dispatch_deliveries, notify
from reposync.service.pipeline.leases import ClaimRefused, claim_binding, fenced, new_owner, release
from reposync.service.pipeline.runner import run_until_done
from reposync.service.pipeline.stages.inventory import SYNCED_TYPES
from reposync.service.runs import create_run
from reposync.service.unknown_outcomes import require_no_unknown
from reposync.sync.canonical import DigestBuilder

log = logging.getLogger(__name__)

WRITE_ACTIONS = ("create", "update", "delete", "conflict")


@dataclass(frozen=True, slots=True)
class HandoffOutcome:
    switched: bool
    forward_run_id: int
    reverse_run_id: int | None
    reason: str
    authority_side: str
    authority_epoch: int


def start_handoff(ctx: ServiceContext, binding_id: int) -> Run:
    """Queue the handoff: its forward Run now, the rest in the worker that executes it."""
    with ctx.db.session() as session:
        if active_run(session, binding_id) is not None:
            raise NotAllowedNow(f"binding {binding_id} has an active Run; wait for it first")
        require_no_unknown(session, binding_id, "a handoff")
    run = create_run(
        ctx, binding_id, audit_mode=AuditMode.FULL, kind=RunKind.HANDOFF, trigger=Trigger.MANUAL
    )
    ctx.dispatcher.dispatch_handoff(binding_id, run.id)
    return run


def handoff(
    ctx: ServiceContext, binding_id: int, forward_run_id: int | None = None
) -> HandoffOutcome:
    """Run the whole handoff in this process (the embedded mode, or the handoff task)."""
    if forward_run_id is None:
        forward_run_id = create_run(
            ctx, binding_id, audit_mode=AuditMode.FULL, kind=RunKind.HANDOFF, trigger=Trigger.MANUAL
        ).id
    run_until_done(ctx, Step(forward_run_id, None, None))  # resumes where it stopped
    forward = _load(ctx, forward_run_id)
    with ctx.db.session() as session:
        binding = get_binding(session, binding_id)
        session.expunge(binding)
    settled = _settled(forward, binding)
    if settled is not None:  # a duplicate delivery of the handoff task: touch nothing
        return settled
    if forward.status != "completed":
        return _abort(
            ctx, binding_id, forward, None, f"the final forward Run ended {forward.status}"
        )
    old, new = Side(forward.source_side), Side(forward.target_side)
    _mark(ctx, binding, old, authority=endpoint_spec(binding, new).display)  # freeze it

    reverse = create_run(
        ctx,
        binding_id,
        mode=RunMode.DRY_RUN,
        audit_mode=AuditMode.FULL,
        kind=RunKind.HANDOFF,
        trigger=Trigger.MANUAL,
        reverse=True,
    )
    run_until_done(ctx, Step(reverse.id, Stage.CHECKING_ACCESS, None))
    reverse = _load(ctx, reverse.id)
    planned = dict(reverse.report.get("planned_actions", {}))
    if (reverse.report.get("default_branch") or {}).get("action") == "create":
        # The old authority's HEAD names no branch: giving it the standby's loses nothing.
        planned["create"] = planned.get("create", 0) - 1
    writes = {action: planned[action] for action in WRITE_ACTIONS if planned.get(action)}
    if reverse.status != "completed" or writes:
        reason = f"the reverse dry-run was not empty ({reverse.status}, would {writes})"
    elif _digest(ctx, binding, old) != forward.source_digest:
        reason = "the authority changed during the handoff (its digest moved)"
    else:
        reason = ""
    if reason:
        _mark(ctx, binding, old, authority=None)  # thaw the old authority
        return _abort(ctx, binding_id, forward, reverse.id, reason)

    switched = _switch(ctx, binding_id, forward, reverse.id)
    if not switched:
        with ctx.db.session() as session:
            if get_binding(session, binding_id).authority_epoch != forward.authority_epoch:
                # Another execution of this handoff switched first; its marks stand.
                return HandoffOutcome(
                    False,
                    forward.id,
                    reverse.id,
                    "switched by another execution",
                    new.value,
                    forward.authority_epoch + 1,
                )
        _mark(ctx, binding, old, authority=None)
        return _abort(
            ctx,
            binding_id,
            forward,
            reverse.id,
            "the Binding was claimed by another execution during the switch",
        )
    _mark(ctx, binding, new, authority=None)  # the new authority is writable again
    return HandoffOutcome(
        True, forward.id, reverse.id, "switched", new.value, forward.authority_epoch + 1
    )


def _settled(forward: Run, binding: Binding) -> HandoffOutcome | None:
    """The outcome of a handoff that already ended (switched, aborted or overtaken)."""
    recorded = (forward.report or {}).get("handoff")
    if recorded is None and binding.authority_epoch == forward.authority_epoch:
        return None
    reason = (recorded or {}).get("reason", "the authority changed since this handoff began")
    return HandoffOutcome(
        bool((recorded or {}).get("switched")),
        forward.id,
        (recorded or {}).get("reverse_run_id"),
        f"already settled: {reason}",
        binding.authority_side,
        binding.authority_epoch,
    )


def _switch(ctx: ServiceContext, binding_id: int, forward: Run, reverse_id: int) -> bool:
    """Flip the authority if it is still where the forward Run found it (one row or none)."""
    claimed = claim_binding(
        ctx.db, binding_id, forward.id, owner=new_owner("handoff"), ttl=ctx.settings.lease_ttl
    )
    if isinstance(claimed, ClaimRefused):
        return False
    old = Side(forward.source_side)
    with fenced(ctx.db, claimed) as session:
        flipped = cast(
            CursorResult[Any],
            session.execute(
                update(Binding)
                .where(
                    Binding.id == binding_id,
                    Binding.authority_side == old.value,
                    Binding.authority_epoch == forward.authority_epoch,
                )
                .values(
                    authority_side=old.other.value,
                    authority_epoch=Binding.authority_epoch + 1,
                    sync_enabled=False,
                    next_run_at=None,
                )
            ),
        ).rowcount
        if not flipped:
            release(session, claimed)
            return False
        run = session.get(Run, forward.id)
        assert run is not None
        run.report = {
            **(run.report or {}),
            "handoff": {"switched": True, "reason": "switched", "reverse_run_id": reverse_id},
        }
        emit(
            session,
            forward.id,
            "handoff_switched",
            Stage.COMPLETED.value,
            generation=claimed.generation,
            message=f"authority moved from side {old.value} to {old.other.value}",
        )
        # Subscribers hear of the switch in its own transaction (the outbox rule).
        deliveries = notify(
            session,
            HANDOFF_COMPLETED,
            _handoff_payload(session, binding_id, forward, reverse_id),
            binding_id=binding_id,
        )
        release(session, claimed)
    dispatch_deliveries(ctx, deliveries)
    return True


def _handoff_payload(
    session: Session, binding_id: int, forward: Run, reverse_id: int
) -> dict[str, Any]:
    """What ``handoff.completed`` says: who is the authority now, and the Runs that
    proved the switch safe."""
    binding = get_binding(session, binding_id)
    session.refresh(binding)  # the flip above was a Core UPDATE
    new = binding.authority
    provider, _, locator, _ = binding.side(new)
    old_provider, _, old_locator, _ = binding.side(new.other)
    return {
        "binding": {
            "id": binding.id,
            "source": f"{provider}:{locator}",
            "target": f"{old_provider}:{old_locator}",
            "authority_side": binding.authority_side,
            "authority_epoch": binding.authority_epoch,
        },
        "previous_authority_side": new.other.value,
        "forward_run_id": forward.id,
        "reverse_run_id": reverse_id,
        "sync_enabled": binding.sync_enabled,
    }


def _abort(
    ctx: ServiceContext, binding_id: int, forward: Run, reverse_id: int | None, reason: str
) -> HandoffOutcome:
    log.warning("handoff of binding %s aborted: %s", binding_id, reason)
    with ctx.db.transaction() as session:
        emit(session, forward.id, "handoff_aborted", Stage.COMPLETED.value, message=reason)
        run = session.get(Run, forward.id)
        assert run is not None
        run.report = {
            **(run.report or {}),
            "handoff": {"switched": False, "reason": reason, "reverse_run_id": reverse_id},
        }
        binding = get_binding(session, binding_id)
        side, epoch = binding.authority_side, binding.authority_epoch
    return HandoffOutcome(False, forward.id, reverse_id, reason, side, epoch)


def _digest(ctx: ServiceContext, binding: Binding, side: Side) -> str:
    """The stable digest of one side's full inventory (what a forward Run records)."""
    assert ctx.open_provider is not None
    provider = ctx.open_provider(endpoint_spec(binding, side))
    try:
        builder = DigestBuilder()
        for entry in provider.inventory_index(SYNCED_TYPES).entries:
            builder.add(entry)
        return builder.hexdigest()
    finally:
        provider.close()


def _mark(ctx: ServiceContext, binding: Binding, side: Side, *, authority: str | None) -> None:
    """Freeze (or thaw) one side against edits outside the sync, where it can be done."""
    assert ctx.open_provider is not None
    try:
        provider = ctx.open_provider(endpoint_spec(binding, side))
    except ReposyncError:
        return
    try:
        if isinstance(provider, StandbyMarker):
            provider.mark_standby(authority)
    finally:
        provider.close()


def _load(ctx: ServiceContext, run_id: int) -> Run:
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        session.expunge(run)
        return run
