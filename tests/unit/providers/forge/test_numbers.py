"""Issue and pull request numbers stay the source's on a forge that numbers them itself:
gaps are filled with closed placeholders, a placeholder is taken over later, and a
number taken unseen never shifts the next one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reposync.errors import ObjectNotFound, ProviderUnavailable, ResultUnknown
from reposync.providers.forge.numbers import (
    PLACEHOLDER_TITLE,
    NumberAllocator,
    is_placeholder,
    placeholder_body,
)


@dataclass
class Issue:
    title: str
    body: str | None
    state: str = "open"


@dataclass
class Space:
    """A forge's shared index in memory; ``lose`` answers the next placeholder's create
    with ``ResultUnknown`` (``landed``: after creating it, or before)."""

    issues: dict[int, Issue] = field(default_factory=dict)
    lose: bool = False
    landed: bool = True
    reads: int = 0
    broken_reads: bool = False

    def highest(self) -> int:
        self.reads += 1
        return max(self.issues, default=0)

    def body_at(self, number: int) -> str | None:
        if self.broken_reads:
            raise ProviderUnavailable("the forge is down")
        if number not in self.issues:
            raise ObjectNotFound(f"#{number}")
        return self.issues[number].body

    def _add(self, title: str, body: str | None) -> int:
        number = max(self.issues, default=0) + 1
        self.issues[number] = Issue(title, body)
        return number

    def create_placeholder(self, title: str, body: str) -> int:
        if self.lose:
            self.lose = False
            if self.landed:
                self._add(title, body)
            raise ResultUnknown("lost")
        return self._add(title, body)

    def close_placeholder(self, number: int) -> None:
        self.issues[number].state = "closed"

    def reopen_as(self, number: int, fields: Mapping[str, Any]) -> None:
        self.issues[number] = Issue(fields["title"], fields["body"], "open")

    def create_issue(self, fields: Mapping[str, Any]) -> int:
        return self._add(fields["title"], fields["body"])


def fields(number: int) -> dict[str, str]:
    return {"title": f"issue {number}", "body": f"source #{number}"}


@given(st.sets(st.integers(1, 40), max_size=15))
def test_creates_in_number_order_keep_every_number_and_close_every_gap(wanted: set[int]):
    """Each object gets its source number; every number below the last is either an
    object or a closed placeholder."""
    space = Space()
    allocator = NumberAllocator(space, forge="Forge")
    for number in sorted(wanted):
        assert allocator.take_or_create(number, fields(number)) == number
    for number, issue in space.issues.items():
        if number in wanted:
            assert issue.title == f"issue {number}"
        else:
            assert (issue.title, issue.state) == (PLACEHOLDER_TITLE, "closed")
            assert is_placeholder(issue.body)
    assert set(space.issues) == set(range(1, max(wanted, default=0) + 1))


def test_an_object_synced_later_takes_its_placeholder_over_and_reopens_it():
    """A number kept by a placeholder is taken by its object, edited in place."""
    space = Space()
    allocator = NumberAllocator(space, forge="Forge")
    allocator.take_or_create(3, fields(3))
    assert allocator.take_or_create(2, fields(2)) == 2
    assert space.issues[2] == Issue("issue 2", "source #2", "open")
    assert len(space.issues) == 3


def test_a_number_held_by_another_object_is_not_taken():
    """Only a placeholder is taken over: a number in use sends the object to the next."""
    space = Space({1: Issue("people's issue", "theirs")})
    allocator = NumberAllocator(space, forge="Forge")
    assert allocator.slot(1) is None
    assert allocator.take_or_create(1, fields(1)) == 2
    assert space.issues[1].title == "people's issue"


def test_a_lost_placeholder_that_landed_is_closed_and_counted():
    """A placeholder whose answer was lost but which exists is closed, not made twice."""
    space = Space(lose=True, landed=True)
    allocator = NumberAllocator(space, forge="Forge")
    assert allocator.take_or_create(3, fields(3)) == 3
    assert [space.issues[n].state for n in (1, 2)] == ["closed", "closed"]


def test_a_lost_placeholder_that_did_not_land_stops_the_create_retryably():
    """Nothing is created under another number: the forge's name says who lost it."""
    space = Space(lose=True, landed=False)
    allocator = NumberAllocator(space, forge="Forgejo")
    with pytest.raises(ProviderUnavailable, match=r"^Forgejo lost the response"):
        allocator.take_or_create(2, fields(2))
    assert space.issues == {}


def test_only_a_missing_number_means_no_placeholder():
    """A failed read propagates: guessing "no placeholder" would shift the number."""
    space = Space({1: Issue(PLACEHOLDER_TITLE, placeholder_body(1), "closed")})
    allocator = NumberAllocator(space, forge="Forge")
    assert allocator.placeholder_at(1)
    assert not allocator.placeholder_at(7)
    space.broken_reads = True
    with pytest.raises(ProviderUnavailable):
        allocator.placeholder_at(1)


def test_the_count_is_read_once_and_again_after_forget():
    """The next free number is counted once per batch, and afresh after ``forget``."""
    space = Space()
    allocator = NumberAllocator(space, forge="Forge")
    allocator.take_or_create(1, fields(1))
    allocator.take_or_create(2, fields(2))
    assert space.reads == 1
    space.issues[3] = Issue("made elsewhere", None)  # a number taken unseen
    allocator.forget()
    assert allocator.take_or_create(4, fields(4)) == 4
    assert space.reads == 2


def test_a_placeholders_marker_is_at_the_end_of_its_body_only():
    """A body quoting the placeholder marker is no placeholder; the placeholder's is."""
    assert is_placeholder(placeholder_body(12))
    assert not is_placeholder("see <!-- reposync:marker placeholder:3 --> above")
    assert not is_placeholder(None)
