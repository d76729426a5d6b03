"""What a Run would change, computed without a Run: the proposal of a dry-run reconcile.

A dry-run *Run* persists a Run row, its inventory snapshot, its RunItems and events, and
takes the Binding's lease: everything a Run needs to survive a worker's death. A
proposal needs none of that; it is answered to one request and forgotten. So it runs the
same steps in memory:

* the same reads as the stages ``checking_access`` (read access only: nothing will be
  written), ``inventory_source`` and ``inventory_target`` (the same choice of plan mode
  from the audit mode, the links and an empty target);
* the planning stage's own ``planned_items``, so the proposal is the plan a Run would
  make, item for item;

and writes nothing at all: not the visibility the access stage records, not a marker on
the standby. Its ``StageExecution`` holds a lease no Binding can ever hold (generation
-1, already lost), so a fenced write or an external write reached by mistake is refused
with ``LeaseLost`` instead of happening.

The cost is a Run's inventory, in the request that asks for it, with the source index
and the links in memory (as the inventory stage holds them too).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reposync.errors import BindingBusy, ResultUnknownUnresolved, VisibilityUnconfirmed
from reposync.lifecycle import AuditMode, RunKind, RunMode, Stage, Trigger
from reposync.models import Binding, Run, utcnow
from reposync.providers.base import EmptyChecker
from reposync.service.context import ServiceContext
from reposync.service.lookups import active_run, get_binding
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.leases import Lease
from reposync.service.pipeline.stages.inventory import SYNCED_TYPES, held, held_types
from reposync.service.pipeline.stages.objects.link_states import has_links, load_links
from reposync.service.pipeline.stages.planning import planned_items
from reposync.service.pipeline.stages.visibility import (
    RANK,
    confirmation_hash,
    reported_visibility,
)
from reposync.service.unknown_outcomes import unresolved_unknown
from reposync.sync.canonical import DigestBuilder, IndexEntry
from reposync.sync.planner import PlanMode, PlannedItem, select_candidates
from reposync.sync.vocabulary import Action

#: The actions a proposal lists item by item: what would change, or needs a decision.
LISTED = (Action.CREATE, Action.UPDATE, Action.DELETE, Action.CONFLICT)


@dataclass(frozen=True, slots=True)
class ProposedItem:
    """One object a Run would change (a subset of its RunItem)."""

    object_type: str
    object_key: str
    action: str
    reason: str
    source_identity: str | None
    target_identity: str | None
    source_revision: str | None


@dataclass(frozen=True, slots=True)
class Blocker:
    """Something that would stop an apply now, by its error code."""

    code: str
    message: str


@dataclass(slots=True)
class Proposal:
    binding_id: int
    audit_mode: str
    plan_mode: str
    source_side: str
    target_side: str
    #: The source inventory the proposal was made from: a Run's ``source_digest`` equal to
    #: it planned from the same source.
    source_digest: str
    #: Object type -> action -> count, and the same summed over types.
    object_types: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    scanned: dict[str, int] = field(default_factory=dict)
    checkpoint_skipped: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    unsupported: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, Any] = field(default_factory=dict)
    #: The changes (``LISTED`` actions) in execution order, the first ``item_limit``.
    items: list[ProposedItem] = field(default_factory=list)
    items_total: int = 0
    truncated: bool = False
    blockers: list[Blocker] = field(default_factory=list)
    active_run_id: int | None = None
    computed_at: datetime = field(default_factory=utcnow)


def propose(
    ctx: ServiceContext,
    binding_id: int,
    *,
    audit_mode: AuditMode = AuditMode.CHECKPOINT,
    item_limit: int = 100,
) -> Proposal:
    """The plan a normal Run of the Binding would make now, written nowhere."""
    with ctx.db.session() as session:
        binding = get_binding(session, binding_id)
        active = active_run(session, binding_id)
        unknown = unresolved_unknown(session, binding_id)
        session.expunge(binding)
    ex = _execution(ctx, binding, audit_mode)
    try:
        source, target = ex.source(), ex.target()
        source.check_access(write=False)
        target.check_access(write=False)
        blockers = _visibility(ex, reported_visibility(source), reported_visibility(target))
        listing = source.inventory_index(SYNCED_TYPES)
        holds = held_types(target)
        held(listing, holds)
        digest = DigestBuilder()
        entries = []
        for entry in listing.entries:
            digest.add(entry)
            entries.append(entry)
        target_entries: list[IndexEntry] = []
        if has_links(ex):
            full = audit_mode is AuditMode.FULL
            mode = PlanMode.FULL_AUDIT if full else PlanMode.CHECKPOINT
        elif isinstance(target, EmptyChecker) and target.is_empty():
            mode = PlanMode.EMPTY_TARGET
        else:
            mode = PlanMode.BASELINE
            target_listing = target.inventory_index(SYNCED_TYPES)
            held(target_listing, holds, count=False)
            target_entries = list(target_listing.entries)
        links = {} if mode is PlanMode.EMPTY_TARGET else load_links(ex)
        candidates = select_candidates(mode, entries, links)
        items, unchanged = planned_items(ex, mode, candidates.candidates, lambda: target_entries)
    finally:
        ex.close()
    if active is not None:
        blockers.append(
            Blocker(BindingBusy.code, f"run {active.id} is active; it may change this plan")
        )
    if unknown:
        blockers.append(
            Blocker(
                ResultUnknownUnresolved.code,
                f"{unknown} write(s) of an earlier Run have an unknown outcome; recover it first",
            )
        )
    proposal = Proposal(
        binding_id=binding.id,
        audit_mode=audit_mode.value,
        plan_mode=mode.value,
        source_side=ex.run.source_side,
        target_side=ex.run.target_side,
        source_digest=digest.hexdigest(),
        scanned=candidates.scanned,
        checkpoint_skipped=candidates.checkpoint_skipped,
        unchanged=unchanged,
        unsupported=dict(listing.unsupported),
        rejected={code: r.to_dict() for code, r in sorted(listing.rejected.items())},
        blockers=blockers,
        active_run_id=active.id if active is not None else None,
    )
    _count(proposal, items, item_limit)
    return proposal


def _execution(ctx: ServiceContext, binding: Binding, audit_mode: AuditMode) -> StageExecution:
    """A stage execution of a Run that exists nowhere, under a lease that fences nothing."""
    source = binding.authority
    run = Run(
        id=0,
        binding_id=binding.id,
        kind=RunKind.NORMAL.value,
        mode=RunMode.DRY_RUN.value,
        audit_mode=audit_mode.value,
        trigger=Trigger.MANUAL.value,
        source_side=source.value,
        target_side=source.other.value,
        authority_epoch=binding.authority_epoch,
        stage=Stage.PLANNING.value,
    )
    lease = Lease(binding.id, 0, "proposal", generation=-1, ttl=0.0, deadline=0.0)
    lease.lost.set()
    return StageExecution(ctx, lease, run, binding)


def _visibility(
    ex: StageExecution, source_vis: str | None, target_vis: str | None
) -> list[Blocker]:
    """The access stage's visibility rule, read-only: would an apply be refused?"""
    if source_vis is None or target_vis is None:
        return []
    if RANK.get(target_vis, 2) <= RANK.get(source_vis, 2):
        return []
    expected = confirmation_hash(ex.binding, ex.source_side, source_vis, target_vis)
    if ex.binding.visibility_confirmation == expected:
        return []
    return [
        Blocker(
            VisibilityUnconfirmed.code,
            f"the standby is {target_vis} but the authority is {source_vis}; an apply "
            "needs the visibility confirmed on the Binding",
        )
    ]


def _count(proposal: Proposal, items: Sequence[PlannedItem], item_limit: int) -> None:
    by_type: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    totals: dict[str, int] = defaultdict(int)
    listed: list[ProposedItem] = []
    changes = 0
    for item in items:
        by_type[item.object_type.value][item.action.value] += 1
        totals[item.action.value] += 1
        if item.action not in LISTED:
            continue
        changes += 1
        if len(listed) < item_limit:
            listed.append(
                ProposedItem(
                    object_type=item.object_type.value,
                    object_key=item.object_key,
                    action=item.action.value,
                    reason=item.reason.value,
                    source_identity=item.source_identity,
                    target_identity=item.target_identity,
                    source_revision=item.source_revision,
                )
            )
    proposal.object_types = {name: dict(counts) for name, counts in sorted(by_type.items())}
    proposal.totals = dict(totals)
    proposal.items = listed
    proposal.items_total = changes
    proposal.truncated = changes > len(listed)
