"""Stages ``inventory_source`` and ``inventory_target``: index snapshots into the database.

The snapshot is index data only (identities, revisions, hashes), streamed in chunks so
memory stays bounded, and written idempotently: a re-executed stage replaces its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from sqlalchemy import delete

from reposync.lifecycle import AuditMode, Stage
from reposync.models import InventoryEntry
from reposync.models.db import executemany, fetch
from reposync.providers.base import (
    DefaultBranchWriter,
    EmptyChecker,
    GitRemoteSource,
    InventoryListing,
    ObjectWriter,
    Provider,
    WikiRemoteSource,
)
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.objects.link_states import has_links, load_links
from reposync.sync.canonical import DigestBuilder, IndexEntry
from reposync.sync.planner import PlanMode, split_checkpoint
from reposync.sync.report import PlanningCounters
from reposync.sync.vocabulary import ObjectType

#: Every object type this version syncs.
SYNCED_TYPES: tuple[ObjectType, ...] = tuple(ObjectType)

CHUNK = 5000


def held_types(target: Provider) -> frozenset[ObjectType]:
    """The object types ``target`` can hold, by the capabilities it declares: Git refs
    need ``GitRemoteSource``, wiki refs ``WikiRemoteSource``, the default branch
    ``DefaultBranchWriter``, every other type ``ObjectWriter`` (a plain Git remote holds
    refs only). The source's objects of the other types are never planned: ``held``
    counts them in the Run's ``unsupported``, by type, so none is dropped unsaid."""
    held = set(SYNCED_TYPES)
    needs = {
        ObjectType.GIT_REF: GitRemoteSource,
        ObjectType.WIKI_REF: WikiRemoteSource,
        ObjectType.DEFAULT_BRANCH: DefaultBranchWriter,
    }
    for object_type in SYNCED_TYPES:
        if not isinstance(target, needs.get(object_type, ObjectWriter)):
            held.discard(object_type)
    return frozenset(held)


def held(listing: InventoryListing, types: frozenset[ObjectType], *, count: bool = True) -> None:
    """Keep only ``types`` in ``listing``'s entries; with ``count``, each left-out object
    is counted in ``listing.unsupported`` under its type's name (``issue``), beside the
    ref namespaces (``refs/notes``), as the entries stream past."""
    if types.issuperset(SYNCED_TYPES):
        return
    entries = listing.entries

    def kept() -> Iterator[IndexEntry]:
        for entry in entries:
            if entry.object_type in types:
                yield entry
            elif count:
                key = entry.object_type.value
                listing.unsupported[key] = listing.unsupported.get(key, 0) + 1

    listing.entries = kept()


def inventory_source(ex: StageExecution) -> Stage:
    """Index the source. For a checkpoint only what may need work is kept: the entries
    whose links do not vouch for them and the links whose source object is gone."""
    if ex.cancel_requested():
        return ex.advance_now(Stage.FINALIZING, "cancel requested")
    listing = ex.source().inventory_index(SYNCED_TYPES)
    held(listing, held_types(ex.target()))
    checkpoint = ex.run.audit_mode == AuditMode.CHECKPOINT.value and has_links(ex)
    if not checkpoint:
        counts, digest = store_snapshot(ex, "source", listing.entries)
        return ex.advance_now(
            Stage.INVENTORY_TARGET,
            f"{sum(counts.values())} source objects indexed",
            source_digest=digest,
            unsupported=dict(listing.unsupported),
            rejected=_rejected(listing),
            planning_counters={"scanned": counts},
        )
    whole = DigestBuilder()
    split = split_checkpoint(_digested(listing.entries, whole), load_links(ex))
    store_snapshot(ex, "source", split.changed)
    store_snapshot(ex, "gone", (_gone_entry(key) for key in split.gone))
    counters = PlanningCounters(scanned=split.scanned, checkpoint_skipped=split.checkpoint_skipped)
    return ex.advance_now(
        Stage.INVENTORY_TARGET,
        f"{whole.count} source objects indexed, {len(split.changed)} changed, "
        f"{len(split.gone)} gone",
        source_digest=whole.hexdigest(),
        unsupported=dict(listing.unsupported),
        rejected=_rejected(listing),
        planning_counters=counters.to_dict(),
        plan_mode=PlanMode.CHECKPOINT.value,
    )


