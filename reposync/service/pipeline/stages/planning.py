"""Stage ``planning``: run the pure planner and persist its items durably.

Items are written in short fenced transactions; the plan counts only once the
completion marker (``Run.plan_complete``) is committed, so a Run reclaimed halfway
through planning throws the partial rows away and plans again, never executing half a
plan.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import islice
from typing import Any

from sqlalchemy import delete

from reposync.git.transport import ref_updates_limit
from reposync.lifecycle import Stage
from reposync.models import RunItem, utcnow
from reposync.models.db import driver_datetime, executemany
from reposync.providers.base import AncestryChecker, read_index
from reposync.providers.registry import provider_class
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.inventory import load_snapshot
from reposync.service.pipeline.stages.objects.link_states import load_links
from reposync.service.pipeline.stages.objects.mapping import (
    expected_target_hash,
    number_map,
    target_type,
)
from reposync.service.pipeline.stages.push_order import history_ordered
from reposync.sync.batching import BatchLimits, assign_batches, numbers_in_order
from reposync.sync.canonical import REF_TYPES, IndexEntry
from reposync.sync.key_moves import order_key_moves
from reposync.sync.objects import misplaced
from reposync.sync.planner import (
    Candidate,
    Observation,
    PlanMode,
    PlannedItem,
    Reason,
    decide,
    relocation,
    select_candidates,
    target_only,
)
from reposync.sync.report import CONFLICT_CODE, PlanningCounters
from reposync.sync.vocabulary import Action, ItemState, ObjectType, RefConflictPolicy

CHUNK = 5000
READ_CHUNK = 500


def plan(ex: StageExecution) -> Stage:
    if ex.run.plan_complete:  # a re-delivered step after the marker: nothing to redo
        return _next_stage(ex)
    with ex.fenced() as session:
        session.execute(delete(RunItem).where(RunItem.run_id == ex.run_id))

    assert ex.run.plan_mode is not None, "inventory chose the plan mode"
    mode = PlanMode(ex.run.plan_mode)
    if mode is PlanMode.CHECKPOINT:
        # The inventory kept only what may need work: its entries and the gone links.
        changed = list(load_snapshot(ex, "source"))
        gone = [(e.object_type, e.identity) for e in load_snapshot(ex, "gone")]
        links = load_links(ex, [*((e.object_type, e.identity) for e in changed), *gone])
        candidates = select_candidates(mode, changed, links)
        counters = PlanningCounters.from_dict(ex.run.planning_counters)
    else:
        links = {} if mode is PlanMode.EMPTY_TARGET else load_links(ex)
        candidates = select_candidates(mode, load_snapshot(ex, "source"), links)
        counters = PlanningCounters(
            scanned=candidates.scanned, checkpoint_skipped=candidates.checkpoint_skipped
        )

    items, counters.unchanged = planned_items(
        ex, mode, candidates.candidates, lambda: load_snapshot(ex, "target")
    )

    settings = ex.ctx.settings
    # A batch of refs is one source read, one LFS scan and one read-back; the applier
    # pushes it in groups of at most what the target takes per push.
    refs_per_batch = refs_per_push = settings.git_batch_max_items
    target_class = provider_class(ex.spec("target").provider)
    forge_limit = ref_updates_limit(
        target_class.max_ref_updates_per_push, settings.git_max_ref_updates_per_push
    )
    if forge_limit is not None:
        refs_per_push = min(refs_per_push, forge_limit)
    items = history_ordered(ex, items, refs_per_push)
    if target_class.interleaves_numbered_creates:
        items = numbers_in_order(items)
    limits = BatchLimits(
        settings.batch_max_items,
        settings.batch_max_bytes,
        per_type_items={t.value: refs_per_batch for t in REF_TYPES},
    )
    written = _write_items(ex, assign_batches(items, limits))
    actions: dict[str, int] = defaultdict(int)
    for item in items:
        actions[item.action.value] += 1
    next_stage = _next_stage(ex)
    with ex.fenced() as session:
        ex.event(
            session, "plan_completed", f"{written} items planned ({mode.value})", **dict(actions)
        )
        return ex.advance(
            session,
            next_stage,
            f"{written} items",
            plan_complete=True,
            planning_counters=counters.to_dict(),
        )


def _next_stage(ex: StageExecution) -> Stage:
    return Stage.FINALIZING if ex.dry_run else Stage.APPLYING


def planned_items(
    ex: StageExecution,
    mode: PlanMode,
    candidates: Sequence[Candidate],
    target_snapshot: Callable[[], Iterable[IndexEntry]],
) -> tuple[list[PlannedItem], dict[str, int]]:
    """The items of ``candidates`` in execution order, and the candidates that need
    nothing (by type), with the target observed only as far as ``mode`` allows.

    ``target_snapshot`` gives the whole target index a baseline compares against: the
    stored snapshot for a Run, the provider's listing for a proposal (which stores
    nothing). Shared by both, so a proposal is the plan a Run would make.
    """
    policy = RefConflictPolicy(ex.binding.ref_conflict_policy)
    source = ex.source()
    oracle = source.is_ancestor if isinstance(source, AncestryChecker) else None
    items: list[PlannedItem] = []
    unchanged: dict[str, int] = defaultdict(int)
    for candidate, observed in _observe(ex, mode, candidates, target_snapshot):
        item = decide(candidate, observed, policy=policy, is_ancestor=oracle)
        if item is None:
            unchanged[candidate.object_type.value] += 1
        else:
            items.append(item)
            if item.reason is Reason.MISPLACED:
                items.append(relocation(candidate))
    items.sort(key=lambda item: item.sort_key)
    return list(order_key_moves(items)), dict(unchanged)


def _observe(
    ex: StageExecution,
    mode: PlanMode,
    candidates: Sequence[Candidate],
    target_snapshot: Callable[[], Iterable[IndexEntry]],
) -> Iterator[tuple[Candidate, Observation | None]]:
    """Pair each candidate with what the target holds, reading only what the mode allows."""
    if mode is PlanMode.EMPTY_TARGET:
        for candidate in candidates:
            yield candidate, None
        return
    if mode is PlanMode.BASELINE:
        by_key = {
            (entry.object_type, entry.unique_key or entry.identity): entry
            for entry in target_snapshot()
        }
        matched: set[tuple[ObjectType, str]] = set()
        for candidate in candidates:
            key = (candidate.object_type, candidate.target_identity or "")
            entry = by_key.get(key)
            if entry is not None:
                matched.add(key)
            yield candidate, Observation(entry)
        by_identity = {(e.object_type, e.identity): e for e in by_key.values()}
        for candidate in target_only(by_key.values(), matched):
            yield (
                candidate,
                Observation(by_identity[(candidate.object_type, candidate.target_identity or "")]),
            )
        return
    # Checkpoint and full audit: read the linked targets of the candidates, in batches.
    target = ex.target()
    numbers = number_map(ex)
    to_read: dict[ObjectType, list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        if candidate.needs_target_read:
            to_read[candidate.object_type].append(candidate)
        else:
            yield candidate, None
    for object_type, group in to_read.items():
        # Rewritten ``#N`` references are the only difference the service itself makes
        # (a provider's projection reads back as the object it projects).
        translate = bool(numbers)
        for chunk in _chunks(group, READ_CHUNK):
            found = read_index(
                target, target_type(object_type), [c.target_identity or "" for c in chunk]
            )
            sources = (
                ex.source().read_batch(object_type, [c.source.identity for c in chunk if c.source])
                if translate
                else {}
            )
            for candidate in chunk:
                entry = found.get(candidate.target_identity or "")
                source_key = candidate.source.unique_key if candidate.source else None
                if entry is not None and misplaced(source_key, entry.unique_key, numbers):
                    # Equal content under another issue is no equality.
                    yield candidate, Observation(entry, misplaced=True)
                    continue
                source_obj = sources.get(candidate.source.identity) if candidate.source else None
                # The target shows rewritten references: equal means equal to what we
                # would write, so say it in the source's hash.
                if (
                    entry is not None
                    and source_obj is not None
                    and candidate.source is not None
                    and expected_target_hash(source_obj, numbers) == entry.content_hash
                ):
                    entry = replace(entry, content_hash=candidate.source.content_hash)
                yield candidate, Observation(entry)


def _chunks(items: Sequence[Candidate], size: int) -> Iterator[Sequence[Candidate]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


_INSERT_ITEM = (
    "INSERT INTO run_items (run_id, phase, object_type, object_key, action, reason, state, "
    "batch_no, source_identity, target_identity, source_revision, desired_hash, "
    "expected_target_hash, intent, error_code, attempt_count, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)"
)


def _write_items(ex: StageExecution, numbered: Iterable[tuple[PlannedItem, int | None]]) -> int:
    """Plan rows in short fenced transactions, straight through the driver."""
    written = 0
    iterator = iter(numbered)
    while chunk := list(islice(iterator, CHUNK)):
        with ex.fenced() as session:
            now = driver_datetime(session, utcnow())
            executemany(
                session,
                _INSERT_ITEM,
                [_item_row(ex.run_id, item, batch_no, now) for item, batch_no in chunk],
            )
        written += len(chunk)
    return written


def _item_row(run_id: int, item: PlannedItem, batch_no: int | None, now: Any) -> tuple[Any, ...]:
    state, error_code = ItemState.PLANNED, None
    if item.action is Action.CONFLICT:
        state, error_code = ItemState.BLOCKED, CONFLICT_CODE
    elif item.action is Action.REPORT:
        state = ItemState.COMPLETED
    return (
        run_id,
        int(item.phase),
        item.object_type.value,
        item.object_key,
        item.action.value,
        item.reason.value,
        state.value,
        batch_no,
        item.source_identity,
        item.target_identity,
        item.source_revision,
        item.desired_hash,
        item.expected_target_hash,
        json.dumps(dict(item.intent), separators=(",", ":")),
        error_code,
        now,
    )
