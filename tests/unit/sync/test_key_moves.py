"""Renames that trade unique keys: ordered so no write collides, cycles step aside once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.sync.batching import BatchLimits, assign_batches
from reposync.sync.key_moves import (
    AFTER_TEMPORARY,
    TEMPORARY,
    TEMPORARY_SUFFIX,
    order_key_moves,
    temporary_payload,
)
from reposync.sync.planner import PlannedItem, Reason
from reposync.sync.vocabulary import Action, ObjectType


def rename(
    identity: str,
    held: str | None,
    wanted: str | None,
    *,
    object_type: ObjectType = ObjectType.LABEL,
    action: Action = Action.UPDATE,
) -> PlannedItem:
    return PlannedItem(
        phase=object_type.phase,
        object_type=object_type,
        object_key=f"{object_type} {wanted}",
        action=action,
        reason=Reason.CHANGED,
        source_identity=identity,
        target_identity=identity,
        source_revision="2",
        desired_hash="h",
        expected_target_hash="t",
        intent={"reason": "changed"},
        wanted_key=wanted,
        held_key=held,
    )


def replay(items: list[PlannedItem], holders: dict[str, str]) -> dict[str, str]:
    """Apply the renames in order on a forge that keeps keys unique: key -> identity.

    Raises AssertionError on the first write that would take a key someone holds.
    """
    keys = {identity: key for key, identity in holders.items()}
    for item in items:
        if item.action is not Action.UPDATE or item.wanted_key is None:
            continue
        identity = item.source_identity or ""
        new = item.wanted_key + (TEMPORARY_SUFFIX if item.intent.get(TEMPORARY) else "")
        taken_by = holders.get(new)
        assert taken_by in (None, identity), f"{item.object_key}: {new} is held by {taken_by}"
        del holders[keys[identity]]
        holders[new], keys[identity] = identity, new
    return holders


def test_a_chain_renames_the_last_link_first():
    """x -> y while y -> z: y moves first, x then takes the name y freed."""
    items = [rename("1", "x", "y"), rename("2", "y", "z")]
    ordered = list(order_key_moves(items))
    assert [i.source_identity for i in ordered] == ["2", "1"]
    assert all(not i.intent.get(TEMPORARY) for i in ordered)


def test_a_swap_steps_one_side_aside_first():
    """a <-> b: no order works; one moves to a temporary key in a step of its own."""
    items = [rename("1", "a", "b"), rename("2", "b", "a")]
    ordered = list(order_key_moves(items))
    assert [(i.source_identity, i.reason) for i in ordered] == [
        ("1", Reason.TEMPORARY_KEY),
        ("2", Reason.CHANGED),
        ("1", Reason.CHANGED),
    ]
    assert ordered[0].intent[TEMPORARY] is True
    assert ordered[2].intent[AFTER_TEMPORARY] is True
    assert replay(ordered, {"a": "1", "b": "2"}) == {"b": "1", "a": "2"}


def test_a_temporary_step_gets_a_batch_of_its_own():
    """Its read-back must see the temporary key before the renames that follow it."""
    items = list(order_key_moves([rename("1", "a", "b"), rename("2", "b", "a")]))
    batches = [n for _, n in assign_batches(items, BatchLimits())]
    assert batches == [1, 2, 2]


def test_other_actions_and_types_keep_their_place():
    """Creates, deletes and types without a renameable key pass through untouched."""
    items = [
        rename("d", "q", None, action=Action.DELETE),
        rename("1", "a", "b"),
        rename("2", "b", "a"),
        rename("c", None, "n", action=Action.CREATE),
    ]
    issues = [
        rename("3", "#1", "#2", object_type=ObjectType.ISSUE),
        rename("4", "#2", "#1", object_type=ObjectType.ISSUE),
    ]
    ordered = list(order_key_moves([*items, *issues]))
    assert ordered[0] == items[0]
    assert ordered[-3:] == [items[3], *issues]


def test_an_assets_key_is_read_under_the_tag_its_release_is_about_to_have():
    """The release v1 became v2 in the primary phase: its assets are v2:... by now, so
    a.bin -> b.bin and b.bin -> a.bin of that release is a swap, and a retag alone is
    no rename at all."""
    swap = [
        rename("1", "v1:a.bin", "v2:b.bin", object_type=ObjectType.RELEASE_ASSET),
        rename("2", "v1:b.bin", "v2:a.bin", object_type=ObjectType.RELEASE_ASSET),
        rename("3", "v1:c.bin", "v2:c.bin", object_type=ObjectType.RELEASE_ASSET),
    ]
    ordered = list(order_key_moves(swap))
    assert [(i.source_identity, i.reason) for i in ordered] == [
        ("1", Reason.TEMPORARY_KEY),
        ("2", Reason.CHANGED),
        ("1", Reason.CHANGED),
        ("3", Reason.CHANGED),
    ]


def test_the_temporary_payload_suffixes_the_key_field_only():
    payload = {"tag": "v1", "name": "first"}
    assert temporary_payload(ObjectType.RELEASE, payload) == {
        "tag": "v1" + TEMPORARY_SUFFIX,
        "name": "first",
    }
    assert payload == {"tag": "v1", "name": "first"}


@st.composite
def renamings(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str]]:
    """Objects holding distinct keys, and a new distinct key for each (any permutation
    of the old keys mixed with fresh ones): identity -> held, identity -> wanted."""
    count = draw(st.integers(1, 12))
    held = [f"k{n}" for n in range(count)]
    fresh = [f"n{n}" for n in range(count)]
    wanted = draw(st.permutations(held + fresh))[:count]
    identities = [str(n) for n in range(count)]
    return dict(zip(identities, held, strict=True)), dict(zip(identities, wanted, strict=True))


def cycles(held: dict[str, str], wanted: dict[str, str]) -> int:
    """Cycles of two or more renames (the permutation's non-trivial cycles)."""
    holder = {key: identity for identity, key in held.items()}
    seen: set[str] = set()
    found = 0
    for start in held:
        path: list[str] = []
        current: str | None = start
        while current is not None and current not in seen:
            seen.add(current)
            path.append(current)
            current = holder.get(wanted[current])
        if current is not None and current in path and len(path) - path.index(current) > 1:
            found += 1
    return found


@settings(max_examples=300, deadline=None)
@given(renamings(), st.randoms(use_true_random=False))
def test_any_set_of_renames_applies_without_a_collision(renames, rng):
    """Any permutation of keys among objects (chains, cycles, fresh names), in any input
    order: replayed on a forge that keeps keys unique, no write collides, every object
    ends with its wanted key, each rename is written once plus one temporary step per
    cycle, and nothing else is touched."""
    held, wanted = renames
    items = [rename(identity, held[identity], wanted[identity]) for identity in held]
    rng.shuffle(items)

    ordered = list(order_key_moves(items))

    final = replay(ordered, {key: identity for identity, key in held.items()})
    assert final == {key: identity for identity, key in wanted.items()}
    temporaries = [i for i in ordered if i.intent.get(TEMPORARY)]
    assert len(temporaries) == cycles(held, wanted)
    assert sorted(i.source_identity for i in ordered if not i.intent.get(TEMPORARY)) == sorted(held)
    assert ordered[: len(temporaries)] == temporaries
