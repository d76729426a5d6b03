"""Pushes kept under a pack-size limit: real git on both ends, the target enforcing the
limit itself (``receive.maxInputSize``, what GitHub's receive-pack applies)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reposync.git.packsize import PackEstimator, effective_limit, store_bytes
from reposync.git.process import run_git
from reposync.git.transport import RefUpdate
from reposync.git.transport import push as push_from
from reposync.git.workspace import PushWorkspace
from tests.gitrepo import commit_blob, generate, init_bare, refs

#: Each commit adds one 10 KB incompressible file; the limit holds about four of them.
FILE = 10_000
LIMIT = 45_000


def limited_target(path: Path, limit: int) -> Path:
    """A bare repository that refuses any pack over ``limit`` bytes, as GitHub does."""
    init_bare(path)
    subprocess.run(
        ["git", "--git-dir", str(path), "config", "receive.maxInputSize", str(limit)], check=True
    )
    return path


def push(source: Path, target: Path, updates: list[RefUpdate], limit: int | None):
    workspace = PushWorkspace(source.parent / "workspace.git", f"{source}/objects")
    return push_from(workspace, str(target), updates, max_pack_bytes=limit)


@pytest.fixture
def source(tmp_path):
    """12 commits of 10 KB each on main; branches and tags along the history."""
    return generate(
        tmp_path / "src.git",
        commits=12,
        branches=5,
        tags=3,
        file_bytes=FILE,
        incompressible=True,
    )


def creates(path: Path) -> list[RefUpdate]:
    return [RefUpdate(name, oid, None) for name, oid in sorted(refs(path).items())]


def test_effective_limit_is_the_forge_limit_lowered_by_the_setting():
    """0 keeps the forge's own limit; a setting lowers it or sets one where none is."""
    gib2 = 2 * 1024**3
    assert effective_limit(gib2, 0) == gib2
    assert effective_limit(gib2, 1000) == 1000
    assert effective_limit(1000, gib2) == 1000
    assert effective_limit(None, 0) is None
    assert effective_limit(None, 5000) == 5000


def test_a_group_over_the_limit_is_split_by_history_and_every_ref_lands(source, tmp_path):
    """The whole history (~120 KB) is over the limit: it goes in several pushes, older
    history first, each under the limit the target enforces, and every ref lands."""
    target = limited_target(tmp_path / "dst.git", LIMIT)
    assert store_bytes([f"{source}/objects"]) > LIMIT

    outcome = push(source, target, creates(source), LIMIT)

    assert outcome.rejected == {}
    assert outcome.too_large == {}
    assert outcome.groups >= 3  # 120 KB in pushes of at most 45 KB
    assert refs(target) == refs(source)


def test_without_a_limit_the_same_push_is_refused_by_the_target(source, tmp_path):
    """The control: one push of everything exceeds the target's limit; git's refusal
    ("pack exceeds maximum allowed size") marks the refs too large, not conflicts."""
    target = limited_target(tmp_path / "dst.git", LIMIT)

    outcome = push(source, target, creates(source), None)

    assert outcome.groups == 1
    assert outcome.rejected == {}
    assert set(outcome.too_large) == set(refs(source))
    assert "pack exceeds maximum allowed size" in next(iter(outcome.too_large.values()))
    assert refs(target) == {}


def test_a_single_ref_over_the_limit_fails_alone(source, tmp_path):
    """A branch whose own new history is larger than the limit is set aside with its
    estimate; the other refs still land, in as many pushes as they need."""
    target = limited_target(tmp_path / "dst.git", LIMIT)
    commit_blob(source, "refs/heads/huge", 3 * LIMIT, seed=7)

    outcome = push(source, target, creates(source), LIMIT)

    assert set(outcome.too_large) == {"refs/heads/huge"}
    assert "over the target's limit" in outcome.too_large["refs/heads/huge"]
    assert outcome.rejected == {}
    expected = {k: v for k, v in refs(source).items() if k != "refs/heads/huge"}
    assert refs(target) == expected


def test_an_update_counts_only_what_the_target_lacks(source, tmp_path):
    """After a bootstrap, one more 10 KB commit is one small push: the estimate excludes
    what the target already holds (its advertised refs)."""
    target = limited_target(tmp_path / "dst.git", LIMIT)
    push(source, target, creates(source), LIMIT)
    old = refs(source)["refs/heads/main"]
    new = commit_blob(source, "refs/heads/main", FILE, seed=99)

    outcome = push(source, target, [RefUpdate("refs/heads/main", new, old)], LIMIT)

    assert (outcome.groups, outcome.accepted, outcome.too_large) == (1, {"refs/heads/main"}, {})
    assert refs(target)["refs/heads/main"] == new


def test_a_store_under_the_limit_is_pushed_without_estimates(source, tmp_path):
    """Nothing can be larger than the whole store: one push, as without a limit."""
    target = init_bare(tmp_path / "dst.git")
    outcome = push(source, target, creates(source), 10 * store_bytes([f"{source}/objects"]))
    assert (outcome.groups, outcome.too_large) == (1, {})
    assert refs(target) == refs(source)


def test_estimates_follow_history(source):
    """A ref's pack is its history minus what is excluded; dates order refs oldest first."""
    estimator = PackEstimator(source, run_git)
    src = refs(source)
    whole = estimator.pack_bytes([src["refs/heads/main"]], ())
    older = estimator.pack_bytes([src["refs/heads/branch-00002"]], ())
    rest = estimator.pack_bytes([src["refs/heads/main"]], [src["refs/heads/branch-00002"]])
    assert 12 * FILE < whole < 13 * FILE
    assert older < whole
    assert rest == pytest.approx(whole - older, rel=0.05)
    assert estimator.pack_bytes([src["refs/heads/main"]], ["f" * 40]) == whole  # unknown: ignored
    dates = estimator.commit_dates([src["refs/heads/branch-00002"], src["refs/tags/v00000"]])
    assert dates[src["refs/tags/v00000"]] < dates[src["refs/heads/branch-00002"]]
