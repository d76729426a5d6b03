"""What a target can hold decides what a Run plans; the rest is counted, never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from reposync.providers.base import EndpointSpec, InventoryListing
from reposync.providers.gitremote import GitRemoteProvider
from reposync.providers.local import LocalProvider
from reposync.service.pipeline.stages.inventory import SYNCED_TYPES, held, held_types
from reposync.sync.canonical import IndexEntry
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import init_bare

T = ObjectType


def entry(object_type: ObjectType, identity: str) -> IndexEntry:
    return IndexEntry(object_type, identity, identity, identity, "r", "h")


def test_a_forge_holds_every_type_and_a_plain_remote_its_refs_only(tmp_path: Path):
    """Held types follow the declared capabilities: all for the local forge; for a plain
    Git remote only git_ref (no wiki, no writable HEAD, no forge objects)."""
    path = init_bare(tmp_path / "a.git")
    local = LocalProvider.open(EndpointSpec("local", str(path)))
    remote = GitRemoteProvider.open(EndpointSpec("git", f"file://{path}"))
    try:
        assert held_types(local) == frozenset(SYNCED_TYPES)
        assert held_types(remote) == frozenset({T.GIT_REF})
    finally:
        local.close()
        remote.close()


@pytest.mark.parametrize("count", [True, False], ids=["source", "target"])
def test_types_a_target_cannot_hold_are_left_out_and_counted_by_type(count: bool):
    """Kept entries stream through in order; the others are counted under their type's
    name beside the ref namespaces (for a source listing; a target's are only dropped)."""
    listing = InventoryListing(
        entries=[
            entry(T.DEFAULT_BRANCH, "HEAD"),
            entry(T.GIT_REF, "refs/heads/main"),
            entry(T.ISSUE, "1"),
            entry(T.ISSUE, "2"),
            entry(T.LABEL, "bug"),
        ],
        unsupported={"refs/notes": 2},
    )

    held(listing, frozenset({T.GIT_REF}), count=count)

    assert [e.identity for e in listing.entries] == ["refs/heads/main"]
    expected = {"refs/notes": 2, "default_branch": 1, "issue": 2, "label": 1}
    assert listing.unsupported == (expected if count else {"refs/notes": 2})


def test_a_target_that_holds_everything_leaves_the_listing_as_it_is():
    """Nothing is wrapped or counted for a forge target."""
    entries = [entry(T.ISSUE, "1")]
    listing = InventoryListing(entries=entries)
    held(listing, frozenset(SYNCED_TYPES))
    assert listing.entries is entries
    assert listing.unsupported == {}
