"""Finding again what a create made after its response was lost: by the marker in its
body, or by its natural key where it has no body.

After a lost response the writer looks for the object at once (``find_created``); the
provider answers ``find_by_markers`` and proves absence (``markers_absent``) with a
``MarkerFinder``. Labels, milestones and assets have no body to carry a marker: they are
found by name, title and source name (``NaturalKeys``).

The finder reads a forge's listings newest first, so a create of a moment ago is found
in the first page, and stops after ``MARKER_SCAN_LIMIT`` objects of a listing (parents
of per-parent listings): only a listing read whole proves that no object carries a
marker. What it needs of a forge's API is ``MarkerSearch``: its listings of bodies,
lazily paged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from reposync.errors import ObjectNotFound
from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import parse
from reposync.sync.vocabulary import ObjectType

#: Newest objects of a listing scanned when looking for a marker after a lost response
#: (a flat listing is read to the object just past it, as GitHub's writer always did).
MARKER_SCAN_LIMIT = 500

#: One object of a listing: the identity it would have as a canonical object, its body.
Marked = tuple[str, str | None]


class MarkerSearch(Protocol):
    """A forge's listings of bodies where a type's markers can be, each newest first and
    read lazily (nothing is requested before it is iterated)."""

    def bodies(self, object_type: ObjectType) -> Iterable[Marked] | None:
        """Every object of the repository that may carry a marker of ``object_type`` (a
        comment carrying a review, too); ``None`` when the forge lists none such."""
        ...

    def bodies_per_parent(self, object_type: ObjectType) -> Iterable[Iterable[Marked]] | None:
        """Where the forge lists a type only per parent (GitHub's reviews per pull
        request): one listing per parent, newest parent first; ``None`` otherwise."""
        ...

    def bodies_under(self, object_type: ObjectType, parent: str) -> Iterable[Marked] | None:
        """The objects of ``object_type`` under one parent (a pull request's reviews),
        where the forge lists them so; ``None`` otherwise."""
        ...


class NaturalKeys(Protocol):
    """How a forge finds the objects that have no body by what names them."""

    def label_named(self, name: str) -> str | None:
        """The identity of the label called ``name``."""
        ...

    def milestone_titled(self, title: str) -> str | None:
        """The identity of the milestone titled ``title``."""
        ...

    def asset_named(self, release: str, name: str) -> str | None:
        """The identity of release ``release``'s asset whose source name is ``name``."""
        ...


@dataclass(frozen=True, slots=True)
class Found:
    """Markers found, and whether every listing was read whole (only then is a marker
    not found on no object)."""

    identities: dict[str, str]
    complete: bool


class MarkerFinder:
    """Looks for markers among a forge's newest objects."""

    def __init__(self, search: MarkerSearch, *, limit: int = MARKER_SCAN_LIMIT) -> None:
        self.search = search
        self.limit = limit

    def find(self, object_type: ObjectType, markers: Sequence[str]) -> Found:
        """{marker: identity} among the newest objects of a type."""
        wanted = set(markers)
        found: dict[str, str] = {}
        listing = self.search.bodies(object_type)
        complete = listing is not None and self._scan(listing, wanted, found)
        if len(found) < len(wanted):
            groups = self.search.bodies_per_parent(object_type)
            if groups is not None:
                whole = self._scan_groups(groups, wanted, found)
                complete = whole and (listing is None or complete)
        return Found(found, complete)

    def absent(self, object_type: ObjectType, markers: Sequence[str]) -> set[str]:
        """The markers no object carries, as far as a whole reading proves it (none when
        a listing was read only in part)."""
        found = self.find(object_type, markers)
        return set(markers) - set(found.identities) if found.complete else set()

    def _scan(self, listing: Iterable[Marked], wanted: set[str], found: dict[str, str]) -> bool:
        """Markers of one listing into ``found``; whether the whole listing was read."""
        for count, (identity, body) in enumerate(listing):
            marker = parse(body).marker
            if marker in wanted:
                found[marker] = identity
                if len(found) == len(wanted):
                    return False  # stopped early: not a proof of absence for the rest
            if count >= self.limit:
                return False
        return True

    def _scan_groups(
        self, groups: Iterable[Iterable[Marked]], wanted: set[str], found: dict[str, str]
    ) -> bool:
        """Markers of per-parent listings into ``found`` (at most ``limit`` parents);
        whether every parent was read."""
        for count, listing in enumerate(groups):
            if count >= self.limit:
                return False
            for identity, body in listing:
                marker = parse(body).marker
                if marker in wanted:
                    found[marker] = identity
                    if len(found) == len(wanted):
                        return False  # stopped early: not a proof of absence for the rest
        return True

    def find_one(self, listing: Iterable[Marked], marker: str) -> str | None:
        """The identity of the object of ``listing`` that carries ``marker`` (read whole)."""
        for identity, body in listing:
            if parse(body).marker == marker:
                return identity
        return None


def find_created(
    write: TargetWrite,
    parent: str | None,
    keys: NaturalKeys,
    finder: MarkerFinder,
) -> str | None:
    """The identity of what ``write`` (a create under ``parent``'s target identity) made,
    or ``None`` when none was found."""
    payload = write.payload or {}
    if write.object_type is ObjectType.LABEL:
        return keys.label_named(payload.get("name", ""))
    if write.object_type is ObjectType.MILESTONE:
        return keys.milestone_titled(payload.get("title", ""))
    if parent:
        under = finder.search.bodies_under(write.object_type, parent)
        try:
            found = None if under is None else finder.find_one(under, write.marker)
        except ObjectNotFound:  # a parent that is no pull request (a carrier issue)
            found = None  # lists none natively: what it carries is searched below
        if found is not None:
            return found
    if write.object_type is ObjectType.RELEASE_ASSET and parent:
        return keys.asset_named(parent, payload.get("name", ""))
    return finder.find(write.object_type, [write.marker]).identities.get(write.marker)
