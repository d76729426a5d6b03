"""How one batch of items reaches the target, per object type.

An applier gets items already persisted ``applying`` (intent before write), performs
the external write, and reports what read-back proved for each item. It never decides
an item succeeded from a write's response alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reposync.errors import ProviderError
from reposync.git import transport
from reposync.git.workspace import PushWorkspace
from reposync.providers.base import GitRemote, GitRemoteSource, Provider
from reposync.service.execution import StageExecution
from reposync.sync.vocabulary import Action, ItemState, ObjectType


@dataclass(frozen=True, slots=True)
class ApplyItem:
    """A RunItem as the apply step sees it (plain data, detached from any session)."""

    id: int
    object_type: ObjectType
    object_key: str
    action: Action
    source_identity: str | None
    target_identity: str | None
    source_revision: str | None
    desired_hash: str | None
    expected_target_hash: str | None
    intent: dict[str, Any] = field(default_factory=dict)
    attempt_count: int = 0


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    item: ApplyItem
    state: ItemState
    error_code: str | None = None
    error_message: str | None = None
    #: What read-back observed on the target (for the link).
    target_identity: str | None = None
    target_revision: str | None = None


class Applier(Protocol):
    """One object type's way to the target. The applying stage calls, in order:
    ``prepare`` (source re-read: supersede, no-ops), ``write`` (the only external write),
    then ``read_back`` (the only judge of success)."""

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        """Split a batch into items to write and items already settled."""

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> dict[int, str]:
        """Write the items; returns {item id: why the target refused it}."""

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        """COMPLETED where the target holds the desired state, else PLANNED."""


def settled_by(item: ApplyItem, observed_hash: str | None, exists: bool) -> bool:
    """Whether the target already holds what the item wanted."""
    if item.action is Action.DELETE:
        return not exists
    return exists and observed_hash == item.desired_hash


class GitRefApplier:
    """Branches and tags: one ``git push`` per batch, each ref leased on its expected value."""

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        # The source is re-read right before the write: what moved since planning is
        # superseded (a follow-up Run takes it), what reappeared supersedes its delete.
        current = ex.source().read_batch(
            ObjectType.GIT_REF, [i.source_identity for i in items if i.source_identity]
        )
        to_write: list[ApplyItem] = []
        settled: list[ItemOutcome] = []
        for item in items:
            now = current.get(item.source_identity or "")
            now_revision = now.revision if now is not None else None
            if item.action is Action.DELETE and now is not None:
                settled.append(_superseded(item, "reappeared on the source"))
            elif item.action is not Action.DELETE and now_revision != item.source_revision:
                settled.append(_superseded(item, f"moved on the source to {now_revision}"))
            elif item.action is Action.NOOP:
                settled.append(
                    ItemOutcome(
                        item,
                        ItemState.COMPLETED,
                        target_identity=item.target_identity,
                        target_revision=item.source_revision,
                    )
                )
            else:
                to_write.append(item)
        return to_write, settled

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> dict[int, str]:
        source, target = ex.source(), ex.target()
        source_remote = _remote(source, write=False)
        target_remote = _remote(target, write=True)
        if not source_remote.is_local:
            raise ProviderError(
                f"{ex.spec('source').display}: pushing from a remote source needs a local "
                "mirror, which this provider does not offer yet"
            )
        updates = [
            transport.RefUpdate(
                name=item.target_identity or "",
                new=item.source_revision if item.action is not Action.DELETE else None,
                expected_old=item.intent.get("expected_revision"),
            )
            for item in items
        ]
        assert source_remote.objects_dir is not None
        workspace = PushWorkspace(
            ex.ctx.settings.data_dir / "git" / f"binding-{ex.binding.id}.git",
            source_remote.objects_dir,
        )
        pushed = transport.push(workspace, target_remote.url, updates, env=dict(target_remote.env))
        ex.count_io("pushes", pushed.groups)
        target.stats.writes += len(pushed.accepted)
        return {
            item.id: f"the target ref changed since planning; push refused "
            f"({pushed.rejected[item.target_identity or '']})"
            for item in items
            if (item.target_identity or "") in pushed.rejected
        }

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        observed = ex.target().read_batch(
            ObjectType.GIT_REF, [i.target_identity or "" for i in items]
        )
        outcomes = []
        for item in items:
            obj = observed.get(item.target_identity or "")
            done = settled_by(item, obj.content_hash if obj else None, obj is not None)
            outcomes.append(
                ItemOutcome(
                    item,
                    ItemState.COMPLETED if done else ItemState.PLANNED,
                    target_identity=item.target_identity,
                    target_revision=obj.revision if obj is not None else None,
                )
            )
        return outcomes


def _superseded(item: ApplyItem, why: str) -> ItemOutcome:
    return ItemOutcome(item, ItemState.SUPERSEDED, "superseded", f"{item.object_key} {why}")


def _remote(provider: Provider, *, write: bool) -> GitRemote:
    if not isinstance(provider, GitRemoteSource):
        raise ProviderError(f"the {provider.name} provider offers no Git transport")
    return provider.git_remote(write=write)


APPLIERS: dict[ObjectType, Applier] = {ObjectType.GIT_REF: GitRefApplier()}


def applier_for(object_type: ObjectType) -> Applier:
    return APPLIERS[object_type]
