"""The local forge's bulk path: a batch of creates checked in memory, inserted at once.

Every test here would fail if the bulk path stored other rows, or gave other results,
than writing the same batch one write at a time.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reposync.errors import ProviderUnavailable
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
def traced(forge: ForgeAuthoring) -> Iterator[list[str]]:
    statements: list[str] = []
    forge.store.trace(statements.append)
    try:
        yield statements
    finally:
        forge.store.trace(None)


@contextmanager
def one_by_one() -> Iterator[None]:
    """The batch writer at its plainest, the reference to compare with: every create its
    own INSERT, every marker and reference looked up in the database when it is needed."""
    start = writes_module.BatchWriter._start

    def untrusting(self: Any, *args: Any, **kwargs: Any) -> Any:
        batch = start(self, *args, **kwargs)
        batch.trusted = False
        return batch

    with (
        mock.patch.object(writes_module, "_bulk_eligible", return_value=False),
        mock.patch.object(writes_module.BatchWriter, "_start", untrusting),
    ):
        yield


def test_a_batch_of_creates_is_one_executemany_with_one_lookup_per_type(forge):
    """Creates referring to existing issues and to each other are inserted together, and
    their references cost one query per type, not one per write."""
    first = forge.create_issue("one", author="a")
    second = forge.create_issue("two", author="a")
    writes = [
        comment(f"c{n}", f"c{n}", by_identity(T.ISSUE, first if n % 2 else second), item=n)
        for n in range(40)
    ]
    with traced(forge) as statements:
        results = forge.writer.apply_batch(writes)
    assert all(r.status is WriteStatus.OK for r in results)
    assert "SAVEPOINT bulk" in statements
    assert "RELEASE bulk" in statements
    assert "ROLLBACK TO bulk" not in statements
    lookups = [s for s in statements if s.startswith("SELECT")]
    assert len(lookups) <= 4  # parents by identity, markers of the creates, two sequences
    made = forge.reader.read_batch(T.ISSUE_COMMENT, [r.target_identity for r in results])
    assert [made[r.target_identity].refs["parent"].identity for r in results] == [
        first if n % 2 else second for n in range(40)
    ]


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
    """The schema refuses a row of the one insert; the batch runs again one by one and
    only the creates whose name is taken are refused, without gaps in the ids."""
    forge.create_label("bug")
    before = forge.store.writes_performed
    with traced(forge) as statements:
        results = forge.writer.apply_batch(
            [
                label("a", "s1", item=1),
                label("bug", "s2", item=2),
                label("b", "s3", item=3),
                label("a", "s4", item=4),
            ]
        )
    assert "ROLLBACK TO bulk" in statements
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
    """A retried create in a bulk batch is never a duplicate, and a reference by that
    marker resolves to the object the first attempt made."""
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


def test_a_store_failure_in_the_one_insert_commits_nothing(forge):
    """A failure of the storage itself (not a constraint) while inserting the rows raises
    ProviderUnavailable and leaves the store as it was."""
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


# -- the bulk path against writing one by one, over random batches --------------------------

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
def test_the_bulk_path_stores_and_answers_what_one_by_one_does(batch):
    """Over random batches of creates (taken keys and numbers, retried markers, references
    to objects before, after and outside the batch, non-canonical payloads), the bulk path
    gives the same results, rows, sequences and write counts as one write at a time."""
    batch = [
        TargetWrite(n, w.action, w.object_type, None, w.payload, w.marker, w.number, w.refs)
        for n, w in enumerate(batch)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        bulk, single = _forge(Path(tmp), "bulk.git"), _forge(Path(tmp), "single.git")
        try:
            bulk_results = bulk.writer.apply_batch(batch)
            with one_by_one():
                single_results = single.writer.apply_batch(batch)
            assert outcomes(bulk_results) == outcomes(single_results)
            assert stored_rows(bulk) == stored_rows(single)
            assert bulk.store.writes_performed == single.store.writes_performed
        finally:
            bulk.store.close()
            single.store.close()


def test_the_property_meets_each_kind_of_batch():
    """The random batches above do reach the bulk path's three outcomes: all inserted at
    once, a row refused by the schema (done again one by one), and references resolved
    within the batch."""
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for n, batch in enumerate(
            [
                [label("c", "m2"), comment("hi", "m3", by_marker(T.ISSUE, "i1")),
                 issue("x", "i1")],
                [label("bug", "m2"), label("a", "m3")],
            ]
        ):  # fmt: skip
            made = _forge(Path(tmp), f"{n}.git")
            with traced(made) as statements:
                made.writer.apply_batch(batch)
            seen.update(s for s in statements if s.endswith(" bulk"))
            made.store.close()
    assert seen == {"SAVEPOINT bulk", "RELEASE bulk", "ROLLBACK TO bulk"}


def test_sqlite_reports_a_unique_clash_of_executemany_as_an_integrity_error(tmp_path):
    """The bulk path's fall-back rests on this: a refused row of ``executemany`` is an
    ``IntegrityError`` and the rows before it stay until rolled back to a savepoint."""
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE t (k TEXT UNIQUE)")
    conn.execute("BEGIN")
    conn.execute("SAVEPOINT bulk")
    with pytest.raises(sqlite3.IntegrityError):
        conn.executemany("INSERT INTO t VALUES (?)", [("a",), ("b",), ("a",)])
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    conn.execute("ROLLBACK TO bulk")
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    conn.execute("ROLLBACK")
    conn.close()
