"""The local forge's batches of creates: references within a batch, refusals one by one,
retried markers, store failures, and the batch's caches against the database.

The writer answers lookups from what the batch already learnt while only creates run;
the property below holds it to what looking everything up in the database gives.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reposync.errors import ProviderError, ProviderUnavailable
from reposync.providers.base import TargetRef, TargetWrite, WriteStatus
from reposync.providers.local import writes as writes_module
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.providers.local.forge import LocalForge
from reposync.sync import objects
from reposync.sync.canonical import ObjectRef
from reposync.sync.vocabulary import Action, ObjectType
from tests.gitrepo import init_bare

T = ObjectType
WHEN = "2024-05-01T12:00:00Z"


@pytest.fixture
def forge(tmp_path: Path) -> Iterator[ForgeAuthoring]:
    authoring = ForgeAuthoring(LocalForge(init_bare(tmp_path / "repo.git")))
    yield authoring
    authoring.store.close()


def label(name: str, marker: str, *, item: int = 0, color: str = "ededed") -> TargetWrite:
    payload = dict(objects.label("x", "1", name=name, color="ededed", description="").payload)
    payload["color"] = color  # "FFFFFF" is not canonical: refused as invalid
    return TargetWrite(item, Action.CREATE, T.LABEL, None, payload, marker)


def issue(title: str, marker: str, *, item: int = 0, number: int | None = None) -> TargetWrite:
    built = objects.issue("x", "1", number=1, title=title, author="a", created_at=WHEN)
    return TargetWrite(item, Action.CREATE, T.ISSUE, None, dict(built.payload), marker, number)


def comment(body: str, marker: str, parent: TargetRef | None, *, item: int = 0) -> TargetWrite:
    built = objects.issue_comment(
        "x", "1", parent=ObjectRef(T.ISSUE, "x"), parent_key=None, body=body, author="c",
        created_at=WHEN,
    )  # fmt: skip
    refs = {} if parent is None else {"parent": parent}
    return TargetWrite(item, Action.CREATE, T.ISSUE_COMMENT, None, dict(built.payload), marker,
                       refs=refs)  # fmt: skip


def reaction(user: str, marker: str, parent: TargetRef, *, item: int = 0) -> TargetWrite:
    built = objects.reaction(
        "x", "1", parent=ObjectRef(parent.object_type, "x"), parent_key=None, content="+1",
        user=user,
    )  # fmt: skip
    return TargetWrite(item, Action.CREATE, T.REACTION, None, dict(built.payload), marker,
                       refs={"parent": parent})  # fmt: skip


def by_marker(object_type: ObjectType, marker: str) -> TargetRef:
    return TargetRef(object_type, None, marker)


def by_identity(object_type: ObjectType, identity: str) -> TargetRef:
    return TargetRef(object_type, identity, "")


def outcomes(results: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.item_id, r.status.value, r.target_identity, r.error and (r.error.code, r.error.message))
        for r in results
    ]


def stored_rows(forge: ForgeAuthoring) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every column of every row but the times, and the sequences."""
    conn = forge.store.writer()
    columns = [c[1] for c in conn.execute("PRAGMA table_info(objects)")]
    kept = ", ".join(c for c in columns if c not in ("created_at", "updated_at"))
    rows = conn.execute(f"SELECT {kept} FROM objects ORDER BY object_type, id").fetchall()
    return rows, conn.execute("SELECT * FROM sequences ORDER BY name").fetchall()


@contextmanager
def untrusting() -> Iterator[None]:
    """The batch writer at its plainest, the reference to compare with: every marker and
    every reference looked up in the database when it is needed, nothing remembered."""
    batch_type = writes_module._Batch

    def plain(*args: Any, **kwargs: Any) -> Any:
        batch = batch_type(*args, **kwargs)
        batch.trusted = False
        return batch

    with mock.patch.object(writes_module, "_Batch", plain):
        yield


def test_creates_referring_to_later_creates_of_the_batch_get_their_keys(forge):
    """A reaction on a comment on an issue, all created in one batch in reverse order,
    hangs under the right parents and embeds the issue's number in its key."""
    results = forge.writer.apply_batch(
        [
            reaction("u", "r1", by_marker(T.ISSUE_COMMENT, "c1"), item=1),
            comment("hello", "c1", by_marker(T.ISSUE, "i1"), item=2),
            issue("first", "i1", item=3, number=12),
        ]
    )
    assert [r.status for r in results] == [WriteStatus.OK] * 3
    made_reaction, made_comment, made_issue = (r.target_identity for r in results)
    got_comment = forge.reader.get(T.ISSUE_COMMENT, made_comment)
    got_reaction = forge.reader.get(T.REACTION, made_reaction)
    assert got_comment.refs["parent"] == ObjectRef(T.ISSUE, made_issue)
    assert got_comment.unique_key.startswith("#12:")
    assert got_reaction.refs["parent"] == ObjectRef(T.ISSUE_COMMENT, made_comment)
    assert got_reaction.unique_key == f"{got_comment.unique_key}:u +1"


