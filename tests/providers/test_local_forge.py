"""The local forge's object store: round trips, index, atomic batches, assets, awkward data."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from reposync import faults
from reposync.errors import Conflict, ObjectNotFound, ProviderError, ProviderUnavailable
from reposync.providers.base import TargetRef, TargetWrite, WriteStatus
from reposync.providers.local import reads as reads_module
from reposync.providers.local.assets import ASSET_CHUNK
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.providers.local.forge import LocalForge
from reposync.providers.local.mutations import RowMutations
from reposync.providers.local.objects import FORGE_TYPES, PARENT_TYPES
from reposync.providers.local.store import SCHEMA_VERSION
from reposync.sync import objects
from reposync.sync.canonical import CanonicalObject, ObjectRef, content_hash
from reposync.sync.fields import SHAPES, Field, Kind
from reposync.sync.objects import MalformedObject
from reposync.sync.vocabulary import Action, ObjectType
from tests.gitrepo import init_bare

T = ObjectType
WHEN = "2024-05-01T12:00:00Z"
LATER = "2024-05-02T08:30:00Z"
SHA_A = "a" * 40
SHA_B = "b" * 40
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_bare(tmp_path / "repo.git")


@pytest.fixture
def forge(repo: Path) -> Iterator[ForgeAuthoring]:
    authoring = ForgeAuthoring(LocalForge(repo))
    yield authoring
    authoring.store.close()


@pytest.fixture
def no_faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Fault configuration set by a test is forgotten afterwards."""
    monkeypatch.delenv(faults.ENV, raising=False)
    faults.reset()
    yield monkeypatch
    monkeypatch.delenv(faults.ENV, raising=False)
    faults.reset()


# -- helpers -------------------------------------------------------------------------------


def create(
    object_type: ObjectType,
    payload: dict[str, Any],
    marker: str,
    *,
    item: int = 0,
    number: int | None = None,
    refs: dict[str, TargetRef] | None = None,
    content: Callable[[], BinaryIO] | None = None,
) -> TargetWrite:
    return TargetWrite(
        item, Action.CREATE, object_type, None, payload, marker, number, refs or {}, None, content
    )


def update(
    object_type: ObjectType,
    identity: str,
    payload: dict[str, Any],
    *,
    item: int = 0,
    expected_hash: str | None = None,
    content: Callable[[], BinaryIO] | None = None,
) -> TargetWrite:
    return TargetWrite(
        item,
        Action.UPDATE,
        object_type,
        identity,
        payload,
        f"src-{identity}",
        expected_hash=expected_hash,
        content=content,
    )


def delete(object_type: ObjectType, identity: str, *, item: int = 0) -> TargetWrite:
    return TargetWrite(item, Action.DELETE, object_type, identity, None, f"src-{identity}")


def ref(object_type: ObjectType, identity: str | None, marker: str = "") -> TargetRef:
    return TargetRef(object_type, identity, marker)


def label_payload(name: str, color: str = "ededed", description: str = "") -> dict[str, Any]:
    return dict(objects.label("x", "1", name=name, color=color, description=description).payload)


def comment_payload(body: str, author: str = "carol") -> dict[str, Any]:
    parent = ObjectRef(T.ISSUE, "x")
    built = objects.issue_comment(
        "x", "1", parent=parent, parent_key=None, body=body, author=author, created_at=WHEN
    )
    return dict(built.payload)


def review_comment_payload(body: str, *, reply: bool) -> dict[str, Any]:
    built = objects.review_comment(
        "x",
        "1",
        parent=ObjectRef(T.REVIEW, "x"),
        parent_key=None,
        path="src/app.py",
        line=7,
        commit_id=SHA_B,
        body=body,
        author="dave",
        created_at=WHEN,
        in_reply_to=ObjectRef(T.REVIEW_COMMENT, "x") if reply else None,
    )
    return dict(built.payload)


