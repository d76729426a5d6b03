"""Renames that trade unique keys within one Run: ordered so no write collides.

A forge keeps some keys unique (a label's name, a milestone's title, a release's tag, an
asset's name within its release). When the source renames ``a`` to ``b`` and ``b`` to
``c`` between two Runs, the target must rename ``b`` first; when it swaps ``a`` and ``b``
no order works and one of them moves to a temporary key first. Deletes already run
before updates (``ACTION_ORDER``), so a key a deleted object frees is free in time.

Pure: it sees planned items and the keys they want and hold, never a provider.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import groupby
from typing import Any

from reposync.sync.objects import KEY_SEPARATOR
from reposync.sync.planner import PlannedItem, Reason
from reposync.sync.vocabulary import Action, ObjectType

#: The payload field that carries each renameable type's unique key.
KEY_FIELDS: dict[ObjectType, str] = {
    ObjectType.LABEL: "name",
    ObjectType.MILESTONE: "title",
    ObjectType.RELEASE: "tag",
    ObjectType.RELEASE_ASSET: "name",
}

#: Types keyed ``parent:own``. The parent's part may change earlier in the same Run (a
#: release retagged in the primary phase renames its assets' keys with it) and an object
#: never changes parent, so the key an item holds is read under the parent key it wants.
PARENT_KEYED = frozenset({ObjectType.RELEASE_ASSET})

#: Appended to a key while its object steps aside. Valid in a Git ref name (a release's
#: tag), and unlikely to be anybody's real name.
TEMPORARY_SUFFIX = ".reposync-moving"

#: Intent flags: the first write of a swap, and the write that follows it.
TEMPORARY = "temporary_key"
AFTER_TEMPORARY = "after_temporary_key"


def temporary_payload(object_type: ObjectType, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload an object carries while it steps aside: its own key, suffixed.

    Derived from the key the object wants, which is unique on the source, so two objects
    stepping aside in one Run never collide with each other.
    """
    field = KEY_FIELDS[object_type]
    return {**payload, field: f"{payload[field]}{TEMPORARY_SUFFIX}"}


def order_key_moves(items: Iterable[PlannedItem]) -> Iterator[PlannedItem]:
    """The items in the same order, except that each run of renames is ordered so that
    every key is free when it is taken, with a temporary step where renames form a cycle.

    ``items`` come sorted by ``PlannedItem.sort_key``. Within a (phase, type) the
    updates are contiguous; only they are reordered. Temporary steps come first in their
    segment and are flagged so that batching gives them a batch of their own: their
    read-back must see the temporary key, not the final one.
    """
    for (_, object_type, action), group in groupby(
        items, key=lambda i: (i.phase, i.object_type, i.action)
    ):
        if action is Action.UPDATE and object_type in KEY_FIELDS:
            yield from _ordered_segment(list(group))
        else:
            yield from group


def _held(item: PlannedItem) -> str | None:
    """The key the item's target object holds when its segment runs."""
    if item.object_type in PARENT_KEYED and item.held_key and item.wanted_key:
        parent = item.wanted_key.partition(KEY_SEPARATOR)[0]
        own = item.held_key.partition(KEY_SEPARATOR)[2]
        return f"{parent}{KEY_SEPARATOR}{own}"
    return item.held_key


def _moves(item: PlannedItem) -> bool:
    held = _held(item)
    return item.wanted_key is not None and held is not None and item.wanted_key != held


def _ordered_segment(segment: Sequence[PlannedItem]) -> list[PlannedItem]:
    movers = [i for i in segment if _moves(i)]
    if len(movers) < 2:
        return list(segment)
    holder = {_held(i): i for i in movers}
    # ``blocker[x]`` holds the key x wants and must move first; keys are unique on both
    # sides, so each item blocks at most one other and the graph is paths and cycles.
    blocker: dict[int, PlannedItem] = {}
    waiting: dict[int, PlannedItem] = {}
    for item in movers:
        other = holder.get(item.wanted_key)
        if other is not None and other is not item:
            blocker[id(item)] = other
            waiting[id(other)] = item
    if not blocker:
        return list(segment)

    temporaries: list[PlannedItem] = []
    ordered: list[PlannedItem] = []
    done: set[int] = set()

    def chain_from(first: PlannedItem, stop: PlannedItem | None = None) -> None:
        current: PlannedItem | None = first
        while current is not None and current is not stop and id(current) not in done:
            done.add(id(current))
            ordered.append(current)
            current = waiting.get(id(current))

    for item in movers:  # paths: start where the wanted key is free
        if id(item) not in blocker:
            chain_from(item)
    for item in movers:  # what is left are cycles: one member steps aside first
        if id(item) in done:
            continue
        done.add(id(item))
        temporaries.append(
            replace(
                item,
                reason=Reason.TEMPORARY_KEY,
                intent={**item.intent, "reason": Reason.TEMPORARY_KEY.value, TEMPORARY: True},
            )
        )
        chain_from(waiting[id(item)], stop=item)
        ordered.append(replace(item, intent={**item.intent, AFTER_TEMPORARY: True}))
    rest = [i for i in segment if id(i) not in done]
    return [*temporaries, *ordered, *rest]
