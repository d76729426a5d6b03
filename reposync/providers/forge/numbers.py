"""Issue and pull request numbers on a hosted forge, kept equal to the source's.

GitHub and Forgejo alike give every new issue or pull request the next free number of
the one index they share. On an empty standby reposync creates in number order and
fills gaps with closed **placeholder** issues, which a later create of that number
takes over (an issue by editing the placeholder; a pull request as the forge can:
GitHub converts the placeholder, a forge that cannot carries the pull request in it).

The next free number is counted once per batch and then kept up to date. Anything that
may have taken a number unseen (a lost response, a create refused midway) makes the
writer ``forget`` the count, so it is read again before the next allocation: a stale
count shifts every later number.

``NumberAllocator`` holds these rules; ``NumberSpace`` is the little it needs of a
forge's API (each provider implements it with its own requests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from reposync.errors import ObjectNotFound, ProviderUnavailable, ResultUnknown
from reposync.providers.forge.bodies import compose, marker_of

PLACEHOLDER_TITLE = "reposync placeholder"
#: A placeholder's marker: this prefix and the number it keeps (no source object has it).
PLACEHOLDER_MARKER = "placeholder:"
PLACEHOLDER_TEXT = "Kept free for a number of the source repository."


def placeholder_body(number: int) -> str:
    """The body of the placeholder that keeps ``number`` free."""
    return compose(PLACEHOLDER_TEXT, marker=f"{PLACEHOLDER_MARKER}{number}")


def is_placeholder(body: str | None) -> bool:
    """Whether a body is a placeholder's: reposync's own, never listed as an object."""
    return (marker_of(body) or "").startswith(PLACEHOLDER_MARKER)


class NumberSpace(Protocol):
    """One repository's shared index of issues and pull requests, through a forge's API.

    ``fields`` are the forge's own issue request body (title, body, labels, milestone as
    its endpoints take them): the allocator passes them through untouched.
    """

    def highest(self) -> int:
        """The highest number in use (0 when none is), read afresh from the forge."""
        ...

    def body_at(self, number: int) -> str | None:
        """The body of the issue or pull request under ``number``; ``ObjectNotFound``
        when there is none (any other failure propagates)."""
        ...

    def create_placeholder(self, title: str, body: str) -> int:
        """A new issue with ``title`` and ``body``; its number (``ResultUnknown`` when
        the answer was lost)."""
        ...

    def close_placeholder(self, number: int) -> None:
        """Close the placeholder under ``number`` (as not planned, where the forge
        keeps a reason)."""
        ...

    def reopen_as(self, number: int, fields: Mapping[str, Any]) -> None:
        """Take the placeholder under ``number`` over: write ``fields`` and reopen it."""
        ...

    def create_issue(self, fields: Mapping[str, Any]) -> int:
        """A new issue with ``fields`` under the next free number; that number."""
        ...


class NumberAllocator:
    """The next free number of one repository, and the placeholders that keep numbers."""

    def __init__(self, space: NumberSpace, *, forge: str) -> None:
        self.space = space
        self.forge = forge  # the forge's name, as errors say it ("GitHub")
        self._next_number: int | None = None

    def forget(self) -> None:
        """Count afresh before the next allocation: a number may have been taken unseen."""
        self._next_number = None

    def highest(self) -> int:
        if self._next_number is None:
            self._next_number = self.space.highest() + 1
        return self._next_number - 1

    def placeholder_at(self, number: int) -> bool:
        """Whether ``number`` is one of our placeholders, free to take over.

        Only a 404 means "no": any other failure propagates (retryably), since treating
        it as "no placeholder" would create a new issue under the next free number.
        """
        try:
            body = self.space.body_at(number)
        except ObjectNotFound:
            return False
        return is_placeholder(body)

    def fill_gaps_before(self, number: int) -> None:
        """Closed placeholders up to ``number - 1``, so the next create gets ``number``."""
        while self.highest() + 1 < number:
            gap = self.highest() + 1
            try:
                taken = self.space.create_placeholder(PLACEHOLDER_TITLE, placeholder_body(gap))
            except ResultUnknown as unknown:
                # Count again: the placeholder is there (close it) or it is not, and then
                # the stage is tried again later (nothing of this item was sent).
                self.forget()
                if self.highest() < gap or not self.placeholder_at(gap):
                    raise ProviderUnavailable(
                        f"{self.forge} lost the response to the placeholder for #{gap} and "
                        "it is not there; trying again"
                    ) from unknown
                taken = gap
            self.space.close_placeholder(taken)
            self._next_number = taken + 1

    def slot(self, number: int | None) -> int | None:
        """The placeholder to take over for ``number``, after filling any gap before it."""
        if number is None:
            return None
        if number > self.highest():
            self.fill_gaps_before(number)
            return None
        return number if self.placeholder_at(number) else None

    def created(self, number: int) -> None:
        """A create took ``number``: the next one is free."""
        self._next_number = max(self._next_number or 0, number + 1)

    def take_or_create(self, wanted: int | None, fields: Mapping[str, Any]) -> int:
        """An issue with ``fields`` under number ``wanted`` (its placeholder, taken over
        and reopened) or, without one, under the next free number."""
        slot = self.slot(wanted)
        if slot is not None:
            self.space.reopen_as(slot, fields)
            return slot
        created = self.space.create_issue(fields)
        self.created(created)
        return created