def asset_payload(name: str, data: bytes) -> dict[str, Any]:
    return {
        "name": name,
        "content_type": "application/octet-stream",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def assert_same(got: CanonicalObject | None, expected: CanonicalObject) -> None:
    assert got == expected
    assert got is not None
    assert got.content_hash == expected.content_hash
    assert got.index_entry() == expected.index_entry()


def statuses(results: list) -> list[tuple[str, str | None]]:
    return [(r.status.value, r.error.code if r.error else None) for r in results]


class ChunkRecorder(io.BytesIO):
    """A stream that records the size of every read, to prove bytes are streamed."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []

    def read(self, size: int | None = -1) -> bytes:
        self.reads.append(-1 if size is None else size)
        return super().read(size)


# -- storage and lazy creation -------------------------------------------------------------


def test_reads_of_a_missing_store_return_nothing_and_create_nothing(forge, repo):
    """Index, reads, lookups and counts of a repository without metadata leave it untouched."""
    assert forge.reader.is_empty()
    assert list(forge.reader.index(list(T))) == []
    assert forge.reader.read_batch(T.ISSUE, ["1", "2"]) == {"1": None, "2": None}
    assert forge.reader.get(T.LABEL, "1") is None
    assert forge.reader.objects_of(T.ISSUE) == []
    assert forge.reader.count() == 0
    assert forge.reader.find_by_markers(T.ISSUE, ["m"]) == {}
    with pytest.raises(ObjectNotFound):
        forge.assets.open_asset("1")
    assert not (repo / "reposync").exists()


def test_first_write_creates_the_database_with_wal_and_schema_version(forge, repo):
    """The store appears on the first write: WAL journal, user_version set, foreign keys on."""
    forge.create_label("bug")
    db = repo / "reposync" / "forge.db"
    assert db.is_file()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    reopened = LocalForge(repo)
    assert [o.payload["name"] for o in reopened.reader.objects_of(T.LABEL)] == ["bug"]
    reopened.store.close()


def test_a_newer_schema_is_refused_clearly(forge, repo):
    """A store written by a newer reposync is not guessed at: ProviderUnavailable names it."""
    forge.create_label("bug")
    forge.store.close()
    with sqlite3.connect(repo / "reposync" / "forge.db") as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(ProviderUnavailable, match="newer than this reposync"):
        forge.reader.is_empty()


def test_is_empty_follows_the_objects(forge):
    """is_empty is true before the first object and again once everything is deleted."""
    assert forge.reader.is_empty()
    label = forge.create_label("bug")
    assert not forge.reader.is_empty()
    forge.delete(T.LABEL, label)
    assert forge.reader.is_empty()


# -- round trips through the Python API ----------------------------------------------------


def test_every_type_round_trips_through_the_api_exactly_as_its_builder_builds_it(forge):
    """Each API call stores what the shared builder makes of the same arguments, hash and all."""
    label = forge.create_label("bug", color="D73A4A", description="Something is broken")
    assert_same(
        forge.reader.get(T.LABEL, label),
        objects.label(label, "1", name="bug", color="d73a4a", description="Something is broken"),
    )
    milestone = forge.create_milestone("v1.0", description="first", state="closed", due_on=LATER)
    assert_same(
        forge.reader.get(T.MILESTONE, milestone),
        objects.milestone(
            milestone, "1", title="v1.0", description="first", state="closed", due_on=LATER
        ),
    )
    issue = forge.create_issue(
        "Crash on start",
        author="alice",
        body="It crashes.",
        created_at=WHEN,
        labels=["bug"],
        milestone="v1.0",
        assignees=["bob", "alice"],
        state="closed",
        state_reason="completed",
        closed_at=LATER,
        locked=True,
    )
    assert_same(
        forge.reader.get(T.ISSUE, issue),
        objects.issue(
            issue,
            "1",
            number=1,
            title="Crash on start",
            body="It crashes.",
            state="closed",
            state_reason="completed",
            labels=["bug"],
            milestone="v1.0",
            assignees=["alice", "bob"],
            author="alice",
            created_at=WHEN,
            closed_at=LATER,
            locked=True,
        ),
    )
    pr_fields = {
        "base_ref": "main",
        "base_sha": SHA_A,
        "head_ref": "fix",
        "head_sha": SHA_B,
        "author": "bob",
        "created_at": WHEN,
    }
    pr = forge.create_pull_request(
        "Fix crash",
        body="Fixes #1",
        state="closed",
        merged=True,
        merged_at=LATER,
        closed_at=LATER,
        draft=False,
        labels=["bug"],
        **pr_fields,
    )
    assert_same(
        forge.reader.get(T.PULL_REQUEST, pr),
        objects.pull_request(
            pr,
            "1",
            number=2,
            title="Fix crash",
            body="Fixes #1",
            state="closed",
            merged=True,
            merged_at=LATER,
            closed_at=LATER,
            labels=["bug"],
            **pr_fields,
        ),
    )
    comment = forge.add_comment(T.ISSUE, issue, "Same here", author="carol", created_at=WHEN)
    expected_comment = objects.issue_comment(
        comment,
        "1",
        parent=ObjectRef(T.ISSUE, issue),
        parent_key="#1",
        body="Same here",
        author="carol",
        created_at=WHEN,
    )
    assert_same(forge.reader.get(T.ISSUE_COMMENT, comment), expected_comment)
    pr_comment = forge.add_comment(T.PULL_REQUEST, pr, "LGTM", author="dave", created_at=WHEN)
    assert forge.reader.get(T.ISSUE_COMMENT, pr_comment).refs["parent"] == ObjectRef(
        T.PULL_REQUEST, pr
    )
    review = forge.add_review(
        pr, state="APPROVED", body="Nice", commit_id=SHA_B, author="dave", submitted_at=WHEN
    )
    expected_review = objects.review(
        review,
        "1",
        parent=ObjectRef(T.PULL_REQUEST, pr),
        parent_key="#2",
        state="APPROVED",
        body="Nice",
        commit_id=SHA_B,
        author="dave",
        submitted_at=WHEN,
    )
    assert_same(forge.reader.get(T.REVIEW, review), expected_review)
    thread = forge.add_review_comment(
        review, path="a.py", line=3, body="nit", commit_id=SHA_B, author="dave", created_at=WHEN
    )
    reply = forge.add_review_comment(
        review,
        path="a.py",
        line=3,
        body="done",
        commit_id=SHA_B,
        author="bob",
        in_reply_to=thread,
        side="LEFT",
        created_at=LATER,
    )
    assert_same(
        forge.reader.get(T.REVIEW_COMMENT, reply),
        objects.review_comment(
            reply,
            "1",
            parent=ObjectRef(T.REVIEW, review),
            parent_key=expected_review.unique_key,
            path="a.py",
            line=3,
            side="LEFT",
            commit_id=SHA_B,
            body="done",
            author="bob",
            created_at=LATER,
            in_reply_to=ObjectRef(T.REVIEW_COMMENT, thread),
        ),
    )
    request = forge.request_review(pr, "erin", requested_at=WHEN)
    assert_same(
        forge.reader.get(T.REVIEW_REQUEST, request),
        objects.review_request(
            request,
            "1",
            parent=ObjectRef(T.PULL_REQUEST, pr),
            parent_key="#2",
            reviewer="erin",
            requested_at=WHEN,
        ),
    )
    release = forge.create_release(
        "v1.0.0", author="alice", name="One", body="notes", prerelease=True, created_at=WHEN
    )
    assert_same(
        forge.reader.get(T.RELEASE, release),
        objects.release(
            release,
            "1",
            tag="v1.0.0",
            name="One",
            body="notes",
            prerelease=True,
            author="alice",
            created_at=WHEN,
        ),
    )
    data = b"\x00binary\xff" * 100
    asset = forge.upload_asset(release, "app.tar.gz", data, "application/gzip")
    assert_same(
        forge.reader.get(T.RELEASE_ASSET, asset),
        objects.release_asset(
            asset,
            "1",
            parent=ObjectRef(T.RELEASE, release),
            parent_key="v1.0.0",
            name="app.tar.gz",
            content_type="application/gzip",
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        ),
    )
    with forge.assets.open_asset(asset) as stream:
        assert stream.read() == data
    reaction = forge.add_reaction(T.ISSUE_COMMENT, comment, "heart", "bob", created_at=WHEN)
    assert_same(
        forge.reader.get(T.REACTION, reaction),
        objects.reaction(
            reaction,
            "1",
            parent=ObjectRef(T.ISSUE_COMMENT, comment),
            parent_key=expected_comment.unique_key,
            content="heart",
            user="bob",
            created_at=WHEN,
        ),
    )
    # Refs (the wiki's too) and HEAD are Git's, not the forge's.
    assert {t for t in T if forge.reader.count(t)} == set(T) - {
        T.GIT_REF,
        T.WIKI_REF,
        T.DEFAULT_BRANCH,
    }


def test_api_update_merges_validates_and_bumps_the_revision(forge):
    """update() merges changes through the builder; bad values and clashes are refused."""
    issue = forge.create_issue("Old", author="alice", created_at=WHEN, labels=["b", "a"])
    assert forge.update(T.ISSUE, issue, title="New", state="closed") == "2"
    obj = forge.reader.get(T.ISSUE, issue)
    assert (obj.revision, obj.payload["title"], obj.payload["labels"]) == ("2", "New", ["a", "b"])
    assert obj.number == 1
    with pytest.raises(MalformedObject):
        forge.update(T.ISSUE, issue, state="maybe")
    with pytest.raises(MalformedObject):
        forge.update(T.ISSUE, issue, number=5)
    with pytest.raises(ObjectNotFound):
        forge.update(T.ISSUE, "99", title="x")
    forge.create_label("bug")
    other = forge.create_label("ui")
    with pytest.raises(Conflict):
        forge.update(T.LABEL, other, name="bug")
    assert forge.reader.get(T.ISSUE, issue).revision == "2"


def test_parent_key_changes_reach_every_descendant(forge):
    """Renaming a release tag or editing a review re-keys assets, comments and reactions."""
    release = forge.create_release("v1", author="alice", created_at=WHEN)
    asset = forge.upload_asset(release, "a.bin", b"abc")
    forge.update(T.RELEASE, release, tag="v1.0")
    renamed = forge.reader.get(T.RELEASE_ASSET, asset)
    assert (renamed.unique_key, renamed.object_key) == ("v1.0:a.bin", "asset a.bin of v1.0")
    assert renamed.revision == "1"  # content did not change

    pr = forge.create_pull_request(
        "PR", author="b", base_ref="main", base_sha=SHA_A, head_ref="x", head_sha=SHA_B
    )
    review = forge.add_review(pr, state="COMMENTED", body="hm", commit_id=SHA_B, author="d")
    comment = forge.add_review_comment(
        review, path="a", line=1, body="x", commit_id=SHA_B, author="d"
    )
    reaction = forge.add_reaction(T.REVIEW_COMMENT, comment, "eyes", "e")
    forge.update(T.REVIEW, review, body="edited")
    new_review = forge.reader.get(T.REVIEW, review)
    new_comment = forge.reader.get(T.REVIEW_COMMENT, comment)
    assert new_comment.unique_key.startswith(new_review.unique_key + ":")
    assert forge.reader.get(T.REACTION, reaction).unique_key.startswith(
        new_comment.unique_key + ":"
    )
    assert {e.identity: e for e in forge.reader.index([T.REACTION])}[reaction] == forge.reader.get(
        T.REACTION, reaction
    ).index_entry()


# -- numbers and unique keys ---------------------------------------------------------------


def test_issues_and_pull_requests_share_one_number_sequence(forge, repo):
    """Numbers are shared and unique: API, apply_batch and the schema itself all refuse reuse."""
    issue = forge.create_issue("one", author="a")
    pr = forge.create_pull_request(
        "two", author="a", base_ref="main", base_sha=SHA_A, head_ref="x", head_sha=SHA_B
    )
    assert (
        forge.reader.get(T.ISSUE, issue).number,
        forge.reader.get(T.PULL_REQUEST, pr).number,
    ) == (1, 2)
    with pytest.raises(Conflict):
        forge.create_issue("clash", author="a", number=2)
    explicit = forge.create_issue("ten", author="a", number=10)
    after = forge.create_pull_request(
        "next", author="a", base_ref="main", base_sha=SHA_A, head_ref="y", head_sha=SHA_B
    )
    assert forge.reader.get(T.ISSUE, explicit).number == 10
    assert forge.reader.get(T.PULL_REQUEST, after).number == 11
    with sqlite3.connect(repo / "reposync" / "forge.db") as raw:
        row = raw.execute("SELECT * FROM objects WHERE object_type = 'issue' AND id = ?", (issue,))
        values = list(row.fetchone())
        columns = [c[0] for c in row.description]
        values[columns.index("id")] = "999"
        values[columns.index("object_type")] = "pull_request"
        values[columns.index("unique_scope")] = None
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            raw.execute(f"INSERT INTO objects VALUES ({','.join('?' * len(values))})", values)


def test_unique_keys_are_enforced_where_forges_enforce_them(forge):
    """Label names, milestone titles, tags and asset names are unique; equal comments are not."""
    forge.create_label("bug")
    with pytest.raises(Conflict):
        forge.create_label("bug")
    forge.create_milestone("v1")
    with pytest.raises(Conflict):
        forge.create_milestone("v1")
    first = forge.create_release("v1", author="a")
    second = forge.create_release("v2", author="a")
    with pytest.raises(Conflict):
        forge.create_release("v1", author="a")
    forge.upload_asset(first, "a.bin", b"1")
    with pytest.raises(Conflict):
        forge.upload_asset(first, "a.bin", b"2")
    forge.upload_asset(second, "a.bin", b"2")  # another release: fine
    issue = forge.create_issue("i", author="a")
    one = forge.add_comment(T.ISSUE, issue, "+1", author="a", created_at=WHEN)
    two = forge.add_comment(T.ISSUE, issue, "+1", author="a", created_at=WHEN)
    assert one != two
    keys = {
        i: o.unique_key for i, o in forge.reader.read_batch(T.ISSUE_COMMENT, [one, two]).items()
    }
    assert keys[one] == keys[two]
    forge.add_reaction(T.ISSUE, issue, "heart", "bob")
    with pytest.raises(Conflict):
        forge.add_reaction(T.ISSUE, issue, "heart", "bob")


def test_wrong_parents_are_refused(forge):
    """A parent must exist and be of a type the child accepts (reactions included)."""
    label = forge.create_label("bug")
    with pytest.raises(ObjectNotFound):
        forge.add_comment(T.ISSUE, "42", "hi", author="a")
    with pytest.raises(MalformedObject):
        forge.add_reaction(T.LABEL, label, "heart", "bob")
    release = forge.create_release("v1", author="a")
    with pytest.raises(MalformedObject):
        forge.add_comment(T.RELEASE, release, "hi", author="a")
    assert forge.reader.count() == 2


# -- index ---------------------------------------------------------------------------------


def populate(forge: ForgeAuthoring) -> dict[ObjectType, str]:
    """One object of every type (plus enough labels to make ids sort as text)."""
    for n in range(12):
        forge.create_label(f"label {n}")
    issue = forge.create_issue("i", author="a", created_at=WHEN)
    pr = forge.create_pull_request(
        "p", author="a", base_ref="main", base_sha=SHA_A, head_ref="x", head_sha=SHA_B
    )
    comment = forge.add_comment(T.ISSUE, issue, "c", author="a", created_at=WHEN)
    review = forge.add_review(pr, state="COMMENTED", commit_id=SHA_B, author="r")
    release = forge.create_release("v1", author="a")
    return {
        T.LABEL: "1",
        T.MILESTONE: forge.create_milestone("m"),
        T.ISSUE: issue,
        T.PULL_REQUEST: pr,
        T.ISSUE_COMMENT: comment,
        T.REVIEW: review,
        T.REVIEW_COMMENT: forge.add_review_comment(
            review, path="p", line=None, body="b", commit_id=SHA_B, author="r"
        ),
        T.REVIEW_REQUEST: forge.request_review(pr, "erin"),
        T.RELEASE: release,
        T.RELEASE_ASSET: forge.upload_asset(release, "a", b"bytes"),
        T.REACTION: forge.add_reaction(T.ISSUE_COMMENT, comment, "+1", "u"),
    }


def test_index_is_sorted_like_python_sorts_type_and_identity_strings(forge):
    """(type, identity) text order: label "10" before "2", types alphabetical."""
    populate(forge)
    entries = list(forge.reader.index(list(T)))
    keys = [(str(e.object_type), e.identity) for e in entries]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys) == forge.reader.count()
    labels = [e.identity for e in entries if e.object_type is T.LABEL]
    assert labels[:4] == ["1", "10", "11", "12"]
    only = list(forge.reader.index([T.REACTION, T.ISSUE, T.GIT_REF]))
    assert [e.object_type for e in only] == [T.ISSUE, T.REACTION]


def test_sqlite_binary_order_is_python_str_order():
    """The claim the index rests on: BINARY collation of UTF-8 text orders as Python's sorted()."""
    words = ["10", "2", "", "a", "B", "é", "e", "z", "ä", "🐛", "\uffff", "𝄞", "~", "a b", "ab"]
    pairs = [(t, w) for t in ("label", "issue", "issue_comment") for w in words]
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE t (object_type TEXT COLLATE BINARY, id TEXT COLLATE BINARY, "
        "PRIMARY KEY (object_type, id))"
    )
    conn.executemany("INSERT INTO t VALUES (?, ?)", pairs)
    ordered = conn.execute("SELECT object_type, id FROM t ORDER BY object_type, id").fetchall()
    assert ordered == sorted(pairs)


def test_index_entries_are_the_read_objects_index_entries(forge):
    """What the index says of an object is exactly what reading it and indexing it gives."""
    made = populate(forge)
    entries = list(forge.reader.index(list(T)))
    for object_type in made:
        of_type = [e for e in entries if e.object_type is object_type]
        read = forge.reader.read_batch(object_type, [e.identity for e in of_type])
        assert [read[e.identity].index_entry() for e in of_type] == of_type


def test_index_never_reads_payloads(forge, repo):
    """Listing uses the covering index only: no payload in the SQL, and corrupt payloads do
    not disturb it."""
    populate(forge)
    before = list(forge.reader.index(list(T)))
    statements: list[str] = []
    forge.store.trace(statements.append)
    listed = list(forge.reader.index(list(T)))
    forge.store.trace(None)
    assert listed == before
    queries = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert queries
    assert not [s for s in queries if "payload" in s.lower()]
    with sqlite3.connect(repo / "reposync" / "forge.db") as raw:
        plan = raw.execute(
            "EXPLAIN QUERY PLAN " + reads_module._INDEX_QUERY, ("label", "", 10)
        ).fetchall()
        assert any("COVERING INDEX objects_listing" in row[-1] for row in plan), plan
        raw.execute("UPDATE objects SET payload = '{not json'")
    assert list(forge.reader.index(list(T))) == before
    with pytest.raises(ProviderError):
        forge.reader.get(T.LABEL, "1")


def test_index_pages_through_chunks_without_losing_or_repeating(forge, monkeypatch):
    """Keyset paging over text identities returns every object once, in order."""
    monkeypatch.setattr(reads_module, "INDEX_CHUNK", 7)
    forge.create_many(T.LABEL, [{"name": f"l{n}"} for n in range(50)])
    identities = [e.identity for e in forge.reader.index([T.LABEL])]
    assert identities == sorted(str(n) for n in range(1, 51))


# -- apply_batch: every type, every action -------------------------------------------------

ASSET_BYTES = {0: b"first asset", 1: b"second, longer asset bytes"}


def type_case(object_type: ObjectType, variant: int) -> tuple[dict[str, Any], str | None]:
    """(canonical payload, parent ref name) of a ``variant`` of one object per type."""
    dummy = {
        T.ISSUE_COMMENT: T.ISSUE,
        T.REVIEW: T.PULL_REQUEST,
        T.REVIEW_COMMENT: T.REVIEW,
        T.REVIEW_REQUEST: T.PULL_REQUEST,
        T.RELEASE_ASSET: T.RELEASE,
        T.REACTION: T.ISSUE,
    }
    fields: dict[str, Any] = {
        T.LABEL: {"name": f"label {variant}", "color": "00ff00"},
        T.MILESTONE: {"title": f"milestone {variant}"},
        T.ISSUE: {"number": 50 + variant, "title": f"issue {variant}", "author": "a",
                  "created_at": WHEN},
        T.PULL_REQUEST: {"number": 60 + variant, "title": f"pr {variant}", "author": "a",
                         "base_ref": "main", "base_sha": SHA_A, "head_ref": "x",
                         "head_sha": SHA_B, "created_at": WHEN},
        T.RELEASE: {"tag": f"v{variant}", "author": "a", "created_at": WHEN},
        T.ISSUE_COMMENT: {"body": f"comment {variant}", "author": "a", "created_at": WHEN},
        T.REVIEW: {"state": "COMMENTED", "body": f"review {variant}", "commit_id": SHA_B,
                   "author": "a", "submitted_at": WHEN},
        T.REVIEW_COMMENT: {"path": "a.py", "line": variant + 1, "commit_id": SHA_B,
                           "body": "rc", "author": "a", "created_at": WHEN},
        T.REVIEW_REQUEST: {"reviewer": f"reviewer{variant}"},
        T.RELEASE_ASSET: {"name": "a.bin", "content_type": "text/plain",
                          "size": len(ASSET_BYTES[variant]),
                          "sha256": hashlib.sha256(ASSET_BYTES[variant]).hexdigest()},
        T.REACTION: {"content": ("heart", "rocket")[variant], "user": "u", "created_at": WHEN},
    }[object_type]  # fmt: skip
    if object_type in dummy:
        fields["parent"] = ObjectRef(dummy[object_type], "x")
        fields["parent_key"] = None
    payload = dict(objects.BUILDERS[object_type]("x", "1", **fields).payload)
    return payload, "parent" if object_type in dummy else None


def described_value(field: Field) -> Any:
    """A value of ``field`` other than its default, chosen by its kind alone."""
    if field.kind is Kind.CHOICE:
        return next(c for c in field.choices if c is not None and c != field.default)
    return {
        Kind.TEXT: "text",
        Kind.NAME: "name",
        Kind.OPTIONAL_TEXT: "v1",
        Kind.NAMES: ["b", "a"],
        Kind.TIME: LATER,
        Kind.FLAG: True,
        Kind.COLOR: "abcdef",
        Kind.LINE: 2,
    }[field.kind]


@pytest.mark.parametrize("object_type", sorted(FORGE_TYPES - {T.RELEASE_ASSET}, key=str))
def test_every_described_field_is_authored_stored_and_read_back(forge, object_type):
    """The authoring API and the store take every field of the one description
    (``reposync.sync.fields``) with nothing listed here: a field added there is kept."""
    shape = SHAPES[object_type]
    parents = {
        T.ISSUE: forge.create_issue("parent", author="a"),
        T.PULL_REQUEST: forge.create_pull_request(
            "parent", author="a", base_ref="main", base_sha=SHA_A, head_ref="x", head_sha=SHA_B
        ),
    }
    parents[T.REVIEW] = forge.add_review(
        parents[T.PULL_REQUEST], state="COMMENTED", commit_id=SHA_B, author="a"
    )
    fields = {field.name: described_value(field) for field in shape.arguments}
    parent = (shape.parents[0], parents[shape.parents[0]]) if shape.parents else None
    [identity] = forge.create_many(object_type, [fields], parent=parent)
    payload = forge.reader.get(object_type, identity).payload
    assert set(payload) == set(shape.names)
    for field in shape.arguments:
        assert payload[field.name] not in (field.default, None), field.name


@pytest.mark.parametrize("object_type", sorted(FORGE_TYPES, key=str))
def test_apply_batch_creates_updates_and_deletes_every_type(forge, object_type):
    """Create, update (revision 2, hash of the new payload) and delete, read back each time."""
    parents = {
        T.ISSUE: forge.create_issue("parent", author="a"),
        T.PULL_REQUEST: forge.create_pull_request(
            "parent", author="a", base_ref="main", base_sha=SHA_A, head_ref="x", head_sha=SHA_B
        ),
        T.RELEASE: forge.create_release("parent", author="a"),
    }
    parents[T.REVIEW] = forge.add_review(
        parents[T.PULL_REQUEST], state="COMMENTED", commit_id=SHA_B, author="a"
    )
    payload, ref_name = type_case(object_type, 0)
    refs = {}
    if ref_name is not None:
        parent_type = PARENT_TYPES[object_type][0]
        refs[ref_name] = ref(parent_type, parents[parent_type])
    number = 50 if object_type is T.ISSUE else 60 if object_type is T.PULL_REQUEST else None
    if number is not None:
        payload.pop("number", None)
    content = (lambda: io.BytesIO(ASSET_BYTES[0])) if object_type is T.RELEASE_ASSET else None

    [created] = forge.writer.apply_batch(
        [create(object_type, payload, "src-1", number=number, refs=refs, content=content)]
    )
    assert created.status is WriteStatus.OK, created
    obj = forge.reader.get(object_type, created.target_identity)
    assert dict(obj.payload) == payload
    assert obj.content_hash == content_hash(payload)
    assert obj.revision == "1"
    assert obj.number == number

    changed, _ = type_case(object_type, 1)
    changed_content = (
        (lambda: io.BytesIO(ASSET_BYTES[1])) if object_type is T.RELEASE_ASSET else None
    )
    [updated] = forge.writer.apply_batch(
        [
            update(
                object_type,
                obj.identity,
                changed,
                expected_hash=obj.content_hash,
                content=changed_content,
            )
        ]
    )
    assert updated.status is WriteStatus.OK, updated
    again = forge.reader.get(object_type, obj.identity)
    assert (dict(again.payload), again.revision) == (changed, "2")
    assert again.content_hash == content_hash(changed)
    assert (again.number, again.refs) == (obj.number, obj.refs)
    if object_type is T.RELEASE_ASSET:
        with forge.assets.open_asset(obj.identity) as stream:
            assert stream.read() == ASSET_BYTES[1]

    [deleted] = forge.writer.apply_batch([delete(object_type, obj.identity)])
    assert deleted.status is WriteStatus.OK
    assert forge.reader.get(object_type, obj.identity) is None
    [again_deleted] = forge.writer.apply_batch([delete(object_type, obj.identity)])
    assert (again_deleted.status, again_deleted.target_identity) == (WriteStatus.OK, obj.identity)


def test_refused_writes_leave_the_rest_of_the_batch_intact(forge):
    """Conflicts, a stale expected hash, a missing target and invalid payloads are refused
    one by one; every other write of the batch commits."""
    bug = forge.create_label("bug")
    stale = forge.reader.get(T.LABEL, bug).content_hash
    forge.update(T.LABEL, bug, description="changed meanwhile")
    results = forge.writer.apply_batch(
        [
            create(T.LABEL, label_payload("one"), "s1", item=1),
            create(T.LABEL, label_payload("bug"), "s2", item=2),  # name taken
            create(T.LABEL, label_payload("two"), "s3", item=3),
            update(T.LABEL, bug, label_payload("bug", "000000"), item=4, expected_hash=stale),
            update(T.LABEL, "404", label_payload("ghost"), item=5),
            create(T.LABEL, {**label_payload("Caps"), "color": "FFFFFF"}, "s6", item=6),
            create(T.LABEL, {**label_payload("extra"), "size": 3}, "s7", item=7),
            create(T.LABEL, label_payload("one"), "s8", item=8),  # taken in this batch
        ]
    )
    assert [r.item_id for r in results] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert statuses(results) == [
        ("ok", None),
        ("refused", "conflict"),
        ("ok", None),
        ("refused", "conflict"),
        ("refused", "not_found"),
        ("refused", "invalid"),
        ("refused", "invalid"),
        ("refused", "conflict"),
    ]
    assert "would be stored as 'ffffff'" in results[5].error.message
    labels = forge.reader.objects_of(T.LABEL)
    assert sorted(o.payload["name"] for o in labels) == ["bug", "one", "two"]
    assert forge.reader.get(T.LABEL, bug).payload["description"] == "changed meanwhile"
    assert [o.identity for o in labels] == ["1", "2", "3"]  # no gaps from refusals

    issue = forge.create_issue("taken", author="a", number=7)
    issue_payload = dict(forge.reader.get(T.ISSUE, issue).payload)
    results = forge.writer.apply_batch(
        [
            create(T.ISSUE, issue_payload, "i1", item=1, number=7),
            create(T.ISSUE, issue_payload, "i2", item=2, number=8),
        ]
    )
    assert statuses(results) == [("refused", "conflict"), ("ok", None)]
    assert "#7" in results[0].error.message

    results = forge.writer.apply_batch(
        [
            create(T.ISSUE_COMMENT, comment_payload("a"), "c1", item=1,
                   refs={"parent": ref(T.ISSUE, "999")}),
            create(T.ISSUE_COMMENT, comment_payload("b"), "c2", item=2,
                   refs={"parent": ref(T.ISSUE, None, "never-created")}),
            create(T.ISSUE_COMMENT, comment_payload("c"), "c3", item=3,
                   refs={"parent": ref(T.ISSUE, issue)}),
            create(T.ISSUE_COMMENT, comment_payload("d"), "c4", item=4),  # no parent at all
        ]
    )  # fmt: skip
    assert statuses(results) == [
        ("refused", "dependency_missing"),
        ("refused", "dependency_missing"),
        ("ok", None),
        ("refused", "invalid"),
    ]
    assert [o.payload["body"] for o in forge.reader.objects_of(T.ISSUE_COMMENT)] == ["c"]


def test_a_constraint_only_the_schema_catches_refuses_one_write(forge, monkeypatch):
    """When the checks miss a clash (a race), the schema's UNIQUE index refuses that write
    alone: the rows and ids of the other writes are unaffected."""
    forge.create_label("bug")
    monkeypatch.setattr(RowMutations, "check_unique", lambda *args: None)
    results = forge.writer.apply_batch(
        [
            create(T.LABEL, label_payload("a"), "s1", item=1),
            create(T.LABEL, label_payload("bug"), "s2", item=2),
            create(T.LABEL, label_payload("b"), "s3", item=3),
        ]
    )
    assert statuses(results) == [("ok", None), ("refused", "conflict"), ("ok", None)]
    assert [(o.identity, o.payload["name"]) for o in forge.reader.objects_of(T.LABEL)] == [
        ("1", "bug"),
        ("2", "a"),
        ("3", "b"),
    ]


def test_git_refs_and_unknown_actions_are_refused(forge):
    """Git refs never go through the forge store; noop is not a write."""
    results = forge.writer.apply_batch(
        [
            TargetWrite(1, Action.CREATE, T.GIT_REF, None, {"target": SHA_A}, "refs/heads/x"),
            TargetWrite(2, Action.NOOP, T.LABEL, "1", label_payload("x"), "m"),
        ]
    )
    assert statuses(results) == [("refused", "invalid"), ("refused", "invalid")]


def test_a_create_is_idempotent_by_marker(forge):
    """The same create twice (a retry after a lost response) makes one object."""
    write = create(T.LABEL, label_payload("bug"), "source-17")
    [first] = forge.writer.apply_batch([write])
    [second] = forge.writer.apply_batch([write])
    assert first.status is second.status is WriteStatus.OK
    assert first.target_identity == second.target_identity == "1"
    assert forge.reader.count(T.LABEL) == 1
    twice = forge.writer.apply_batch([create(T.LABEL, label_payload("ui"), "s-18")] * 2)
    assert [r.target_identity for r in twice] == ["2", "2"]
    assert forge.reader.find_by_markers(T.LABEL, ["source-17", "s-18", "nope"]) == {
        "source-17": "1",
        "s-18": "2",
    }
    assert forge.reader.find_by_markers(T.ISSUE, ["source-17"]) == {}


def test_marker_references_resolve_within_the_batch_in_any_order(forge):
    """A reply created in the same batch as the comment it replies to finds it by marker,
    even when the reply comes first."""
    pr = forge.create_pull_request(
        "p", author="a", base_ref="main", base_sha=SHA_A, head_ref="x", head_sha=SHA_B
    )
    review = forge.add_review(pr, state="COMMENTED", commit_id=SHA_B, author="a")
    parent = {"parent": ref(T.REVIEW, review)}
    results = forge.writer.apply_batch(
        [
            create(T.REVIEW_COMMENT, review_comment_payload("reply", reply=True), "src-2",
                   item=2, refs={**parent, "in_reply_to": ref(T.REVIEW_COMMENT, None, "src-1")}),
            create(T.REVIEW_COMMENT, review_comment_payload("thread", reply=False), "src-1",
                   item=1, refs=parent),
            create(T.REVIEW_COMMENT, review_comment_payload("orphan", reply=True), "src-3",
                   item=3, refs={**parent, "in_reply_to": ref(T.REVIEW_COMMENT, None, "nope")}),
        ]
    )  # fmt: skip
    assert statuses(results) == [("ok", None), ("ok", None), ("refused", "dependency_missing")]
    reply = forge.reader.get(T.REVIEW_COMMENT, results[0].target_identity)
    assert reply.refs["in_reply_to"] == ObjectRef(T.REVIEW_COMMENT, results[1].target_identity)
    # Mismatch between payload and refs: is_reply without in_reply_to is not canonical.
    [bad] = forge.writer.apply_batch(
        [create(T.REVIEW_COMMENT, review_comment_payload("x", reply=True), "src-4", refs=parent)]
    )
    assert (bad.status, bad.error.code) == (WriteStatus.REFUSED, "invalid")


def test_delete_cascades_to_every_descendant(forge, repo):
    """Deleting a pull request or a release removes everything under it, and nothing else."""
    made = populate(forge)
    pr = made[T.PULL_REQUEST]
    forge.add_comment(T.PULL_REQUEST, pr, "on the pr", author="a")
    forge.add_reaction(T.PULL_REQUEST, pr, "rocket", "u")
    forge.add_reaction(T.REVIEW_COMMENT, made[T.REVIEW_COMMENT], "eyes", "u")
    before = {t: forge.reader.count(t) for t in T}
    [result] = forge.writer.apply_batch([delete(T.PULL_REQUEST, pr)])
    assert result.status is WriteStatus.OK
    after = {t: forge.reader.count(t) for t in T}
    assert after[T.PULL_REQUEST] == before[T.PULL_REQUEST] - 1
    assert after[T.REVIEW] == after[T.REVIEW_COMMENT] == after[T.REVIEW_REQUEST] == 0
    assert after[T.ISSUE_COMMENT] == before[T.ISSUE_COMMENT] - 1  # the issue's stays
    assert after[T.REACTION] == 1  # the reaction on the issue comment stays
    assert after[T.ISSUE] == before[T.ISSUE]

    asset = forge.reader.get(T.RELEASE_ASSET, made[T.RELEASE_ASSET])
    blob = repo / "reposync" / "assets" / asset.payload["sha256"]
    assert blob.exists()
    forge.delete(T.RELEASE, made[T.RELEASE])
    assert forge.reader.count(T.RELEASE_ASSET) == 0
    assert not blob.exists()

    forge.delete(T.ISSUE, made[T.ISSUE])
    assert forge.reader.count(T.ISSUE_COMMENT) == forge.reader.count(T.REACTION) == 0
    assert forge.reader.count() == forge.reader.count(T.LABEL) + forge.reader.count(T.MILESTONE)


# -- atomicity -----------------------------------------------------------------------------


def test_a_fault_before_commit_leaves_nothing_of_the_batch(forge, repo, no_faults):
    """With a failure injected right before COMMIT, no object, marker, number or id survives."""
    forge.create_label("existing")
    no_faults.setenv(faults.ENV, "local_forge.before_commit:fail:object_type=label")
    faults.reset()
    writes = [create(T.LABEL, label_payload(f"l{n}"), f"s{n}", item=n) for n in range(5)]
    writes.append(update(T.LABEL, "1", label_payload("existing", "123456"), item=9))
    with pytest.raises(faults.InjectedFault):
        forge.writer.apply_batch(writes)
    assert [o.payload["name"] for o in forge.reader.objects_of(T.LABEL)] == ["existing"]
    assert forge.reader.get(T.LABEL, "1").revision == "1"
    assert forge.reader.find_by_markers(T.LABEL, [f"s{n}" for n in range(5)]) == {}
    no_faults.delenv(faults.ENV)
    faults.reset()
    results = forge.writer.apply_batch(writes)
    assert [r.target_identity for r in results] == ["2", "3", "4", "5", "6", "1"]


def test_a_fault_after_commit_is_recovered_by_markers(forge, no_faults):
    """Committed but unreported: retrying the batch finds every object, creates none twice."""
    no_faults.setenv(faults.ENV, "local_forge.after_commit:fail:times=1")
    faults.reset()
    writes = [create(T.LABEL, label_payload(f"l{n}"), f"s{n}", item=n) for n in range(3)]
    with pytest.raises(faults.InjectedFault):
        forge.writer.apply_batch(writes)
    assert forge.reader.count(T.LABEL) == 3
    retried = forge.writer.apply_batch(writes)
    assert [r.target_identity for r in retried] == ["1", "2", "3"]
    assert forge.reader.count(T.LABEL) == 3


CRASH_SCRIPT = textwrap.dedent(
    """
    import sys
    from reposync.providers.base import TargetWrite
    from reposync.providers.local.forge import LocalForge
    from reposync.sync.vocabulary import Action, ObjectType

    forge = LocalForge(sys.argv[1])
    writes = [
        TargetWrite(n, Action.UPDATE, ObjectType.LABEL, o.identity,
                    {**o.payload, "description": "new"}, o.identity)
        for n, o in enumerate(forge.reader.objects_of(ObjectType.LABEL))
    ]
    forge.store.trace(lambda sql: print(sql.split()[0], flush=True))
    forge.writer.apply_batch(writes)
    print("DONE", flush=True)
    """
)


@pytest.mark.parametrize(
    ("fault_point", "expected"),
    [("local_forge.before_commit", ""), ("local_forge.after_commit", "new")],
)
def test_a_killed_writer_leaves_every_object_old_or_new(repo, fault_point, expected):
    """SIGKILL while a 200-update batch waits before (after) COMMIT: all old (all new)."""
    seed = ForgeAuthoring(LocalForge(repo))
    seed.create_many(T.LABEL, [{"name": f"label {n}"} for n in range(200)])
    seed.store.close()
    env = {**os.environ, faults.ENV: f"{fault_point}:sleep=60"}
    process = subprocess.Popen(
        [sys.executable, "-c", CRASH_SCRIPT, str(repo)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        releases = 0
        wanted = 200 if fault_point.endswith("before_commit") else None
        for line in process.stdout:
            releases += line.startswith("RELEASE")
            if wanted is not None and releases == wanted:
                break
            if wanted is None and line.startswith("COMMIT"):
                break
        time.sleep(0.3)  # now inside the fault point's sleep
        process.send_signal(signal.SIGKILL)
        rest = process.stdout.read()
    finally:
        process.kill()
        process.wait(10)
    assert process.returncode == -signal.SIGKILL
    assert "DONE" not in rest
    after = LocalForge(repo)
    described = {o.payload["description"] for o in after.reader.objects_of(T.LABEL)}
    revisions = {o.revision for o in after.reader.objects_of(T.LABEL)}
    assert described == {expected}
    assert revisions == ({"1"} if expected == "" else {"2"})
    assert after.reader.count(T.LABEL) == 200
    after.store.close()


def test_a_locked_store_raises_provider_unavailable_and_writes_nothing(repo):
    """Another writer holding the lock beyond the busy timeout: a clear error, no partial batch."""
    forge = ForgeAuthoring(LocalForge(repo, busy_timeout=0.05))
    forge.create_label("existing")
    blocker = sqlite3.connect(repo / "reposync" / "forge.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(ProviderUnavailable, match="locked"):
            forge.writer.apply_batch([create(T.LABEL, label_payload("new"), "s1")])
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert [o.payload["name"] for o in forge.reader.objects_of(T.LABEL)] == ["existing"]
    assert forge.writer.apply_batch([create(T.LABEL, label_payload("new"), "s1")])[0].status == "ok"
    forge.store.close()


# -- release assets ------------------------------------------------------------------------


def test_asset_bytes_are_streamed_in_chunks_and_verified(forge, repo):
    """Bytes are read in bounded chunks, stored by sha256, and refused when they disagree."""
    release = forge.create_release("v1", author="a")
    data = os.urandom(3 * ASSET_CHUNK + 123)
    stream = ChunkRecorder(data)
    parent = {"parent": ref(T.RELEASE, release)}
    [ok] = forge.writer.apply_batch(
        [create(T.RELEASE_ASSET, asset_payload("big.bin", data), "a1", refs=parent,
                content=lambda: stream)]
    )  # fmt: skip
    assert ok.status is WriteStatus.OK
    assert stream.reads
    assert max(stream.reads) <= ASSET_CHUNK
    assert stream.closed
    with forge.assets.open_asset(ok.target_identity) as stored:
        assert stored.read() == data
    assets = repo / "reposync" / "assets"
    assert (assets / hashlib.sha256(data).hexdigest()).is_file()

    lying_sha = {**asset_payload("bad.bin", b"x"), "sha256": "0" * 64}
    lying_size = {**asset_payload("bad2.bin", b"xyz"), "size": 4}
    results = forge.writer.apply_batch(
        [
            create(T.RELEASE_ASSET, lying_sha, "a2", item=2, refs=parent,
                   content=lambda: io.BytesIO(b"x")),
            create(T.RELEASE_ASSET, lying_size, "a3", item=3, refs=parent,
                   content=lambda: io.BytesIO(b"xyz")),
            create(T.RELEASE_ASSET, asset_payload("none.bin", b""), "a4", item=4, refs=parent),
        ]
    )  # fmt: skip
    assert statuses(results) == [("refused", "invalid")] * 3
    assert "sha256" in results[0].error.message
    assert sorted(p.name for p in assets.iterdir()) == [hashlib.sha256(data).hexdigest()]
    assert forge.reader.count(T.RELEASE_ASSET) == 1


def test_equal_asset_bytes_share_one_file_until_the_last_reference_goes(forge, repo):
    """Content addressing: one file per content, removed with its last asset only."""
    one = forge.create_release("v1", author="a")
    two = forge.create_release("v2", author="a")
    first = forge.upload_asset(one, "same.txt", b"identical")
    second = forge.upload_asset(two, "same.txt", b"identical")
    blob = repo / "reposync" / "assets" / hashlib.sha256(b"identical").hexdigest()
    forge.delete(T.RELEASE_ASSET, first)
    assert blob.exists()
    with forge.assets.open_asset(second) as stream:
        assert stream.read() == b"identical"
    forge.delete(T.RELEASE_ASSET, second)
    assert not blob.exists()
    (repo / "reposync" / "assets" / ("f" * 64)).write_bytes(b"orphan of a crash")
    assert forge.assets.collect_garbage() == 1
    assert list((repo / "reposync" / "assets").iterdir()) == []


# -- awkward data --------------------------------------------------------------------------


def test_awkward_names_and_big_bodies_round_trip(forge):
    """Emoji, spaces, tabs and right-to-left text in label names; a 64 KiB issue body."""
    names = ["good first issue", "🐛 bug", "priority: high 🔥", "ünïcödé", "שלום", "a\tb"]
    identities = [forge.create_label(name) for name in names]
    for identity, name in zip(identities, names, strict=True):
        obj = forge.reader.get(T.LABEL, identity)
        assert (obj.payload["name"], obj.unique_key, obj.object_key) == (
            name,
            name,
            f"label {name}",
        )
    entries = {e.unique_key: e for e in forge.reader.index([T.LABEL])}
    assert set(entries) == set(names)
    body = ("0123456789abcdef" * 4096)[:-3] + "😀"  # 64 KiB, ending in a 4-byte character
    issue = forge.create_issue("big", author="a", body=body, labels=names)
    read = forge.reader.get(T.ISSUE, issue)
    assert read.payload["body"] == body
    assert read.payload["labels"] == sorted(names)
    [entry] = list(forge.reader.index([T.ISSUE]))
    assert entry.size > 64 * 1024
    assert entry == read.index_entry()


def test_two_thousand_comments_on_one_issue(forge):
    """2,000 comments (bulk and through apply_batch) read back and index correctly."""
    issue = forge.create_issue("popular", author="a")
    bulk = forge.create_many(
        T.ISSUE_COMMENT,
        [
            {"body": f"comment {n}", "author": f"user{n % 7}", "created_at": WHEN}
            for n in range(1500)
        ],
        parent=(T.ISSUE, issue),
    )
    writes = [
        create(T.ISSUE_COMMENT, comment_payload(f"batched {n}"), f"m{n}", item=n,
               refs={"parent": ref(T.ISSUE, issue)})
        for n in range(500)
    ]  # fmt: skip
    results = forge.writer.apply_batch(writes)
    assert {r.status for r in results} == {WriteStatus.OK}
    assert forge.reader.count(T.ISSUE_COMMENT) == 2000
    identities = bulk + [r.target_identity for r in results]
    assert identities == [str(n) for n in range(1, 2001)]
    read = forge.reader.read_batch(T.ISSUE_COMMENT, identities)
    entries = {e.identity: e for e in forge.reader.index([T.ISSUE_COMMENT])}
    assert all(read[i].index_entry() == entries[i] for i in identities)
    assert read["1501"].payload["body"] == "batched 0"
    forge.delete(T.ISSUE, issue)
    assert forge.reader.count() == 0


def test_create_many_is_all_or_nothing(forge):
    """A clash anywhere in a bulk create refuses all of it; numbers continue after it."""
    forge.create_issue("first", author="a")
    with pytest.raises(Conflict):
        forge.create_many(
            T.ISSUE, [{"title": "x", "author": "a"}, {"title": "y", "author": "a", "number": 1}]
        )
    assert forge.reader.count(T.ISSUE) == 1
    made = forge.create_many(T.ISSUE, [{"title": "x", "author": "a", "number": 9},
                                       {"title": "y", "author": "a"}])  # fmt: skip
    assert [forge.reader.get(T.ISSUE, i).number for i in made] == [9, 2]
    assert forge.reader.get(T.ISSUE, forge.create_issue("z", author="a")).number == 10
