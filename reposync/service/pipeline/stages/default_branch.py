"""The default branch: how it reaches a target, and how a Run reports it.

It is one object per repository (identity ``HEAD``) in the phase after the refs, so the
branch it names has been pushed when it is set. The write is a plain "point HEAD at
this branch" (``DefaultBranchWriter``): idempotent, so a create and an update are the
same write, and a lost answer is settled by reading the default branch back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from reposync.errors import ProviderError, RateLimited, ResultUnknown, WriteRefused
from reposync.lifecycle import Side
from reposync.models import ObjectLink, RunItem
from reposync.providers.base import DefaultBranchWriter, ItemError, read_index
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.objects.applier_contract import (
    ApplyItem,
    ItemOutcome,
    WriteReport,
)
from reposync.sync.canonical import DEFAULT_BRANCH_IDENTITY
from reposync.sync.vocabulary import Action, ItemState, ObjectType


class DefaultBranchApplier:
    """``Applier`` of ``default_branch`` items (see ``applier_contract``)."""

    def __init__(self) -> None:
        self._branch: str | None = None  # the source's, as re-read by ``prepare``

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        # Re-read right before the write: a source whose default branch moved since
        # planning supersedes the item (the follow-up Run sets the new one).
        now = ex.source().read_batch(ObjectType.DEFAULT_BRANCH, [DEFAULT_BRANCH_IDENTITY])
        current = now.get(DEFAULT_BRANCH_IDENTITY)
        self._branch = str(current.payload["branch"]) if current is not None else None
        to_write: list[ApplyItem] = []
        settled: list[ItemOutcome] = []
        for item in items:
            if item.source_gone:
                # Nothing is written for a source without a default branch; the target's
                # stays as it is and the link is forgotten (or the item superseded when
                # the source has one again).
                state = ItemState.COMPLETED if current is None else ItemState.SUPERSEDED
                settled.append(ItemOutcome(item, state, target_identity=item.target_identity))
            elif current is None or current.content_hash != item.desired_hash:
                moved = current.revision if current is not None else "no branch"
                settled.append(
                    ItemOutcome(
                        item,
                        ItemState.SUPERSEDED,
                        ItemError(
                            "superseded", f"the default branch moved on the source to {moved}"
                        ),
                    )
                )
            elif item.action is Action.NOOP:
                settled.append(
                    ItemOutcome(
                        item,
                        ItemState.COMPLETED,
                        target_identity=DEFAULT_BRANCH_IDENTITY,
                        target_revision=item.source_revision,
                    )
                )
            else:
                to_write.append(item)
        return to_write, settled

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> WriteReport:
        target = ex.target()
        if not isinstance(target, DefaultBranchWriter):
            raise ProviderError(f"the {target.name} provider cannot set a default branch")
        report = WriteReport()
        for item in items:
            report.identities[item.id] = DEFAULT_BRANCH_IDENTITY
            if item.desired_hash is not None:
                report.verify_hashes[item.id] = item.desired_hash
            try:
                assert self._branch is not None  # ``prepare`` wrote only with one
                target.set_default_branch(self._branch)
            except WriteRefused as refused:
                report.refused[item.id] = ItemError(refused.refusal, refused.message)
            except ResultUnknown as lost:
                report.unknown[item.id] = lost.message
            except RateLimited as limited:
                report.deferred[item.id] = limited.retry_at
        return report

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        observed = read_index(ex.target(), ObjectType.DEFAULT_BRANCH, [DEFAULT_BRANCH_IDENTITY])
        entry = observed.get(DEFAULT_BRANCH_IDENTITY)
        outcomes = []
        for item in items:
            if item.source_gone:
                outcomes.append(ItemOutcome(item, ItemState.COMPLETED))
                continue
            done = entry is not None and entry.content_hash == item.desired_hash
            outcomes.append(
                ItemOutcome(
                    item,
                    ItemState.COMPLETED if done else ItemState.PLANNED,
                    target_identity=DEFAULT_BRANCH_IDENTITY,
                    target_revision=entry.revision if entry is not None else None,
                    # Setting it again is harmless: a read that does not show it means
                    # it is not set (yet), never that a second write would duplicate.
                    proven_absent=not done,
                )
            )
        return outcomes


def default_branch_report(ex: StageExecution) -> dict[str, Any] | None:
    """The Run report's ``default_branch``: the source's, and what this Run did with it.

    ``None`` when the source has none that this Binding knows of (nothing to report).
    """
    with ex.ctx.db.session() as session:
        item = session.execute(
            select(RunItem.action, RunItem.state, RunItem.source_revision, RunItem.reason)
            .where(
                RunItem.run_id == ex.run_id,
                RunItem.object_type == ObjectType.DEFAULT_BRANCH.value,
            )
            .order_by(RunItem.id.desc())
            .limit(1)
        ).first()
        if item is not None and item.source_revision:
            return {"source": item.source_revision, "action": item.action, "state": item.state}
        revision = ObjectLink.a_revision if ex.source_side is Side.A else ObjectLink.b_revision
        linked = session.execute(
            select(revision).where(
                ObjectLink.binding_id == ex.binding.id,
                ObjectLink.object_type == ObjectType.DEFAULT_BRANCH.value,
            )
        ).scalar_one_or_none()
    if linked:
        return {"source": linked, "action": "unchanged"}
    return None
