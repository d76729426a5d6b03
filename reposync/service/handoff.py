"""Authority handoff: the standby becomes the authority without losing anything.

0. An authority reposync cannot freeze (GitHub: ``standby.can_freeze``) is handed off
   only with the operator's word that writes to it stopped (``writes_stopped``).
1. A final forward Run, full audit (kind ``handoff``): the standby equals the authority.
2. The old authority is frozen where the provider can (a local forge refuses edits and
   pushes: ``service/standby.py``), and its digest is taken.
3. A reverse dry-run from the new authority must plan no write at all.
4. The old authority's digest must be unchanged (nothing moved during the handoff).
5. One fenced transaction flips ``authority_side``, increments ``authority_epoch`` and
   turns ``sync_enabled`` off until a full apply in the new direction.
6. The old authority, a standby now, gets its shadow branches as real branches
   (``ShadowMaterializer``): an authority derives the branch of a pull request whose head
   is no branch of its own, a standby holds it. The reverse dry-run saw them derived;
   without this step the first Run in the new direction would push them back.

Any failed step before the switch aborts with the reason in the handoff Run's report;
the authority stays where it was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlalchemy.orm import Session

from reposync.errors import NotAllowedNow, ReposyncError, WritesNotStopped
from reposync.lifecycle import AuditMode, RunKind, RunMode, Side, Stage, Trigger
from reposync.models import Binding, Run
from reposync.providers.base import ShadowMaterializer
from reposync.service import standby
from reposync.service.context import ServiceContext, Step
from reposync.service.events import emit
from reposync.service.lookups import active_run, endpoint_spec, get_binding
from reposync.service.pipeline.leases import ClaimRefused, claim_binding, fenced, new_owner, release
from reposync.service.pipeline.runner import run_until_done
from reposync.service.pipeline.stages.inventory import SYNCED_TYPES
from reposync.service.runs import create_run
from reposync.service.unknown_outcomes import require_no_unknown
from reposync.service.webhooks.outbox import HANDOFF_COMPLETED, dispatch_deliveries, notify
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


def start_handoff(ctx: ServiceContext, binding_id: int, *, writes_stopped: bool = False) -> Run:
    """Queue the handoff: its forward Run now, the rest in the worker that executes it.

    ``writes_stopped``: the operator's word that nobody writes to the authority any more,
    required when reposync cannot freeze it (``WritesNotStopped`` otherwise)."""
    with ctx.db.session() as session:
        if active_run(session, binding_id) is not None:
            raise NotAllowedNow(f"binding {binding_id} has an active Run; wait for it first")
        require_no_unknown(session, binding_id, "a handoff")
        _require_frozen_or_stopped(get_binding(session, binding_id), writes_stopped)
    run = create_run(
        ctx, binding_id, audit_mode=AuditMode.FULL, kind=RunKind.HANDOFF, trigger=Trigger.MANUAL
    )
    ctx.dispatcher.dispatch_handoff(binding_id, run.id)
    return run


def handoff(
    ctx: ServiceContext,
    binding_id: int,
    forward_run_id: int | None = None,
    *,
    writes_stopped: bool = False,
) -> HandoffOutcome:
    """Run the whole handoff in this process (the embedded mode, or the handoff task).

    A new handoff (no ``forward_run_id``) checks ``writes_stopped`` as ``start_handoff``
    does; the task that executes a queued one was checked when it was queued."""
    if forward_run_id is None:
        with ctx.db.session() as session:
            _require_frozen_or_stopped(get_binding(session, binding_id), writes_stopped)
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
        if settled.switched and binding.authority_epoch == forward.authority_epoch + 1:
            # ... but finish step 6, which the first execution may not have reached.
            _keep_shadows(ctx, binding, Side(forward.source_side), forward.id)
        return settled
    if forward.status != "completed":
        return _abort(
            ctx, binding_id, forward, None, f"the final forward Run ended {forward.status}"
        )
    old, new = Side(forward.source_side), Side(forward.target_side)
    try:
        standby.freeze(ctx, binding, old, authority=endpoint_spec(binding, new).display)
    except ReposyncError as exc:
        standby.thaw(ctx, binding, old)  # whatever part of the lock went in
        return _abort(
            ctx, binding_id, forward, None, f"the authority could not be frozen: {exc.message}"
        )

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
        standby.thaw(ctx, binding, old)  # the old authority stays the authority
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
        standby.thaw(ctx, binding, old)
        return _abort(
            ctx,
            binding_id,
            forward,
            reverse.id,
            "the Binding was claimed by another execution during the switch",
        )
    standby.thaw(ctx, binding, new)  # the new authority is writable again
    _keep_shadows(ctx, binding, old, forward.id)
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


def _require_frozen_or_stopped(binding: Binding, writes_stopped: bool) -> None:
    """Step 0: an authority reposync cannot freeze needs the operator's word.

    The digest check sees a write made during the handoff, not one made after the switch:
    on a forge nobody froze, that write would be overwritten by the next Run (or become a
    conflict). Only the operator can stop it (archive the repository, take push rights
    away), and says so."""
    provider, _, locator, _ = binding.side(binding.authority)
    if writes_stopped or standby.can_freeze(provider):
        return
    raise WritesNotStopped(
        f"reposync cannot freeze {provider}:{locator}, the authority of binding {binding.id}: "
        "stop every write to it (pushes, issues, pull requests, releases), then hand off "
        "confirming it (--confirm-writes-stopped, or confirm_writes_stopped: true)"
    )


def _keep_shadows(ctx: ServiceContext, binding: Binding, side: Side, run_id: int) -> None:
    """Step 6: the old authority's derived shadow branches become real branches.

    After the switch, so an aborted handoff leaves the authority as it was. Nothing is
    lost when it fails: the next Run in the new direction plans those branches (its event
    says so)."""
    assert ctx.open_provider is not None
    try:
        provider = ctx.open_provider(endpoint_spec(binding, side))
    except ReposyncError as exc:
        _not_kept(ctx, binding, side, run_id, exc)
        return
    try:
        if not isinstance(provider, ShadowMaterializer):
            return
        created = provider.materialize_shadows()  # a provider opened fresh derives them
    except ReposyncError as exc:
        _not_kept(ctx, binding, side, run_id, exc)
        return
    finally:
        provider.close()
    if created:
        with ctx.db.transaction() as session:
            emit(
                session,
                run_id,
                "shadow_branches_kept",
                Stage.COMPLETED.value,
                counts={"branches": len(created)},
                message=f"{len(created)} shadow branch(es) of pull requests kept as branches "
                f"on side {side.value}, the standby now",
            )


def _not_kept(
    ctx: ServiceContext, binding: Binding, side: Side, run_id: int, exc: ReposyncError
) -> None:
    log.warning("binding %s: shadow branches not kept: %s", binding.id, exc.message)
    with ctx.db.transaction() as session:
        emit(
            session,
            run_id,
            "shadow_branches_not_kept",
            Stage.COMPLETED.value,
            message=f"shadow branches not kept on side {side.value} ({exc.message}); the "
            "next Run in the new direction pushes them",
        )


def _load(ctx: ServiceContext, run_id: int) -> Run:
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        session.expunge(run)
        return run
