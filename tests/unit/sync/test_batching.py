"""Physical batches: grouping by (phase, type, action), item and byte budgets, numbering."""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.sync.batching import (
    APPLIED_ACTIONS,
    ITEM_OVERHEAD_BYTES,
    BatchLimits,
    assign_batches,
    newest_tips_first,
    numbers_in_order,
)
from reposync.sync.planner import ACTION_ORDER, PlannedItem, Reason
from reposync.sync.vocabulary import Action, ObjectType, Phase


class StandIn(StrEnum):
    """A second object type: the vocabulary has only git_ref today."""

    LABEL = "label"


def item(
    key: str,
    action: Action = Action.CREATE,
    *,
    size: int = 0,
    phase: Phase = Phase.GIT,
    object_type: ObjectType | StandIn = ObjectType.GIT_REF,
) -> PlannedItem:
    return PlannedItem(
        phase=phase,
        object_type=object_type,  # type: ignore[arg-type]
        object_key=key,
        action=action,
        reason=Reason.NEW,
        source_identity=key,
        target_identity=key,
        source_revision=None,
        desired_hash=None,
        expected_target_hash=None,
        size=size,
    )


def numbers(items, limits=None, first_batch=1) -> list[int | None]:
    return [n for _, n in assign_batches(items, limits or BatchLimits(), first_batch)]


def test_default_limits_are_500_items_and_8_mib():
    """The default budget is DESIGN.md's: 500 items and 8 MiB per batch."""
    assert BatchLimits() == BatchLimits(max_items=500, max_bytes=8 * 1024 * 1024)


def test_applied_actions_are_the_writes_and_noop():
    """Create, update, delete and noop go through applying; conflict and report do not."""
    assert frozenset({Action.CREATE, Action.UPDATE, Action.DELETE, Action.NOOP}) == APPLIED_ACTIONS


def test_no_items_no_batches():
    """An empty plan yields nothing."""
    assert list(assign_batches([], BatchLimits())) == []


def test_items_are_yielded_once_in_input_order():
    """Every input item comes back exactly once, in the same order, paired with its batch."""
    items = [item("a"), item("b", Action.CONFLICT), item("c", Action.DELETE)]
    assert [i for i, _ in assign_batches(items, BatchLimits())] == items


def test_one_group_under_limits_is_one_batch_numbered_from_one():
    """Items of one (phase, type, action) group that fit the budget share batch 1."""
    assert numbers([item("a"), item("b"), item("c")]) == [1, 1, 1]


def test_first_batch_sets_the_first_number():
    """first_batch shifts the numbering (for plans appended after earlier batches)."""
    items = [item("a"), item("b", Action.DELETE), item("c", Action.UPDATE)]
    assert numbers(items, first_batch=7) == [7, 8, 9]


def test_batches_never_mix_actions():
    """A change of action starts a new batch."""
    items = [
        item("a"),
        item("b"),
        item("c", Action.DELETE),
        item("d", Action.NOOP),
        item("e", Action.UPDATE),
    ]
    assert numbers(items) == [1, 1, 2, 3, 4]


def test_batches_never_mix_phases():
    """A change of phase starts a new batch even with the same type and action."""
    items = [item("a"), item("b", phase=Phase.TAXONOMY), item("c", phase=Phase.TAXONOMY)]
    assert numbers(items) == [1, 2, 2]


def test_batches_never_mix_object_types():
    """A change of object type starts a new batch even in the same phase and action."""
    items = [item("a"), item("b", object_type=StandIn.LABEL), item("c", object_type=StandIn.LABEL)]
    assert numbers(items) == [1, 2, 2]


def test_a_group_seen_again_later_gets_a_new_batch():
    """Unsorted input: returning to an earlier group opens a new, higher-numbered batch."""
    items = [item("a"), item("b", Action.DELETE), item("c")]
    assert numbers(items) == [1, 2, 3]


def test_max_items_splits_a_group():
    """No batch holds more than max_items items."""
    items = [item(str(i)) for i in range(5)]
    assert numbers(items, BatchLimits(max_items=2)) == [1, 1, 2, 2, 3]


def test_max_items_of_one_gives_one_batch_per_item():
    """max_items=1 puts every applied item in its own batch."""
    assert numbers([item("a"), item("b"), item("c")], BatchLimits(max_items=1)) == [1, 2, 3]


def test_max_bytes_counts_payload_plus_overhead():
    """Each item costs its size plus ITEM_OVERHEAD_BYTES against max_bytes."""
    cost = 100 + ITEM_OVERHEAD_BYTES
    limits = BatchLimits(max_bytes=3 * cost)
    items = [item(str(i), size=100) for i in range(7)]
    assert numbers(items, limits) == [1, 1, 1, 2, 2, 2, 3]


