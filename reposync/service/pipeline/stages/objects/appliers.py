"""How one batch of items reaches the target, per object type.

An applier gets items already persisted ``applying`` (intent before write), performs
the external write, and reports what read-back proved for each item. It never decides
an item succeeded from a write's response alone. The shapes every applier shares
(``ApplyItem``, ``ItemOutcome``, ``WriteReport``, ``Applier``) are in
``applier_contract``; Git refs and wikis have ``ref_applier``, the default branch
``default_branch``; this module holds the forge objects' applier and picks one per type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import select

from reposync.errors import AssetTooLarge, ProviderError, VerifyMismatch
from reposync.guards import guarded
from reposync.models import RunItem
from reposync.providers.base import (
    AbsenceProver,
    AssetSource,
    ItemError,
    NestedCreator,
    ObjectWriter,
    Provider,
    TargetWrite,
    WriteStatus,
    read_index,
)
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.default_branch import DefaultBranchApplier
from reposync.service.pipeline.stages.objects.applier_contract import (
    Applier,
    ApplyItem,
    ItemOutcome,
    WriteReport,
    superseded,
)
from reposync.service.pipeline.stages.objects.asset_streams import asset_reader
from reposync.service.pipeline.stages.objects.mapping import (
    MappingContext,
    archived_identity,
    build_write,
    expected_target_hash,
    marker,
    target_type,
)
from reposync.service.pipeline.stages.ref_applier import WIKI_REPOSITORY, GitRefApplier
from reposync.sync.canonical import CanonicalObject, IndexEntry
from reposync.sync.key_moves import AFTER_TEMPORARY
from reposync.sync.objects import misplaced
from reposync.sync.vocabulary import Action, ItemState, ObjectType, Representation

#: Types a forge keeps unique by name (``unique_key``) and that carry no marker: an
#: unknown create of one is settled by that name (``ObjectApplier._by_name``).
_NAMED = frozenset({ObjectType.LABEL, ObjectType.MILESTONE})


class ObjectApplier:
    """Labels, issues, comments, releases, ...: ``apply_batch`` on the target provider."""

    def __init__(self) -> None:
        self._sources: dict[str, CanonicalObject | None] = {}
        self._writes: dict[int, TargetWrite] = {}
        self._context: MappingContext | None = None

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        object_type = items[0].object_type
        self._sources = ex.source().read_batch(
            object_type, [i.source_identity for i in items if i.source_identity]
        )
        self._context = MappingContext.load(
            ex, [obj for obj in self._sources.values() if obj is not None]
        )
        representation = object_type.representation
        to_write: list[ApplyItem] = []
        settled: list[ItemOutcome] = []
        for item in items:
            obj = self._sources.get(item.source_identity or "")
            if item.source_gone:
                if obj is not None:
                    settled.append(superseded(item, "reappeared on the source"))
                    continue
            elif obj is None:
                settled.append(superseded(item, "disappeared from the source"))
                continue
            elif obj.content_hash != item.desired_hash:
                settled.append(superseded(item, "changed on the source since planning"))
                continue
            if item.action is not Action.NOOP and (too_large := _too_large(ex, item, obj)):
                settled.append(ItemOutcome(item, ItemState.FAILED, too_large))
                continue
            if item.action is Action.NOOP:
                archived = representation is Representation.ARCHIVE_ONLY
                settled.append(
                    ItemOutcome(
                        item,
                        ItemState.COMPLETED,
                        target_identity=archived_identity(item.source_identity or "")
                        if archived
                        else item.target_identity,
                        target_revision=None if archived else item.intent.get("expected_revision"),
                        representation=representation,
                        source_number=obj.number if obj is not None else None,
                        target_number=obj.number if obj is not None else None,
                    )
                )
                continue
            to_write.append(item)
        return self._adopt_retried_creates(ex, to_write, settled)

    def _adopt_retried_creates(
        self, ex: StageExecution, items: list[ApplyItem], settled: list[ItemOutcome]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        """A create tried before is looked up by its marker right before it is sent again:
        an earlier attempt proven absent may have landed after all (a forge's listing
        can lag behind its writes), and it must never be created twice. So is a create a
        rate limit stopped (``waited``): the limit may have struck between its requests
        (an issue created, then refused its closing edit), which no attempt counts.

        So is every create of a type the target makes together with its parent (a
        review's comments on GitHub): the parent's create carried it, and this item
        adopts what that created instead of creating it a second time.
        """
        target = ex.target()
        nested = _created_with_parent(target, items[0].object_type) if items else False
        retried = [
            i
            for i in items
            if i.action is Action.CREATE and (nested or i.attempt_count > 1 or i.waited)
        ]
        if not retried or not isinstance(target, ObjectWriter):
            return items, settled
        repository_id = ex.spec("source").repository_id or ""
        markers = {
            marker(repository_id, i.object_type, i.source_identity or ""): i for i in retried
        }
        found = target.find_by_markers(target_type(retried[0].object_type), list(markers))
        if not found:
            return items, settled
        adopted = {markers[m].id: identity for m, identity in found.items() if m in markers}
        if self._context is not None:  # a reply in this batch may answer an adopted one
            for item in items:
                if item.id in adopted and item.source_identity:
                    key = (item.object_type, item.source_identity)
                    self._context.targets[key] = adopted[item.id]
        outcomes = self.read_back(
            ex, [replace(i, target_identity=adopted[i.id]) for i in items if i.id in adopted]
        )
        if nested and isinstance(target, NestedCreator):
            shown = target.adopted_representation(items[0].object_type)
            if shown is not None:
                outcomes = [
                    replace(o, representation=shown) if o.state is ItemState.COMPLETED else o
                    for o in outcomes
                ]
        settled.extend(outcomes)
        return [i for i in items if i.id not in adopted], settled

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> WriteReport:
        target = ex.target()
        if not isinstance(target, ObjectWriter):
            raise ProviderError(f"the {target.name} provider cannot write {items[0].object_type}")
        source = ex.source()
        assert self._context is not None
        report = WriteReport()
        writes: list[TargetWrite] = []
        for item in items:
            obj = self._sources.get(item.source_identity or "")
            content = None
            if item.object_type is ObjectType.RELEASE_ASSET and isinstance(source, AssetSource):
                size = int(obj.payload.get("size") or 0) if obj is not None else 0
                content = asset_reader(
                    source, item.source_identity or "", size, limit=ex.ctx.settings.max_asset_bytes
                )
            expected = item.expected_target_hash
            if item.intent.get(AFTER_TEMPORARY) and obj is not None:
                # The target holds what this item's temporary key step wrote.
                expected = expected_target_hash(obj, self._context.numbers, temporary=True)
            write, verify_hash = build_write(
                item.id,
                item.action,
                obj if item.action is not Action.DELETE else None,
                object_type=item.object_type,
                source_identity=item.source_identity or "",
                target_identity=item.target_identity,
                expected_hash=expected,
                context=self._context,
                content=content,
                temporary=item.temporary_key,
            )
            writes.append(write)
            self._writes[item.id] = write
            if verify_hash is not None:
                report.verify_hashes[item.id] = verify_hash
        writes = self._with_nested(ex, items, writes)
        # A cancel, or the lease lost, stops a forge's batch at its next write.
        with guarded(ex.lease.check_write):
            results = target.apply_batch(writes)
        for result in results:
            if result.target_identity:
                report.identities[result.item_id] = result.target_identity
            if result.representation is not None:
                report.representations[result.item_id] = result.representation
            if result.status is WriteStatus.REFUSED:
                report.refused[result.item_id] = result.error or ItemError(
                    "refused", "the target refused the write"
                )
            elif result.status is WriteStatus.UNKNOWN:
                report.unknown[result.item_id] = (
                    result.error.message if result.error is not None else "the response was lost"
                )
            elif result.status is WriteStatus.DEFERRED:
                report.deferred[result.item_id] = result.retry_at or ex.ctx.environment.clock.now()  # type: ignore[union-attr]
        return report

    def _with_nested(
        self, ex: StageExecution, items: Sequence[ApplyItem], writes: list[TargetWrite]
    ) -> list[TargetWrite]:
        """Creates that carry the children their target makes in the same request.

        The children are this Run's planned, not yet attempted creates of a nested type
        whose source parent is created in this batch (a review's top-level comments on
        GitHub; replies answer a comment and are never carried). Each is mapped as its
        own item would be, with that item's id and marker; the item itself comes later
        (its type's batch) and adopts the created child by that marker.
        """
        target = ex.target()
        creates = {w.item_id: w for w in writes if w.action is Action.CREATE}
        if not creates or not isinstance(target, NestedCreator):
            return writes
        parents = {i.source_identity: i.id for i in items if i.id in creates}
        carried: dict[int, list[tuple[str, TargetWrite]]] = {}
        for child_type in sorted(target.nested_types(items[0].object_type)):
            with ex.ctx.db.session() as session:
                rows = session.execute(
                    select(RunItem.id, RunItem.source_identity, RunItem.desired_hash).where(
                        RunItem.run_id == ex.run_id,
                        RunItem.object_type == child_type.value,
                        RunItem.action == Action.CREATE.value,
                        RunItem.state == ItemState.PLANNED.value,
                        RunItem.attempt_count == 0,
                    )
                ).all()
            if not rows:
                continue
            children = ex.source().read_batch(
                child_type, sorted({r.source_identity for r in rows if r.source_identity})
            )
            wanted: list[tuple[int, CanonicalObject]] = []
            for row in rows:
                child = children.get(row.source_identity or "")
                parent = child.refs.get("parent") if child is not None else None
                if (
                    child is None
                    or parent is None
                    or parent.identity not in parents
                    or "in_reply_to" in child.refs
                    or child.content_hash != row.desired_hash  # changed: its item supersedes
                ):
                    continue
                wanted.append((row.id, child))
            if not wanted:
                continue
            context = MappingContext.load(ex, [child for _, child in wanted])
            for item_id, child in wanted:
                write, _ = build_write(
                    item_id,
                    Action.CREATE,
                    child,
                    object_type=child_type,
                    source_identity=child.identity,
                    target_identity=None,
                    expected_hash=None,
                    context=context,
                )
                parent_item = parents[child.refs["parent"].identity]
                carried.setdefault(parent_item, []).append((child.order_key, write))
        if not carried:
            return writes
        return [
            replace(w, nested=tuple(cw for _, cw in sorted(carried[w.item_id], key=lambda p: p[0])))
            if w.item_id in carried
            else w
            for w in writes
        ]

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        target = ex.target()
        object_type = items[0].object_type
        stored_type = target_type(object_type)
        self._load_for_recovery(ex, items)
        identities: dict[int, str | None] = {i.id: i.target_identity for i in items}
        unknown = [i for i in items if identities[i.id] is None and i.action is Action.CREATE]
        if unknown and isinstance(target, ObjectWriter):
            repository_id = ex.spec("source").repository_id or ""
            markers = {
                marker(repository_id, object_type, i.source_identity or ""): i.id for i in unknown
            }
            for found_marker, found in target.find_by_markers(stored_type, list(markers)).items():
                identities[markers[found_marker]] = found
        named = [i for i in unknown if identities[i.id] is None and object_type in _NAMED]
        found_by_name, absent_by_name = self._by_name(ex, named) if named else ({}, set())
        identities.update(found_by_name)
        wanted = [identity for identity in identities.values() if identity]
        observed = read_index(target, stored_type, wanted) if wanted else {}
        absent = absent_by_name | self._proven_absent(
            ex, [i for i in unknown if identities[i.id] is None and i.id not in absent_by_name]
        )
        outcomes = []
        for item in items:
            identity = identities[item.id]
            entry = observed.get(identity) if identity else None
            outcome = self._judge(ex, item, identity, entry)
            if item.id in absent and outcome.state is ItemState.PLANNED:
                outcome = replace(outcome, proven_absent=True)
            outcomes.append(outcome)
        return outcomes

    def _by_name(
        self, ex: StageExecution, creates: Sequence[ApplyItem]
    ) -> tuple[dict[int, str | None], set[int]]:
        """Creates of labels or milestones whose outcome is unknown, found in the
        target's whole listing by the name the forge keeps unique (their ``unique_key``),
        or proven absent from it: they carry no marker to be found by. Before, neither
        read-back nor recovery could settle them: one server error on a label's create
        blocked the Binding for good."""
        object_type = creates[0].object_type
        missing = [
            i.source_identity or ""
            for i in creates
            if (i.source_identity or "") not in self._sources
        ]
        if missing:
            self._sources.update(ex.source().read_batch(object_type, missing))
        names: dict[int, str] = {}
        for item in creates:
            source = self._sources.get(item.source_identity or "")
            if source is not None and source.unique_key:
                names[item.id] = source.unique_key
        stored_type = target_type(object_type)
        held = {
            entry.unique_key: entry.identity
            for entry in ex.target().inventory_index([stored_type]).entries
            if entry.object_type is stored_type and entry.unique_key
        }
        found: dict[int, str | None] = {i: held[name] for i, name in names.items() if name in held}
        return found, set(names) - set(found)

    def _proven_absent(self, ex: StageExecution, creates: Sequence[ApplyItem]) -> set[int]:
        """Creates whose marker the target proves absent (they never happened)."""
        target = ex.target()
        if not creates or not isinstance(target, AbsenceProver):
            return set()
        repository_id = ex.spec("source").repository_id or ""
        markers = {
            marker(repository_id, i.object_type, i.source_identity or ""): i.id for i in creates
        }
        absent = target.markers_absent(target_type(creates[0].object_type), list(markers))
        return {markers[m] for m in absent if m in markers}

    def _judge(
        self,
        ex: StageExecution,
        item: ApplyItem,
        identity: str | None,
        obj: IndexEntry | None,
    ) -> ItemOutcome:
        if item.action is Action.DELETE:
            if obj is None:
                return ItemOutcome(item, ItemState.COMPLETED, target_identity=identity)
            # Still there: the delete never happened, and sending it again cannot do
            # anything twice. Before, a delete whose answer was an error was left
            # unknown, and recovery could not settle it: the Binding blocked for good.
            return ItemOutcome(
                item, ItemState.PLANNED, target_identity=identity, proven_absent=True
            )
        if obj is None:
            return ItemOutcome(item, ItemState.PLANNED, target_identity=identity)
        expected = item.verify_hash or self._recompute_expected(ex, item)
        source = self._sources.get(item.source_identity or "")
        wrong_parent = self._misplaced(source, obj)
        error: ItemError | None = None
        replan_action: Action | None = None
        replan_expected_hash: str | None = None
        if wrong_parent is not None:
            state, error = ItemState.FAILED, ItemError(VerifyMismatch.code, wrong_parent)
        elif obj.content_hash == expected:
            state = ItemState.COMPLETED
        elif item.id in self._writes:  # we just wrote it and it reads back differently
            state = ItemState.PLANNED
        else:
            # Recovery: an earlier execution's write landed (or half of the plan did) but
            # the object differs from what the source wants now: update it in this Run.
            state, replan_action, replan_expected_hash = (
                ItemState.PLANNED,
                Action.UPDATE,
                obj.content_hash,
            )
        return ItemOutcome(
            item,
            state,
            error,
            target_identity=identity,
            target_revision=obj.revision,
            representation=item.object_type.representation,
            source_number=source.number if source is not None else None,
            target_number=obj.number,
            replan_action=replan_action,
            replan_expected_hash=replan_expected_hash,
            proven_absent=state is ItemState.PLANNED and _unchanged_by(item, obj),
        )

    def _misplaced(self, source: CanonicalObject | None, obj: IndexEntry) -> str | None:
        """Why the target object hangs under another issue than the source's, if it does."""
        if source is None or self._context is None:
            return None
        places = misplaced(source.unique_key, obj.unique_key, self._context.numbers)
        if places is None:
            return None
        return f"{source.object_key} is under #{places[0]} on the target, not #{places[1]}"

    def _load_for_recovery(self, ex: StageExecution, items: Sequence[ApplyItem]) -> None:
        """Items settled after a crash have no recorded read-back hash: recompute it."""
        missing = [
            i.source_identity or ""
            for i in items
            if i.verify_hash is None
            and i.action is not Action.DELETE
            and (i.source_identity or "") not in self._sources
        ]
        if not missing:
            return
        self._sources.update(ex.source().read_batch(items[0].object_type, missing))
        self._context = MappingContext.load(
            ex, [obj for obj in self._sources.values() if obj is not None]
        )

    def _recompute_expected(self, ex: StageExecution, item: ApplyItem) -> str | None:
        source = self._sources.get(item.source_identity or "")
        if source is None or self._context is None:
            return None
        return expected_target_hash(source, self._context.numbers, temporary=item.temporary_key)


def _unchanged_by(item: ApplyItem, obj: IndexEntry) -> bool:
    """Whether the target still holds exactly what it held when ``item``'s update was
    planned: then the update never happened, and sending it again cannot do anything
    twice. Before, an update whose answer was an error was left unknown, and recovery
    could not settle it: the Binding blocked for good. Content that is neither the old
    nor the new is not proof (part of a write of several requests may have landed)."""
    return (
        item.action is Action.UPDATE
        and not item.intent.get(AFTER_TEMPORARY)
        and item.expected_target_hash is not None
        and obj.content_hash == item.expected_target_hash
    )


def _too_large(
    ex: StageExecution, item: ApplyItem, obj: CanonicalObject | None
) -> ItemError | None:
    """A release asset over REPOSYNC_MAX_ASSET_BYTES fails here, before its write: no
    target is sent a byte of it (GitHub would refuse it, or keep a broken upload, and an
    update there deletes the old asset first)."""
    if item.object_type is not ObjectType.RELEASE_ASSET or obj is None:
        return None
    size, limit = int(obj.payload.get("size") or 0), ex.ctx.settings.max_asset_bytes
    if size <= limit:
        return None
    return ItemError(
        AssetTooLarge.code,
        f"{item.object_key} has {size} bytes, more than REPOSYNC_MAX_ASSET_BYTES ({limit})",
    )


def _created_with_parent(target: Provider, object_type: ObjectType) -> bool:
    """Whether the target creates objects of this type together with their parent."""
    return isinstance(target, NestedCreator) and any(
        object_type in target.nested_types(parent) for parent in ObjectType
    )


def applier_for(object_type: ObjectType) -> Applier:
    """A fresh applier for one batch (appliers keep per-batch state)."""
    if object_type is ObjectType.GIT_REF:
        return GitRefApplier()
    if object_type is ObjectType.WIKI_REF:
        return GitRefApplier(WIKI_REPOSITORY)
    if object_type is ObjectType.DEFAULT_BRANCH:
        return DefaultBranchApplier()
    return ObjectApplier()
