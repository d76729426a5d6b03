"""Physical batches: how planned items are cut into apply tasks.

A batch never mixes dependency phases, object types, actions or temporary key steps, and
respects both an item budget and a byte budget, so one task's work and memory stay bounded
whatever the repository's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from reposync.sync.canonical import REF_TYPES
from reposync.sync.planner import PlannedItem, Reason
from reposync.sync.vocabulary import Action, ObjectType

#: Actions that go through the applying stage; conflicts and reports settle at planning.
APPLIED_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.DELETE, Action.NOOP})

#: Bytes an item costs besides its payload (identities, intent, bookkeeping).
ITEM_OVERHEAD_BYTES = 256


@dataclass(frozen=True, slots=True)
class BatchLimits:
    max_items: int = 500
    max_bytes: int = 8 * 1024 * 1024
    #: Item limits that differ by object type (Git refs: one push moves thousands).
    per_type_items: Mapping[str, int] = field(default_factory=dict)

    def items_for(self, object_type: str) -> int:
        return self.per_type_items.get(object_type, self.max_items)


def assign_batches(
    items: Iterable[PlannedItem], limits: BatchLimits, first_batch: int = 1
) -> Iterator[tuple[PlannedItem, int | None]]:
    """Yield each item with its batch number (``None`` for items that are not applied).

    ``items`` must come sorted by ``PlannedItem.sort_key`` (renames then ordered by
    ``key_moves.order_key_moves``); batches are then numbered in
    dependency order, which is the order the applying stage runs them in.
    """
    batch_no = first_batch - 1
    group: tuple[int, str, str, bool] | None = None
    count = 0
    size = 0
    for item in items:
        if item.action not in APPLIED_ACTIONS:
            yield item, None
            continue
        # A temporary key step is read back before the renames that follow it.
        item_group = (
            int(item.phase),
            str(item.object_type),
            str(item.action),
            item.reason is Reason.TEMPORARY_KEY,
        )
        item_size = item.size + ITEM_OVERHEAD_BYTES
        if (
            item_group != group
            or count >= limits.items_for(str(item.object_type))
            or (count > 0 and size + item_size > limits.max_bytes)
        ):
            batch_no += 1
            group, count, size = item_group, 0, 0
        count += 1
        size += item_size
        yield item, batch_no


#: Types that share one number sequence on a forge (issues and pull requests).
NUMBERED = frozenset({ObjectType.ISSUE, ObjectType.PULL_REQUEST})


def numbers_in_order(items: Sequence[PlannedItem]) -> list[PlannedItem]:
    """``items`` (sorted by ``sort_key``) with each run of issue and pull request creates
    merged into one, in number order (``order_key``): for a target that must create
    them together (``Provider.interleaves_numbered_creates``). Batches still hold one
    type each (``assign_batches``), so the run becomes a batch per stretch of one type.
    """
    ordered: list[PlannedItem] = []
    run: list[PlannedItem] = []
    for item in items:
        if item.action is Action.CREATE and item.object_type in NUMBERED:
            run.append(item)
            continue
        ordered.extend(sorted(run, key=lambda i: (i.order_key, i.object_key)))
        run = []
        ordered.append(item)
    ordered.extend(sorted(run, key=lambda i: (i.order_key, i.object_key)))
    return ordered


def newest_tips_first(
    items: Sequence[PlannedItem], commit_times: Mapping[str, int]
) -> list[PlannedItem]:
    """``items`` (sorted by ``sort_key``) with each run of one phase, action and ref type
    reordered by the commit time of its new value, newest first (``reposync.git.history``
    says why: the first push then carries the history the later ones reuse). Refs whose
    time is unknown keep their order after the timed ones; every other item stays put.
    """
    ordered: list[PlannedItem] = []
    for (_, _, object_type), run in groupby(
        items, key=lambda i: (i.phase, i.action, i.object_type)
    ):
        group = list(run)
        if object_type in REF_TYPES:
            group.sort(key=lambda i: -commit_times.get(i.source_revision or "", -1))
        ordered.extend(group)
    return ordered