def test_max_bytes_boundary_is_inclusive():
    """A batch may reach max_bytes exactly; one byte more starts the next batch."""
    cost = 100 + ITEM_OVERHEAD_BYTES
    assert numbers([item("a", size=100), item("b", size=100)], BatchLimits(max_bytes=2 * cost)) == [
        1,
        1,
    ]
    assert numbers(
        [item("a", size=100), item("b", size=100)], BatchLimits(max_bytes=2 * cost - 1)
    ) == [1, 2]


def test_oversized_item_gets_a_batch_of_its_own():
    """An item bigger than max_bytes is not dropped: it is alone in its batch."""
    items = [item("a", size=10), item("huge", size=10_000), item("b", size=10)]
    assert numbers(items, BatchLimits(max_bytes=1_000)) == [1, 2, 3]


def test_zero_sized_items_still_cost_overhead():
    """Deletes (size 0) still count ITEM_OVERHEAD_BYTES each against the byte budget."""
    items = [item(str(i), Action.DELETE) for i in range(4)]
    assert numbers(items, BatchLimits(max_bytes=2 * ITEM_OVERHEAD_BYTES)) == [1, 1, 2, 2]


def test_conflicts_and_reports_get_no_batch():
    """Conflict and report items are yielded with None and do not consume a number."""
    items = [
        item("x", Action.CONFLICT),
        item("a"),
        item("r", Action.REPORT),
        item("b", Action.UPDATE),
    ]
    assert numbers(items) == [None, 1, None, 2]


def test_noop_items_are_batched():
    """NOOP items go through applying (source re-read, link refresh), so they get a batch."""
    assert numbers([item("a", Action.NOOP)]) == [1]


def test_unapplied_item_between_two_of_one_group_keeps_them_together():
    """A conflict between two creates of one group neither splits nor joins their batch."""
    items = [item("a"), item("x", Action.CONFLICT), item("b")]
    assert numbers(items) == [1, None, 1]


def test_sorted_plan_numbers_batches_in_dependency_order():
    """Sorted items get batch numbers in phase, delete/update/create, then type order."""
    items = [
        item("t", Action.CREATE, phase=Phase.TAXONOMY, object_type=StandIn.LABEL),
        item("b", Action.UPDATE),
        item("a", Action.CREATE),
        item("c", Action.CONFLICT),
        item("d", Action.DELETE),
    ]
    items.sort(key=lambda i: i.sort_key)
    pairs = [(i.object_key, n) for i, n in assign_batches(items, BatchLimits())]
    assert pairs == [("d", 1), ("b", 2), ("a", 3), ("c", None), ("t", 4)]


