"""The chaos checks themselves: each kind of damage is counted where it should be.

A check that cannot fail proves nothing, so every counter of ``verify`` is shown to
fire on a crafted target (no servers needed).
"""

from __future__ import annotations

from pathlib import Path

from tests.chaos.world import Ledger, Row, SourceState, TargetState, verify

REPO = "repo-1"


def src(kind: str, identity: str, chash: str, number: int | None = None) -> Row:
    return Row(kind, identity, number, f"key {identity}", chash, 1, None)


def dst(
    kind: str, identity: str, source_id: str | None, chash: str, revision: int = 1, key: str = ""
) -> Row:
    marker = None if source_id is None else f"reposync:{REPO}:{kind}:{source_id}"
    return Row(kind, identity, None, key or f"key {source_id}", chash, revision, marker)


def source() -> SourceState:
    return SourceState(
        {"refs/heads/main": "a" * 40, "refs/tags/v1": "b" * 40},
        {
            ("label", "1"): src("label", "1", "h1"),
            ("issue_comment", "7"): src("issue_comment", "7", "h7"),
        },
    )


def check(target: TargetState, ledger: Ledger | None = None, tmp: Path | None = None):
    if ledger is None:
        ledger = Ledger()
        ledger.observe(source())
    return verify(source(), target, ledger, REPO, tmp or Path("/nonexistent"))


def good_target() -> TargetState:
    return TargetState(
        {"refs/heads/main": "a" * 40, "refs/tags/v1": "b" * 40},
        {"refs/heads/main": 1, "refs/tags/v1": 1},
        [dst("label", "10", "1", "h1"), dst("issue_comment", "70", "7", "h7")],
    )


def test_an_exact_copy_has_no_problem():
    verdict = check(good_target())
    assert verdict.problems() == []
    assert set(verdict.paired) == {("label", "1"), ("issue_comment", "7")}


def test_a_missing_object_and_a_missing_ref_are_lost():
    target = good_target()
    target.rows.pop()
    del target.refs["refs/tags/v1"]
    verdict = check(target)
    assert verdict.lost == ["refs/tags/v1", "issue_comment 7"]
    assert not verdict.canonical_equal


def test_a_second_copy_is_duplicated_and_a_deleted_one_undeleted():
    target = good_target()
    target.rows.append(dst("issue_comment", "71", None, "h7", key="key 7"))  # a copy, no marker
    target.rows.append(dst("issue_comment", "72", "99", "h99"))  # its source is gone
    target.refs["refs/heads/gone"] = "c" * 40
    verdict = check(target)
    assert verdict.duplicated == ["issue_comment 71 (marker None)"]
    assert verdict.undeleted == [
        "refs/heads/gone",
        f"issue_comment 72 (marker reposync:{REPO}:issue_comment:99)",
    ]


def test_a_second_write_shows_in_the_revision_and_in_the_reflog():
    target = good_target()
    target.rows[0] = dst("label", "10", "1", "h1", revision=2)
    target.reflogs["refs/heads/main"] = 2
    verdict = check(target)
    assert len(verdict.written_twice) == 2


def test_the_ledger_allows_one_write_per_change_it_saw():
    ledger = Ledger()
    ledger.observe(source())
    changed = source()
    changed.refs["refs/heads/main"] = "d" * 40
    changed.objects[("label", "1")] = src("label", "1", "h1b")
    ledger.observe(changed)
    ledger.observe(changed)  # no change: no further write allowed
    target = good_target()
    target.refs["refs/heads/main"] = "d" * 40
    target.reflogs["refs/heads/main"] = 2
    target.rows[0] = dst("label", "10", "1", "h1b", revision=2)
    assert verify(changed, target, ledger, REPO, Path("/nonexistent")).problems() == []
    target.reflogs["refs/heads/main"] = 3
    assert len(verify(changed, target, ledger, REPO, Path("/nonexistent")).written_twice) == 1


def test_content_that_differs_is_diverged():
    target = good_target()
    target.rows[1] = dst("issue_comment", "70", "7", "other")
    target.refs["refs/heads/main"] = "e" * 40
    verdict = check(target)
    assert len(verdict.diverged) == 2
