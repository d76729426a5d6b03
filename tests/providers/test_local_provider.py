"""LocalProvider: Git refs and forge objects behind one provider contract."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.providers.base import (
    AssetSource,
    EmptyChecker,
    EndpointSpec,
    ObjectWriter,
    TargetRef,
    TargetWrite,
    WriteStatus,
)
from reposync.providers.local import LocalForge, LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.sync import objects
from reposync.sync.canonical import DigestBuilder, inventory_digest
from reposync.sync.vocabulary import Action, ObjectType
from tests.gitrepo import generate, init_bare, refs, set_ref

T = ObjectType
WHEN = "2024-05-01T12:00:00Z"


def open_provider(path: Path) -> LocalProvider:
    return LocalProvider.open(EndpointSpec("local", str(path)))


@pytest.fixture
def source(tmp_path: Path) -> Iterator[LocalProvider]:
    path = generate(tmp_path / "src.git", commits=3, branches=2, tags=2)
    set_ref(path, "refs/notes/commits", refs(path)["refs/heads/main"])
    provider = open_provider(path)
    yield provider
    provider.close()


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[LocalProvider]:
    provider = open_provider(init_bare(tmp_path / "empty.git"))
    yield provider
    provider.close()


def label_write(item: int, name: str, marker: str) -> TargetWrite:
    payload = dict(objects.label("x", "1", name=name).payload)
    return TargetWrite(item, Action.CREATE, T.LABEL, None, payload, marker)


def test_the_provider_offers_the_forge_capabilities(empty):
    """ObjectWriter, AssetSource and EmptyChecker are discovered by isinstance."""
    assert isinstance(empty, ObjectWriter)
    assert isinstance(empty, AssetSource)
    assert isinstance(empty, EmptyChecker)
    assert isinstance(empty.forge, LocalForge)


def test_one_listing_holds_refs_and_forge_objects_in_order(source):
    """Git refs sit between issue_comment and label, everything in (type, identity) order."""
    forge = ForgeAuthoring(source.forge)
    for n in range(11):
        forge.create_label(f"l{n}")
    issue = forge.create_issue("i", author="a", created_at=WHEN)
    forge.add_comment(T.ISSUE, issue, "c", author="a", created_at=WHEN)
    forge.create_release("v1", author="a")
    listing = source.inventory_index(list(T))
    entries = list(listing.entries)
    keys = [(str(e.object_type), e.identity) for e in entries]
    assert keys == sorted(keys)
    digest = DigestBuilder()
    for entry in entries:
        digest.add(entry)  # raises on any out-of-order entry
    assert digest.hexdigest() == inventory_digest(entries)
    types = list(dict.fromkeys(e.object_type for e in entries))
    assert types == [T.GIT_REF, T.ISSUE, T.ISSUE_COMMENT, T.LABEL, T.RELEASE]
    assert listing.unsupported == {"refs/notes": 1}
    assert sum(1 for e in entries if e.object_type is T.GIT_REF) == 5  # main, 2 branches, 2 tags
    assert source.stats.index_reads == 1


def test_listing_only_some_types(source):
    """A listing holds only the requested types; refs alone or forge objects alone."""
    ForgeAuthoring(source.forge).create_label("bug")
    refs_only = list(source.inventory_index([T.GIT_REF]).entries)
    assert {e.object_type for e in refs_only} == {T.GIT_REF}
    labels_only = source.inventory_index([T.LABEL])
    assert [e.unique_key for e in labels_only.entries] == ["bug"]
    assert labels_only.unsupported == {}
    assert list(source.inventory_index([]).entries) == []
    assert source.stats.index_reads == 2


def test_reads_count_each_object(source):
    """read and read_batch return forge objects and count one object read per identity."""
    forge = ForgeAuthoring(source.forge)
    label = forge.create_label("bug")
    issue = forge.create_issue("i", author="a")
    source.stats.take()
    assert source.read(T.LABEL, label) == forge.reader.get(T.LABEL, label)
    batch = source.read_batch(T.ISSUE, [issue, "404"])
    assert batch == {issue: forge.reader.get(T.ISSUE, issue), "404": None}
    git_refs = source.read_batch(T.GIT_REF, ["refs/heads/main", "refs/heads/none"])
    assert git_refs["refs/heads/main"] is not None
    assert git_refs["refs/heads/none"] is None
    assert source.stats.take() == {"object_reads": 5, "index_reads": 0, "writes": 0}


def test_is_empty_needs_no_refs_and_no_forge_objects(empty, source):
    """Empty only without refs and without forge objects; a label alone makes it non-empty."""
    assert empty.is_empty()
    assert not source.is_empty()
    label = ForgeAuthoring(empty.forge).create_label("bug")
    assert not empty.is_empty()
    ForgeAuthoring(empty.forge).delete(T.LABEL, label)
    assert empty.is_empty()


def test_reading_a_source_without_metadata_leaves_it_untouched(source):
    """Inventory, reads and is_empty of a plain Git repository create no forge store."""
    list(source.inventory_index(list(T)).entries)
    source.read(T.ISSUE, "1")
    source.read_batch(T.LABEL, ["1"])
    source.find_by_markers(T.LABEL, ["x"])
    source.is_empty()
    assert not (Path(source.git_remote(write=False).url) / "reposync").exists()


def test_apply_batch_counts_only_performed_writes(empty):
    """Idempotent creates, refusals and deletes of absent objects are not counted as writes."""
    results = empty.apply_batch([label_write(1, "bug", "s1"), label_write(2, "bug", "s2")])
    assert [r.status for r in results] == [WriteStatus.OK, WriteStatus.REFUSED]
    assert empty.apply_batch([label_write(1, "bug", "s1")])[0].target_identity == "1"
    gone = TargetWrite(3, Action.DELETE, T.LABEL, "99", None, "s3")
    assert empty.apply_batch([gone])[0].status is WriteStatus.OK
    assert empty.stats.writes == 1
    assert empty.find_by_markers(T.LABEL, ["s1", "s2"]) == {"s1": "1"}


def test_assets_are_written_and_opened_through_the_provider(empty):
    """A release asset created by apply_batch streams back through open_asset."""
    release = ForgeAuthoring(empty.forge).create_release("v1", author="a")
    data = b"payload bytes" * 1000
    payload = {
        "name": "a.bin",
        "content_type": "application/octet-stream",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    write = TargetWrite(
        1,
        Action.CREATE,
        T.RELEASE_ASSET,
        None,
        payload,
        "src-asset",
        refs={"parent": TargetRef(T.RELEASE, release, "src-release")},
        content=lambda: io.BytesIO(data),
    )
    [result] = empty.apply_batch([write])
    assert result.status is WriteStatus.OK
    with empty.open_asset(result.target_identity) as stream:
        assert stream.read() == data
    assert empty.stats.writes == 1


def test_close_closes_the_database_and_is_idempotent(tmp_path):
    """After close the store is not held open (SQLite removes the WAL with the last
    connection); closing twice is harmless."""
    path = init_bare(tmp_path / "repo.git")
    provider = open_provider(path)
    ForgeAuthoring(provider.forge).create_label("bug")
    wal = path / "reposync" / "forge.db-wal"
    assert wal.exists()
    provider.close()
    provider.close()
    assert not wal.exists()
    reopened = open_provider(path)
    assert [e.unique_key for e in reopened.inventory_index([T.LABEL]).entries] == ["bug"]
    reopened.close()
