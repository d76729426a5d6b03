"""Revision cursors of branch watches: where a branch stands, moved only forward.

A forge reports each movement of a branch as ``before -> after`` (the push's
compare-and-swap) with the time it happened there. Webhook deliveries arrive late, twice
or out of order, so a cursor takes a movement only when it is newer than the one it
shows:

* a movement that occurred **after** the cursor's ``moved_at`` moves it;
* one that occurred **before** it changes nothing (a late or replayed delivery);
* ``before == after`` is no movement at all;
* at **equal** times (forge clocks count seconds; a burst of pushes shares one) the
  time cannot order the movements, so their chain does: the cursor remembers the
  movements it saw at that instant (``tied``) and follows, from the movement it shows,
  each one whose ``before`` is its ``after``. A same-instant movement that continues
  nothing is remembered, so that one delivered later can link it in, but moves nothing.
  A chain of distinct revisions therefore ends at its last movement whatever the
  delivery order; a same-instant cycle (``A -> B``, ``B -> A``) or fork cannot be
  ordered by anything the deliveries carry, and the cursor stays where following the
  chain from its current movement leads.

Pure: datetimes and strings in, a new cursor out; the service stores it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

#: Same-instant movements remembered per cursor: far more than pushes one second holds.
MAX_TIED = 32


@dataclass(frozen=True, slots=True)
class Move:
    """One observed movement of a branch (Git's all-zero id: the branch did not exist)."""

    before: str
    after: str
    occurred_at: datetime


@dataclass(frozen=True, slots=True)
class Cursor:
    """A branch's last movement as far as we know: ``before -> after`` at ``moved_at``.

    The empty cursor (all ``None``) has seen nothing yet: any movement moves it.
    """

    before: str | None = None
    after: str | None = None
    moved_at: datetime | None = None
    #: The movements seen at ``moved_at``, in the order they arrived (``(before, after)``).
    tied: tuple[tuple[str, str], ...] = ()

    @property
    def empty(self) -> bool:
        return self.moved_at is None

    def shows(self, before: str, after: str) -> bool:
        return (self.before, self.after) == (before, after)


def advance(cursor: Cursor, move: Move) -> Cursor:
    """The cursor once ``move`` has been observed (``cursor`` itself when it stays).

    The result never shows an older movement than ``cursor``: ``moved_at`` never
    decreases, and at equal times it only follows the chain forward.
    """
    if move.before == move.after:
        return cursor
    pair = (move.before, move.after)
    if cursor.moved_at is None or move.occurred_at > cursor.moved_at:
        return Cursor(move.before, move.after, move.occurred_at, (pair,))
    if move.occurred_at < cursor.moved_at or pair in cursor.tied:
        return cursor
    tied = (*cursor.tied, pair)[-MAX_TIED:]
    before, after = _follow(cursor.before or "", cursor.after or "", tied)
    return replace(cursor, before=before, after=after, tied=tied)


def _follow(before: str, after: str, tied: tuple[tuple[str, str], ...]) -> tuple[str, str]:
    """From ``before -> after``, each same-instant movement that continues it, in turn.

    The first continuation seen wins a fork; a movement is taken at most once, so a
    cycle ends instead of looping.
    """
    taken = {(before, after)}
    while True:
        step = next((m for m in tied if m[0] == after and m not in taken), None)
        if step is None:
            return before, after
        taken.add(step)
        before, after = step


def moved(old: Cursor, new: Cursor) -> bool:
    """Whether ``new`` shows another movement than ``old`` (what ``branch.moved`` reports)."""
    return (old.before, old.after, old.moved_at) != (new.before, new.after, new.moved_at)
