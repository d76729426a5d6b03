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
  chain from its current movement leads;
* a newer movement that lands where the cursor already shows (``after`` equal) takes
  its time but is **no new movement**: the same arrival seen twice (by a Run, then by a
  delivery whose forge clock runs ahead) is announced once.

A Run sees no movement, only where the branch **is** when it reads the source: a
``Sighting`` (``sight``). It moves the cursor from what the cursor shows (or, for an
empty cursor, from the revision the Binding last synced) to what the Run read, at the
time the read had certainly ended (``until``), unless a movement reported at or after
the read began (``since``) already moved the cursor: that one may be newer than what
the Run read, so the cursor keeps it and the next Run looks again. A delivery older than
a Run's sighting is then late like any other.

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
        if not cursor.empty and move.after == cursor.after:  # the same arrival, later
            return Cursor(cursor.before, cursor.after, move.occurred_at, (pair,))
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


@dataclass(frozen=True, slots=True)
class Sighting:
    """Where a Run read a branch: ``revision`` (Git's all-zero id: it did not exist),
    read after ``since`` and before ``until``; ``synced`` is the revision the Binding
    last verified for it (None: never synced), the cursor's origin when it is empty."""

    revision: str
    since: datetime
    until: datetime
    synced: str | None = None


def sight(cursor: Cursor, sighting: Sighting) -> Cursor:
    """The cursor once a Run's ``sighting`` has been taken (``cursor`` itself when it stays).

    It moves only to a revision the cursor does not show, and only when no movement at
    or after ``since`` moved the cursor; an empty cursor moves only when the Run saw the
    branch move since the Binding last synced it (a watch learns of no movement older
    than what the Binding had seen).
    """
    revision = sighting.revision
    if cursor.after == revision:
        return cursor
    if cursor.moved_at is not None and cursor.moved_at >= sighting.since:
        return cursor
    before = cursor.after if not cursor.empty else sighting.synced
    if before is None or before == revision:
        return cursor
    return Cursor(before, revision, sighting.until, ((before, revision),))


def moved(old: Cursor, new: Cursor) -> bool:
    """Whether ``new`` shows another movement than ``old`` (what ``branch.moved``
    reports); a later time for the movement it shows is none."""
    return (old.before, old.after) != (new.before, new.after)
