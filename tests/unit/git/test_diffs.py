"""The files a branch movement changed, by native git (real repositories)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reposync.git.diffs import ChangedFile, changed_files, parse_name_status
from tests.gitrepo import commit_snapshot, init_bare

BRANCH = "refs/heads/main"
#: Long enough that a renamed copy is recognized as the same file.
TEXT = b"".join(
    b"line %d of a file long enough to be recognized when renamed\n" % i for i in range(40)
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_bare(tmp_path / "r.git")


def test_added_modified_deleted_and_renamed_files(repo):
    """Each change kind, with a rename's previous path; nothing else listed."""
    old = commit_snapshot(
        repo, BRANCH, {b"kept": b"same\n", b"edited": b"one\n", b"gone": b"bye\n", b"old": TEXT}
    )
    new = commit_snapshot(
        repo, BRANCH, {b"kept": b"same\n", b"edited": b"two\n", b"new": TEXT, b"fresh": b"hi\n"}
    )

    found = changed_files(str(repo), old, new)

    assert found is not None
    assert found.truncated is False
    assert sorted(found.files, key=lambda f: f.path) == [
        ChangedFile("edited", "modified"),
        ChangedFile("fresh", "added"),
        ChangedFile("gone", "deleted"),
        ChangedFile("new", "renamed", previous_path="old"),
    ]


def test_the_list_is_bounded_and_says_so(repo):
    """More files than the limit: exactly the limit listed, truncated; at the limit: not."""
    old = commit_snapshot(repo, BRANCH, {b"base": b"x\n"})
    new = commit_snapshot(
        repo, BRANCH, {b"base": b"x\n", **{b"f%03d" % i: b"%d\n" % i for i in range(12)}}
    )

    cut = changed_files(str(repo), old, new, limit=10)
    whole = changed_files(str(repo), old, new, limit=12)

    assert cut is not None
    assert (len(cut.files), cut.truncated) == (10, True)
    assert whole is not None
    assert (len(whole.files), whole.truncated) == (12, False)


def test_a_path_that_is_not_utf8_is_escaped_not_dropped(repo):
    """Git paths are bytes: a Latin-1 name reads with a backslash escape."""
    old = commit_snapshot(repo, BRANCH, {b"a": b"1\n"})
    new = commit_snapshot(repo, BRANCH, {b"a": b"1\n", b"caf\xe9.txt": b"2\n"})

    found = changed_files(str(repo), old, new)

    assert found is not None
    assert [f.path for f in found.files] == ["caf\\xe9.txt"]


def test_what_the_repository_cannot_compare_is_none(repo, tmp_path):
    """A revision it does not hold, the all-zero id (a creation or deletion), or something
    that is not an object id (never handed to git as an option): None."""
    old = commit_snapshot(repo, BRANCH, {b"a": b"1\n"})
    new = commit_snapshot(repo, BRANCH, {b"a": b"2\n"})
    elsewhere = commit_snapshot(init_bare(tmp_path / "other.git"), BRANCH, {b"z": b"9\n"})

    assert changed_files(str(repo), old, elsewhere) is None
    assert changed_files(str(repo), "0" * 40, new) is None
    assert changed_files(str(repo), old, "0" * 40) is None
    assert changed_files(str(repo), "--output=/tmp/x", new) is None
    assert changed_files(str(repo), "HEAD", new) is None


def test_the_parser_reads_renames_copies_and_type_changes():
    """-z fields: R and C carry two paths (C: the new one is added), T is a modification."""
    fields = iter([b"R087", b"a", b"b", b"C100", b"c", b"d", b"T", b"e", b"X", b"f"])

    assert list(parse_name_status(fields)) == [
        ChangedFile("b", "renamed", previous_path="a"),
        ChangedFile("d", "added"),
        ChangedFile("e", "modified"),
        ChangedFile("f", "modified"),
    ]
