"""Revision cursors: a branch's cursor moves forward only, whatever the delivery order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.sync.cursors import MAX_TIED, Cursor, Move, advance, moved

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
ZERO = "0" * 40


def rev(n: int) -> str:
    return f"{n:040x}"


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def deliver(moves: list[Move], cursor: Cursor | None = None) -> Cursor:
    cursor = cursor or Cursor()
    for move in moves:
        cursor = advance(cursor, move)
    return cursor


def test_the_first_movement_sets_an_empty_cursor():
    cursor = advance(Cursor(), Move(rev(1), rev(2), at(0)))
    assert (cursor.before, cursor.after, cursor.moved_at) == (rev(1), rev(2), at(0))
    assert moved(Cursor(), cursor)


def test_a_newer_movement_moves_and_an_older_one_changes_nothing():
    newer = Move(rev(2), rev(3), at(10))
    older = Move(rev(1), rev(2), at(5))
    cursor = deliver([newer])
    assert advance(cursor, older) is cursor  # the late delivery is dropped whole
    assert deliver([older, newer]).shows(rev(2), rev(3))


def test_no_movement_and_a_replay_change_nothing():
    cursor = deliver([Move(rev(1), rev(2), at(0))])
    assert advance(cursor, Move(rev(2), rev(2), at(9))) is cursor
    assert advance(cursor, Move(rev(1), rev(2), at(0))) is cursor


def test_creation_and_deletion_are_movements_from_and_to_the_zero_id():
    cursor = deliver([Move(ZERO, rev(1), at(0)), Move(rev(1), ZERO, at(1))])
    assert cursor.shows(rev(1), ZERO)
    assert deliver([Move(ZERO, rev(7), at(2))], cursor).shows(ZERO, rev(7))


def test_equal_times_follow_the_chain_in_any_order():
    """Three pushes in one second, delivered last, first, middle: the cursor ends at the last."""
    a, b, c = (Move(rev(i), rev(i + 1), at(0)) for i in range(3))
    steps = []
    cursor = Cursor()
    for move in (c, a, b):
        cursor = advance(cursor, move)
        steps.append((cursor.before, cursor.after))
    assert steps == [(rev(2), rev(3))] * 3
    assert deliver([a, c, b]).shows(rev(2), rev(3))  # c waits for b to link it in


def test_equal_times_never_step_back_to_a_predecessor():
    cursor = deliver([Move(rev(1), rev(2), at(0))])
    assert advance(cursor, Move(rev(0), rev(1), at(0))).shows(rev(1), rev(2))


def test_a_same_instant_cycle_stays_where_following_leads():
    """A -> B and B -> A in one second cannot be ordered: the later delivery continues
    the cursor, so it ends at the one delivered last (documented, not hidden)."""
    there, back = Move(rev(1), rev(2), at(0)), Move(rev(2), rev(1), at(0))
    assert deliver([there, back]).shows(rev(2), rev(1))
    assert deliver([back, there]).shows(rev(1), rev(2))


def test_the_tie_memory_is_bounded():
    cursor = deliver([Move(rev(1000 + i), rev(2000 + i), at(0)) for i in range(MAX_TIED * 3)])
    assert len(cursor.tied) == MAX_TIED
    assert cursor.shows(rev(1000), rev(2000))  # unrelated same-instant moves move nothing


@st.composite
def histories(draw) -> tuple[list[Move], list[Move]]:
    """A branch's movements (distinct revisions, times rising or equal) and a delivery
    of them: any order, with redeliveries."""
    count = draw(st.integers(1, 12))
    gaps = draw(st.lists(st.integers(0, 2), min_size=count, max_size=count))
    times = [sum(gaps[: i + 1]) for i in range(count)]
    moves = [Move(rev(i), rev(i + 1), at(times[i])) for i in range(count)]
    order = draw(st.permutations(moves))
    extra = draw(st.lists(st.sampled_from(moves), max_size=count))
    mixed = list(order)
    for move in extra:
        mixed.insert(draw(st.integers(0, len(mixed))), move)
    return moves, mixed


@settings(max_examples=400, deadline=None)
@given(histories())
def test_any_delivery_order_ends_at_the_newest_and_never_goes_back(history):
    """For every delivery order (with duplicates), the cursor ends at the newest movement,
    and at no step shows an older movement or an earlier time than the step before."""
    moves, delivered = history
    position = {(m.before, m.after): i for i, m in enumerate(moves)}
    cursor = Cursor()
    last_index, last_time = -1, None
    for move in delivered:
        old = cursor
        cursor = advance(cursor, move)
        index = position[(cursor.before, cursor.after)]
        assert index >= last_index
        assert last_time is None or cursor.moved_at >= last_time
        if old.moved_at is not None and move.occurred_at < old.moved_at:
            assert cursor is old  # an older delivery changes nothing at all
        last_index, last_time = index, cursor.moved_at
    assert cursor.shows(moves[-1].before, moves[-1].after)
    assert cursor.moved_at == moves[-1].occurred_at