def _rejected(listing: InventoryListing) -> dict[str, Any]:
    return {code: rejected.to_dict() for code, rejected in sorted(listing.rejected.items())}


def _digested(entries: Iterable[IndexEntry], digest: DigestBuilder) -> Iterator[IndexEntry]:
    for entry in entries:
        digest.add(entry)
        yield entry


def _gone_entry(key: tuple[ObjectType, str]) -> IndexEntry:
    """A placeholder row naming a linked object the source no longer has."""
    return IndexEntry(key[0], key[1], "", None, "", "")


def inventory_target(ex: StageExecution) -> Stage:
    """Decide how to plan, reading the target only as much as that mode needs."""
    if ex.run.plan_mode == PlanMode.CHECKPOINT.value:  # decided with the source index
        return ex.advance_now(Stage.PLANNING, "plan mode checkpoint: the target is not read")
    values: dict[str, object] = {}
    if has_links(ex):
        mode = PlanMode.FULL_AUDIT
    else:
        target = ex.target()
        if isinstance(target, EmptyChecker) and target.is_empty():
            mode = PlanMode.EMPTY_TARGET
        else:
            mode = PlanMode.BASELINE
            listing = target.inventory_index(SYNCED_TYPES)
            held(listing, held_types(target), count=False)
            _, values["target_digest"] = store_snapshot(ex, "target", listing.entries)
    return ex.advance_now(Stage.PLANNING, f"plan mode {mode.value}", plan_mode=mode.value, **values)


_INSERT_ENTRY = (
    "INSERT INTO inventory_entries (run_id, side, object_type, identity, object_key, "
    "unique_key, revision, content_hash, size, order_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def store_snapshot(
    ex: StageExecution, side: str, entries: Iterable[IndexEntry]
) -> tuple[dict[str, int], str]:
    """Replace this Run's snapshot of one side; returns (count per type, digest)."""
    with ex.fenced() as session:
        session.execute(
            delete(InventoryEntry).where(
                InventoryEntry.run_id == ex.run_id, InventoryEntry.side == side
            )
        )
    digest = DigestBuilder()
    counts: dict[str, int] = {}
    iterator = iter(entries)
    while chunk := list(islice(iterator, CHUNK)):
        rows = []
        for entry in chunk:
            digest.add(entry)
            counts[entry.object_type.value] = counts.get(entry.object_type.value, 0) + 1
            rows.append(
                (
                    ex.run_id,
                    side,
                    entry.object_type.value,
                    entry.identity,
                    entry.object_key,
                    entry.unique_key,
                    entry.revision,
                    entry.content_hash,
                    entry.size,
                    entry.order_key,
                )
            )
        with ex.fenced() as session:
            executemany(session, _INSERT_ENTRY, rows)
    return counts, digest.hexdigest()


_SELECT_ENTRIES = (
    "SELECT object_type, identity, object_key, unique_key, revision, content_hash, size, "
    "order_key FROM inventory_entries WHERE run_id = ? AND side = ? "
    "ORDER BY object_type, identity"
)
_TYPES = {t.value: t for t in ObjectType}


def load_snapshot(ex: StageExecution, side: str) -> Iterator[IndexEntry]:
    """Stream a snapshot back in inventory order (straight from the driver, in chunks:
    a bootstrap reads every entry once, and per-row result processing showed)."""
    with ex.ctx.db.session() as session:
        for row in fetch(session, _SELECT_ENTRIES, (ex.run_id, side), chunk=CHUNK):
            yield IndexEntry(_TYPES[row[0]], *row[1:])


def drop_snapshots(ex: StageExecution) -> None:
    with ex.fenced() as session:
        session.execute(delete(InventoryEntry).where(InventoryEntry.run_id == ex.run_id))
