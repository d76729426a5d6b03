"""Commit times of push tips (real git): what a large push orders its refs by."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reposync.git.history import commit_times
from tests.gitrepo import generate, refs

#: ``tests.gitrepo.generate`` commits ``n`` at this time plus ``n``.
EPOCH = 1_700_000_000


def rev_parse(git_dir: Path, expression: str) -> str:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", expression],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def test_tips_and_annotated_tags_get_the_time_of_their_commit(tmp_path):
    """A branch tip is its commit's time; an annotated tag its commit's (not the
    tagger's, which ``generate`` sets to the epoch for every tag)."""
    repo = generate(tmp_path / "r.git", commits=10, branches=0, tags=5, annotated_every=1)
    names = refs(repo)
    tag = names["refs/tags/v00004"]  # annotated, on commit 9 (1 + 4 * 10 // 5)
    assert rev_parse(repo, f"{tag}^{{tag}}") == tag  # really a tag object

    times = commit_times(repo, [names["refs/heads/main"], tag])

    assert times == {names["refs/heads/main"]: EPOCH + 10, tag: EPOCH + 9}


def test_missing_ids_and_objects_reaching_no_commit_are_left_out(tmp_path):
    """Unknown ids and trees have no commit time: the caller keeps their order."""
    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)
    main = refs(repo)["refs/heads/main"]
    tree = rev_parse(repo, "main^{tree}")

    times = commit_times(repo, [main, tree, "1" * 40, main])

    assert times == {main: EPOCH + 3}


def test_no_ids_start_no_git(tmp_path):
    """Nothing asked, nothing run (the directory is not even a repository)."""
    assert commit_times(tmp_path / "nowhere.git", []) == {}
