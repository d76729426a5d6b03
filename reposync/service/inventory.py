"""Stages ``inventory_source`` and ``inventory_target``: index snapshots into the database.

The snapshot is index data only (identities, revisions, hashes), streamed in chunks so
memory stays bounded, and written idempotently: a re-executed stage replaces its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from sqlalchemy import delete, exists, select

from reposync.models import InventoryEntry, ObjectLink
from reposync.models.db import executemany
from reposync.providers.base import EmptyChecker
from reposync.service.execution import StageExecution
from reposync.sync.canonical import DigestBuilder, IndexEntry
from reposync.sync.planner import PlanMode
from reposync.sync.vocabulary import AuditMode, ObjectType, Stage

#: Every object type this version syncs.
SYNCED_TYPES: tuple[ObjectType, ...] = tuple(ObjectType)

CHUNK = 5000


def inventory_source(ex: StageExecution) -> Stage:
    if ex.cancel_requested():
        return ex.advance_now(Stage.FINALIZING, "cancel requested")
    listing = ex.source().inventory_index(SYNCED_TYPES)
    counts, digest = store_snapshot(ex, "source", listing.entries)
    return ex.advance_now(
        Stage.INVENTORY_TARGET,
        f"{sum(counts.values())} source objects indexed",
        source_digest=digest,
        unsupported=dict(listing.unsupported),
        planning_counters={"scanned": counts},
    )


def inventory_target(ex: StageExecution) -> Stage:
    """Decide how to plan, reading the target only as much as that mode needs."""
    with ex.ctx.db.session() as session:
        has_links = session.execute(
            select(exists().where(ObjectLink.binding_id == ex.binding.id))
        ).scalar_one()
    values: dict[str, object] = {}
    if has_links:
        full = ex.run.audit_mode == AuditMode.FULL.value
        mode = PlanMode.FULL_AUDIT if full else PlanMode.CHECKPOINT
    else:
        target = ex.target()
        if isinstance(target, EmptyChecker) and target.is_empty():
            mode = PlanMode.EMPTY_TARGET
        else:
            mode = PlanMode.BASELINE
            listing = target.inventory_index(SYNCED_TYPES)
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


def load_snapshot(ex: StageExecution, side: str) -> Iterator[IndexEntry]:
    """Stream a snapshot back in inventory order."""
    with ex.ctx.db.session() as session:
        rows = session.execute(
            select(
                InventoryEntry.object_type,
                InventoryEntry.identity,
                InventoryEntry.object_key,
                InventoryEntry.unique_key,
                InventoryEntry.revision,
                InventoryEntry.content_hash,
                InventoryEntry.size,
                InventoryEntry.order_key,
            )
            .where(InventoryEntry.run_id == ex.run_id, InventoryEntry.side == side)
            .order_by(InventoryEntry.object_type, InventoryEntry.identity)
            .execution_options(yield_per=CHUNK)
        )
        for row in rows:
            yield IndexEntry(ObjectType(row[0]), *row[1:])


def drop_snapshots(ex: StageExecution) -> None:
    with ex.fenced() as session:
        session.execute(delete(InventoryEntry).where(InventoryEntry.run_id == ex.run_id))
