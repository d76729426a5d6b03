"""A create whose answer was lost is found again by its marker or natural key, and a
marker is proved absent only by a listing read whole."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose
from reposync.providers.forge.markers import Marked, MarkerFinder, find_created
from reposync.sync.vocabulary import Action, ObjectType

T = ObjectType


def marked(identity: str, marker: str | None) -> Marked:
    return identity, compose("text", marker=marker, attribution={"author": "ann"})


@dataclass
class Search:
    """Listings in memory that count what was read (a forge's pages, lazily)."""

    listings: dict[ObjectType, list[Marked]] = field(default_factory=dict)
    per_parent: dict[ObjectType, list[list[Marked]]] = field(default_factory=dict)
    under: dict[tuple[ObjectType, str], list[Marked]] = field(default_factory=dict)
    read: int = 0
    parents_opened: int = 0

    def _counted(self, items: list[Marked]) -> Iterator[Marked]:
        for item in items:
            self.read += 1
            yield item

    def _opened(self, groups: list[list[Marked]]) -> Iterator[Iterable[Marked]]:
        for group in groups:
            self.parents_opened += 1
            yield self._counted(group)

    def bodies(self, object_type: ObjectType) -> Iterable[Marked] | None:
        items = self.listings.get(object_type)
        return None if items is None else self._counted(items)

    def bodies_per_parent(self, object_type: ObjectType) -> Iterable[Iterable[Marked]] | None:
        groups = self.per_parent.get(object_type)
        return None if groups is None else self._opened(groups)

    def bodies_under(self, object_type: ObjectType, parent: str) -> Iterable[Marked] | None:
        items = self.under.get((object_type, parent))
        return None if items is None else self._counted(items)


class Keys:
    """Natural keys in memory."""

    def label_named(self, name: str) -> str | None:
        return {"bug": "11"}.get(name)

    def milestone_titled(self, title: str) -> str | None:
        return {"v1": "2"}.get(title)

    def asset_named(self, release: str, name: str) -> str | None:
        return {("7", "app.tgz"): "70"}.get((release, name))


def newest_first(count: int) -> list[Marked]:
    return [marked(str(n), f"m{n}") for n in range(count, 0, -1)]


def test_markers_are_found_among_the_newest_and_absence_needs_the_whole_listing():
    """Found markers name their objects; one not found is absent after a whole read."""
    search = Search({T.ISSUE: newest_first(30)})
    finder = MarkerFinder(search)
    found = finder.find(T.ISSUE, ["m3", "m29", "nope"])
    assert found.identities == {"m3": "3", "m29": "29"}
    assert found.complete
    assert finder.absent(T.ISSUE, ["m3", "nope"]) == {"nope"}


def test_the_search_stops_at_the_last_marker_it_wants():
    """Once every marker is found nothing more is read."""
    search = Search({T.ISSUE: newest_first(30)})
    found = MarkerFinder(search).find(T.ISSUE, ["m30", "m29"])
    assert found.identities == {"m30": "30", "m29": "29"}
    assert search.read == 2


def test_a_listing_longer_than_the_limit_proves_nothing_absent():
    """Past the limit a marker is not looked for, and nothing counts as proved absent."""
    search = Search({T.ISSUE: newest_first(50)})
    finder = MarkerFinder(search, limit=10)
    found = finder.find(T.ISSUE, ["m45", "m1"])
    assert found.identities == {"m45": "45"}
    assert not found.complete
    assert finder.absent(T.ISSUE, ["m1"]) == set()
    assert search.read <= 2 * 11  # two searches, neither past the limit


def test_a_type_the_forge_lists_nowhere_is_neither_found_nor_proved_absent():
    """Labels have no listing of bodies: no marker is found, none proved absent."""
    finder = MarkerFinder(Search())
    assert finder.find(T.LABEL, ["m"]).identities == {}
    assert finder.absent(T.LABEL, ["m"]) == set()


def test_per_parent_listings_are_read_only_for_markers_still_missing():
    """Reviews carried in comments come first; pull requests' own reviews only after."""
    search = Search(
        {T.REVIEW: [marked("comment-9", "r1")]},
        per_parent={T.REVIEW: [[marked("2/5", "r2")], [marked("1/4", "r3")]]},
    )
    finder = MarkerFinder(search)
    assert finder.find(T.REVIEW, ["r1"]).identities == {"r1": "comment-9"}
    assert search.parents_opened == 0
    found = finder.find(T.REVIEW, ["r1", "r3", "nope"])
    assert found.identities == {"r1": "comment-9", "r3": "1/4"}
    assert found.complete
    assert finder.absent(T.REVIEW, ["nope"]) == {"nope"}


def test_per_parent_listings_past_the_limit_prove_nothing_absent():
    """At most ``limit`` parents are opened; then absence is not proved."""
    groups = [[marked(f"{n}/1", f"r{n}")] for n in range(20, 0, -1)]
    search = Search({T.REVIEW: []}, per_parent={T.REVIEW: groups})
    finder = MarkerFinder(search, limit=5)
    found = finder.find(T.REVIEW, ["r18", "r1"])
    assert found.identities == {"r18": "18/1"}
    assert not found.complete
    assert search.parents_opened == 6  # the sixth is reached, not read


def write(object_type: ObjectType, payload: dict[str, str]) -> TargetWrite:
    return TargetWrite(1, Action.CREATE, object_type, None, payload, "wanted")


def test_objects_without_a_body_are_found_by_their_natural_key():
    """Labels by name, milestones by title, assets by source name: no marker search."""
    search = Search({T.LABEL: [marked("99", "wanted")]})
    finder = MarkerFinder(search)
    assert find_created(write(T.LABEL, {"name": "bug"}), None, Keys(), finder) == "11"
    assert find_created(write(T.MILESTONE, {"title": "v1"}), None, Keys(), finder) == "2"
    asset = write(T.RELEASE_ASSET, {"name": "app.tgz"})
    assert find_created(asset, "7", Keys(), finder) == "70"
    assert find_created(write(T.LABEL, {"name": "x"}), None, Keys(), finder) is None
    assert search.read == 0


def test_a_review_is_looked_for_under_its_pull_request_first_then_everywhere():
    """The parent's own listing is read first; a review not there is searched at large."""
    under = Search(under={(T.REVIEW, "4"): [marked("4/1", "other"), marked("4/2", "wanted")]})
    review = write(T.REVIEW, {})
    assert find_created(review, "4", Keys(), MarkerFinder(under)) == "4/2"
    at_large = Search({T.REVIEW: [marked("comment-3", "wanted")]}, under={(T.REVIEW, "4"): []})
    assert find_created(review, "4", Keys(), MarkerFinder(at_large)) == "comment-3"


def test_other_creates_are_found_by_their_marker():
    """An issue comment is found by the marker its body ends with."""
    search = Search({T.ISSUE_COMMENT: [marked("8", "other"), marked("7", "wanted")]})
    comment = write(T.ISSUE_COMMENT, {})
    assert find_created(comment, "1", Keys(), MarkerFinder(search)) == "7"