def test_a_key_taken_in_the_store_or_the_batch_refuses_that_create_alone(forge):
    """Only the creates whose name is taken (before or earlier in the batch) are
    refused; the others commit, without gaps in the ids."""
    forge.create_label("bug")
    before = forge.store.writes_performed
    results = forge.writer.apply_batch(
        [
            label("a", "s1", item=1),
            label("bug", "s2", item=2),
            label("b", "s3", item=3),
            label("a", "s4", item=4),
        ]
    )
    assert [(r.status.value, r.error and r.error.code) for r in results] == [
        ("ok", None),
        ("refused", "conflict"),
        ("ok", None),
        ("refused", "conflict"),
    ]
    assert [(o.identity, o.payload["name"]) for o in forge.reader.objects_of(T.LABEL)] == [
        ("1", "bug"),
        ("2", "a"),
        ("3", "b"),
    ]
    assert forge.store.writes_performed == before + 2


def test_a_marker_already_stored_returns_its_object_and_writes_nothing(forge):
    """A retried create is never a duplicate, and a reference by its marker in the same
    batch resolves to the object the first attempt made."""
    [first] = forge.writer.apply_batch([issue("once", "i1", number=3)])
    before = forge.store.writes_performed
    results = forge.writer.apply_batch(
        [issue("once", "i1", item=1, number=3), comment("x", "c1", by_marker(T.ISSUE, "i1"))]
    )
    assert results[0].target_identity == first.target_identity
    assert forge.reader.count(T.ISSUE) == 1
    assert forge.store.writes_performed == before + 1
    made = forge.reader.get(T.ISSUE_COMMENT, results[1].target_identity)
    assert made.refs["parent"] == ObjectRef(T.ISSUE, first.target_identity)


def test_a_store_failure_while_inserting_commits_nothing(forge):
    """A failure of the storage itself (not a constraint) while inserting a row raises
    ProviderUnavailable and leaves the store as it was, the rows before it included."""
    forge.create_label("kept")
    before = forge.store.writes_performed
    conn = forge.store.writer()
    conn.execute(
        "CREATE TRIGGER broken AFTER INSERT ON objects WHEN NEW.payload LIKE '%boom%' "
        "BEGIN INSERT INTO no_such_table VALUES (1); END"
    )
    with pytest.raises(ProviderUnavailable):
        forge.writer.apply_batch([label("fine", "s1"), label("boom", "s2")])
    assert [o.payload["name"] for o in forge.reader.objects_of(T.LABEL)] == ["kept"]
    assert forge.reader.find_by_markers(T.LABEL, ["s1", "s2"]) == {}
    assert forge.store.writes_performed == before


# -- the batch's caches against the database, over random batches --------------------------

MARKERS = st.sampled_from(["m1", "m2", "m3", "m4", "m5"])
ISSUE_REFS = st.one_of(
    st.builds(by_marker, st.just(T.ISSUE), st.sampled_from(["i0", "i1", "i2", "i3", "nope"])),
    st.builds(by_identity, st.just(T.ISSUE), st.sampled_from(["1", "2", "99"])),
)
WRITES = st.one_of(
    st.builds(
        label,
        st.sampled_from(["bug", "a", "b"]),
        MARKERS,
        color=st.sampled_from(["ededed", "ededed", "FFFFFF"]),
    ),
    st.builds(
        issue,
        st.sampled_from(["x", "y"]),
        st.sampled_from(["i0", "i1", "i2", "i3"]),
        number=st.sampled_from([None, None, 7, 8, 9]),
    ),
    st.builds(comment, st.sampled_from(["hi", "ho"]), MARKERS, st.none() | ISSUE_REFS),
    st.builds(
        reaction,
        st.sampled_from(["u", "v"]),
        MARKERS,
        ISSUE_REFS | st.builds(by_marker, st.just(T.ISSUE_COMMENT), MARKERS),
    ),
)

#: What both stores hold before the random batch: a label, issue #7 and a comment.
SEED = [
    label("bug", "m1"),
    issue("seed", "i0", number=7),
    comment("seed", "m1", by_marker(T.ISSUE, "i0")),
]


def _forge(base: Path, name: str) -> ForgeAuthoring:
    made = ForgeAuthoring(LocalForge(init_bare(base / name)))
    made.writer.apply_batch(SEED)
    return made


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(WRITES, min_size=1, max_size=12))
def test_the_batch_caches_answer_what_the_database_would(batch):
    """Over random batches of creates (taken keys and numbers, retried markers, references
    to objects before, after and outside the batch, non-canonical payloads), the writer
    with its caches gives the same results, rows, sequences and write counts as one that
    looks everything up in the database."""
    batch = [
        TargetWrite(n, w.action, w.object_type, None, w.payload, w.marker, w.number, w.refs)
        for n, w in enumerate(batch)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        cached, plain = _forge(Path(tmp), "cached.git"), _forge(Path(tmp), "plain.git")
        try:
            cached_results = cached.writer.apply_batch(batch)
            with untrusting():
                plain_results = plain.writer.apply_batch(batch)
            assert outcomes(cached_results) == outcomes(plain_results)
            assert stored_rows(cached) == stored_rows(plain)
            assert cached.store.writes_performed == plain.store.writes_performed
        finally:
            cached.store.close()
            plain.store.close()


def test_a_stored_payload_that_is_no_object_reads_as_a_provider_error(forge):
    """A row whose payload is valid JSON but not an object is reported as corrupt, the
    same error as unreadable JSON, not a crash of whoever reads it."""
    made = forge.create_label("bug")
    forge.store.writer().execute("UPDATE objects SET payload = '[1]' WHERE id = ?", (made,))
    with pytest.raises(ProviderError, match="corrupt"):
        forge.reader.get(T.LABEL, made)
