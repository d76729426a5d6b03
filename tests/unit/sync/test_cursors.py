"""Revision cursors: a branch's cursor moves forward only, whatever the delivery order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.sync.cursors import MAX_TIED, Cursor, Move, Sighting, advance, moved, sight

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


# -- a Run's sightings -------------------------------------------------------------------


def seen(revision: str, since: int, until: int, synced: str | None = None) -> Sighting:
    return Sighting(revision, at(since), at(until), synced=synced)


def test_a_sighting_moves_the_cursor_from_what_it_shows_to_what_the_run_read():
    """The watch showed 1 -> 2; the Run read 4: 2 -> 4 at the end of its read."""
    cursor = deliver([Move(rev(1), rev(2), at(0))])

    after = sight(cursor, seen(rev(4), 5, 9))

    assert (after.before, after.after, after.moved_at) == (rev(2), rev(4), at(9))
    assert moved(cursor, after)


def test_a_sighting_of_what_the_cursor_shows_changes_nothing():
    """A delivery came first: the Run reading the same revision is no second movement."""
    cursor = deliver([Move(rev(1), rev(2), at(0))])
    assert sight(cursor, seen(rev(2), 5, 9)) is cursor


def test_a_movement_reported_during_the_read_wins_over_the_sighting():
    """A delivery at or after the read began may be newer than what the Run read: the
    cursor keeps it (the next Run looks again), even when the Run read something else."""
    cursor = deliver([Move(rev(2), rev(3), at(5))])

    assert sight(cursor, seen(rev(2), 5, 9)) is cursor
    assert sight(cursor, seen(rev(2), 4, 9)) is cursor


def test_an_empty_cursor_moves_from_what_the_binding_had_synced():
    """No delivery ever arrived: the Run's movement starts where the Binding last synced;
    without one (its first Run) or with no change, nothing is known to have moved."""
    assert sight(Cursor(), seen(rev(4), 5, 9, synced=rev(3))).shows(rev(3), rev(4))
    assert sight(Cursor(), seen(rev(4), 5, 9, synced=ZERO)).shows(ZERO, rev(4))  # created
    assert sight(Cursor(), seen(ZERO, 5, 9, synced=rev(4))).shows(rev(4), ZERO)  # deleted
    assert sight(Cursor(), seen(rev(4), 5, 9)).empty
    assert sight(Cursor(), seen(rev(4), 5, 9, synced=rev(4))).empty


def test_a_delivery_of_the_run_seen_movement_is_announced_once_in_either_order():
    """Run first then its delivery (older: late; newer, a forge clock ahead: the same
    arrival), or delivery first then the Run: one movement either way."""
    start = deliver([Move(rev(0), rev(1), at(0))])
    push = Move(rev(1), rev(2), at(6))

    run_first = sight(start, seen(rev(2), 5, 9))
    assert moved(start, run_first)
    for delivery in (push, Move(rev(1), rev(2), at(12))):
        late = advance(run_first, delivery)
        assert not moved(run_first, late)
        assert late.moved_at >= run_first.moved_at

    delivery_first = advance(start, push)
    assert moved(start, delivery_first)
    assert sight(delivery_first, seen(rev(2), 5, 9)) is delivery_first


def test_a_newer_movement_to_the_same_revision_takes_its_time_and_is_no_movement():
    """1 -> 2 then (its forge clock later) 5 -> 2: the branch is where the cursor showed;
    an older delivery after it is late by the newer time."""
    cursor = deliver([Move(rev(1), rev(2), at(0))])

    again = advance(cursor, Move(rev(5), rev(2), at(4)))

    assert again.shows(rev(1), rev(2))
    assert again.moved_at == at(4)
    assert not moved(cursor, again)
    assert advance(again, Move(rev(2), rev(3), at(3))) is again


@st.composite
def interleavings(draw) -> tuple[list[int], list[tuple[float, str, object]]]:
    """A branch's pushes 0 -> 1 -> ... -> n (times rising or equal, whole seconds), each
    delivered after it happened or lost, and Runs (of one or more Bindings of the
    repository) reading it at half seconds; everything in the order it is processed."""
    count = draw(st.integers(1, 8))
    gaps = draw(st.lists(st.integers(0, 2), min_size=count, max_size=count))
    times = [sum(gaps[: i + 1]) for i in range(count)]
    steps: list[tuple[float, str, object]] = []
    for i, pushed in enumerate(times):
        if draw(st.booleans()) or draw(st.booleans()):  # three in four arrive
            lag = draw(st.integers(0, 6))
            steps.append((pushed + lag, "delivery", Move(rev(i), rev(i + 1), at(pushed))))
    for _ in range(draw(st.integers(0, 4))):
        read = draw(st.integers(-1, times[-1] + 2)) + 0.5
        since = read - draw(st.sampled_from([0.25, 1.25, 3.25]))
        until = read + draw(st.sampled_from([0.25, 1.25, 3.25]))
        done = until + draw(st.integers(0, 6))
        steps.append((done, "run", (read, since, until)))
    steps.sort(key=lambda step: step[0])
    return times, steps


def _read(times: list[int], moment: float) -> int:
    """The revision a read at ``moment`` sees: the last push made by then."""
    return sum(1 for pushed in times if pushed <= moment)


def _seconds(value: float) -> datetime:
    return T0 + timedelta(seconds=value)


@settings(max_examples=600, deadline=None)
@given(interleavings())
def test_deliveries_and_runs_in_any_order_never_go_back_and_announce_each_revision_once(case):
    """Whatever is lost, late or seen by which Run in which order: the cursor never shows
    an older revision than before, each revision is announced at most once and only as a
    forward movement, and a last Run after everything brings it to the branch's tip."""
    times, steps = case
    final = times[-1] + 10.5
    steps = [
        (-1.0, "run", (-0.5, -0.75, -0.25)),  # the Binding's first Run: before any push
        *steps,
        (final + 1, "run", (final, final - 0.25, final + 0.25)),
    ]
    cursor, synced = Cursor(), None
    announced: list[int] = []
    shown = -1
    for _, kind, what in steps:
        old = cursor
        if kind == "delivery":
            assert isinstance(what, Move)
            cursor = advance(cursor, what)
        else:
            read, since, until = what  # type: ignore[misc]
            revision = rev(_read(times, read))
            cursor = sight(cursor, Sighting(revision, _seconds(since), _seconds(until), synced))
            synced = revision
        if moved(old, cursor):
            before, after = int(cursor.before or "0", 16), int(cursor.after or "0", 16)
            assert after > before
            announced.append(after)
        if cursor.after is not None:
            assert int(cursor.after, 16) >= shown
            shown = int(cursor.after, 16)
    assert len(announced) == len(set(announced))
    assert cursor.after == rev(len(times))
