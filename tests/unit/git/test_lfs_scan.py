"""The pointer scan: native git, streaming, only what the new tips add."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reposync.git.lfs_scan import scan_pointers
from tests.gitrepo import commit_on, generate, refs
from tests.lfsrepo import commit_lfs


@pytest.mark.parametrize("bitmap", [False, True], ids=["walked", "from-a-bitmap"])
def test_only_pointers_reachable_from_the_tips_and_not_from_known_are_found(
    tmp_path: Path, bitmap: bool
):
    """History the target has (``known``) is not walked; a known commit the repository
    lacks is ignored; ordinary blobs, even small ones, are never taken for pointers. The
    same when the repository has a reachability bitmap (``git gc`` writes one) and the
    difference is read from it."""
    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)
    first, (a,) = commit_lfs(repo, "refs/heads/main", {"a.bin": b"a" * 100})
    commit_on(repo, "refs/heads/main", "plain text commit")
    second, (b,) = commit_lfs(repo, "refs/heads/main", {"b.bin": b"b" * 100})
    if bitmap:
        subprocess.run(
            ["git", "--git-dir", str(repo), "repack", "-adq", "--write-bitmap-index"], check=True
        )
        assert list((repo / "objects" / "pack").glob("*.bitmap"))

    assert sorted(scan_pointers(repo, [second])) == sorted([a, b])
    assert list(scan_pointers(repo, [second], [first, "f" * 40])) == [b]
    assert list(scan_pointers(repo, [first], [second])) == []
    assert list(scan_pointers(repo, [], [first])) == []


def test_a_caller_may_stop_early_and_no_git_process_is_left_behind(tmp_path: Path):
    """Closing the generator after one pointer ends the git processes it started."""
    repo = generate(tmp_path / "r.git", commits=1, branches=0, tags=0)
    files = {f"f{n}.bin": bytes([n]) * 200 for n in range(50)}
    tip, _ = commit_lfs(repo, "refs/heads/main", files)

    before = set(_children())  # servers other tests' fixtures started
    scan = scan_pointers(repo, [tip])
    next(scan)
    assert set(_children()) - before, "the scan runs git while it is consumed"
    scan.close()

    assert set(_children()) - before == set()
    assert len(list(scan_pointers(repo, [tip]))) == 50
    assert refs(repo)["refs/heads/main"] == tip


def _children() -> list[str]:
    """Live child processes of this process, by the parent each names in ``/proc``.

    Not from ``/proc/self/task/*/children``: a thread of this process (a server another
    test's fixture started) may end between listing the threads and reading its file, and
    the children it forked then belong to another thread."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended while we looked
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me:
            found.append(entry.name)
    return found