_ACTIONS = st.sampled_from(list(Action))
_PHASES = st.sampled_from([Phase.GIT, Phase.TAXONOMY])
_TYPES = st.sampled_from([ObjectType.GIT_REF, StandIn.LABEL])
_ITEMS = st.lists(
    st.builds(
        lambda n, a, p, t, s: item(f"k{n}", a, phase=p, object_type=t, size=s),
        st.integers(0, 1000),
        _ACTIONS,
        _PHASES,
        _TYPES,
        st.integers(0, 3000),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(
    items=_ITEMS,
    max_items=st.integers(1, 8),
    max_bytes=st.integers(1, 6000),
    first_batch=st.integers(1, 5),
    presorted=st.booleans(),
)
def test_batching_invariants(items, max_items, max_bytes, first_batch, presorted):
    """Any plan: batches are pure groups within budgets, numbered contiguously in input order."""
    if presorted:
        items.sort(key=lambda i: i.sort_key)
    limits = BatchLimits(max_items=max_items, max_bytes=max_bytes)
    result = list(assign_batches(items, limits, first_batch))

    assert [i for i, _ in result] == items
    batches: dict[int, list[PlannedItem]] = {}
    previous = first_batch - 1
    for planned, batch_no in result:
        if planned.action not in APPLIED_ACTIONS:
            assert batch_no is None
            continue
        assert batch_no is not None
        assert batch_no in (previous, previous + 1)  # non-decreasing, no gaps
        previous = batch_no
        batches.setdefault(batch_no, []).append(planned)

    if batches:
        assert min(batches) == first_batch
    for members in batches.values():
        groups = {(int(m.phase), str(m.object_type), str(m.action)) for m in members}
        assert len(groups) == 1
        assert len(members) <= max_items
        total = sum(m.size + ITEM_OVERHEAD_BYTES for m in members)
        assert len(members) == 1 or total <= max_bytes

    if presorted:  # sorted input: each group's batches are consecutive and never revisited
        order = [
            (int(m.phase), ACTION_ORDER[m.action], str(m.object_type))
            for _, m in sorted((n, ms[0]) for n, ms in batches.items())
        ]
        assert order == sorted(order)


def test_per_type_item_limits_override_the_default():
    """Git refs may travel in bigger batches than API objects (one push, many refs)."""
    items = [item(f"r{n}", Action.CREATE) for n in range(7)]
    limits = BatchLimits(max_items=2, per_type_items={ObjectType.GIT_REF.value: 5})
    numbers = [n for _, n in assign_batches(items, limits)]
    assert numbers == [1, 1, 1, 1, 1, 2, 2]


# -- newest tips first ---------------------------------------------------------------------


def with_revision(key: str, revision: str | None, **kwargs: object) -> PlannedItem:
    return replace(item(key, **kwargs), source_revision=revision)  # type: ignore[arg-type]


def test_ref_creates_go_newest_tip_first():
    """Within one run of ref creates, the tips committed last come first; refs without a
    known time keep their order after them."""
    items = [
        with_revision("a", "old"),
        with_revision("b", "unknown-1"),
        with_revision("c", "new"),
        with_revision("d", "mid"),
        with_revision("e", "unknown-2"),
    ]
    times = {"old": 1, "mid": 2, "new": 3}

    ordered = newest_tips_first(items, times)

    assert [i.object_key for i in ordered] == ["c", "d", "a", "b", "e"]


def test_newest_first_never_crosses_an_action_or_moves_other_types():
    """Deletes stay before creates, a run of another type keeps its own order, and every
    item comes back once."""
    items = [
        with_revision("gone", None, action=Action.DELETE),
        with_revision("a", "old"),
        with_revision("b", "new"),
        with_revision("x", "new", object_type=StandIn.LABEL),
        with_revision("y", "old", object_type=StandIn.LABEL),
        with_revision("w1", "old", object_type=ObjectType.WIKI_REF),
        with_revision("w2", "new", object_type=ObjectType.WIKI_REF),
    ]
    times = {"old": 1, "new": 2}

    ordered = newest_tips_first(items, times)

    assert [i.object_key for i in ordered] == ["gone", "b", "a", "x", "y", "w2", "w1"]


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=30))
def test_newest_first_is_a_permutation_that_sorts_each_ref_run(stamps):
    """Whatever the times: the same items, each ref run in non-increasing time."""
    items = [with_revision(f"r{n}", f"c{stamp}") for n, stamp in enumerate(stamps)]
    times = {f"c{stamp}": stamp for stamp in stamps}

    ordered = newest_tips_first(items, times)

    assert sorted(i.object_key for i in ordered) == sorted(i.object_key for i in items)
    got = [times[i.source_revision or ""] for i in ordered]
    assert got == sorted(got, reverse=True)


def _numbered(object_type: ObjectType, number: int, action: Action = Action.CREATE) -> PlannedItem:
    return replace(
        item(f"#{number}", action, phase=Phase.PRIMARY, object_type=object_type),
        order_key=f"{number:012d}",
    )


def test_issue_and_pull_request_creates_interleave_by_number_and_nothing_else_moves():
    """For a target that must create them together, issue and pull request creates run in
    number order; their updates, other types and phases keep their places, and batches
    still hold one type each (a stretch of one type is one batch)."""
    issues = [_numbered(ObjectType.ISSUE, n) for n in (1, 3, 4, 7)]
    pulls = [_numbered(ObjectType.PULL_REQUEST, n) for n in (2, 5, 6)]
    update = _numbered(ObjectType.ISSUE, 9, Action.UPDATE)
    release = replace(item("v1", phase=Phase.PRIMARY), object_type=ObjectType.RELEASE)
    label = item("bug", phase=Phase.TAXONOMY, object_type=StandIn.LABEL)
    items = sorted([label, update, *issues, *pulls, release], key=lambda i: i.sort_key)

    ordered = numbers_in_order(items)

    assert sorted(ordered, key=id) == sorted(items, key=id)
    assert [i.object_key for i in ordered] == [
        "bug",
        "#9",
        "#1",
        "#2",
        "#3",
        "#4",
        "#5",
        "#6",
        "#7",
        "v1",
    ]
    batches = [
        (str(i.object_type), batch)
        for i, batch in assign_batches(ordered, BatchLimits())
        if i.object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST)
        and i.action is Action.CREATE
    ]
    runs = [t for n, (t, b) in enumerate(batches) if n == 0 or b != batches[n - 1][1]]
    assert runs == ["issue", "pull_request", "issue", "pull_request", "issue"]
