"""A sync never changes a byte of its source (issue 25).

Syncing from a repository added ``reposync.repositoryid`` to the source's own config, so
a source reposync may not write (a read-only mount, another user's mirror) could not be
synced at all. Every kind of Run (a bootstrap, a no-change Run, a full audit, a dry run)
over a source with every kind of object now leaves each file of the source as it was,
content, mode and time; and a source mounted read-only syncs.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reposync.cli import main
from tests.forge_population import populate
from tests.gitrepo import refs


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry below ``root``: its mode, and a file's modification time and content's
    digest. A directory's time is left out: SQLite's reader of the source's forge shares
    a ``-shm`` index beside it (made and removed as it opens and closes: a directory
    entry, never a byte of the source), as every reader of a WAL database does."""
    found: dict[str, tuple[int, int, str]] = {}
    for path in sorted([root, *root.rglob("*")]):
        stat = path.lstat()
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[str(path.relative_to(root))] = (stat.st_mode, stat.st_mtime_ns, digest)
        else:
            found[str(path.relative_to(root))] = (stat.st_mode, 0, "")
    return found


def _sync(capsys: pytest.CaptureFixture[str], source: str, target: str, *flags: str) -> dict:
    status = main(["sync", source, target, "--json", *flags])
    out = capsys.readouterr().out
    assert status == 0, out
    return json.loads(out)


def test_no_kind_of_run_changes_its_source(capsys, tmp_path, data_dir):
    """A bootstrap, a no-change Run, a full audit and a dry run, from a source with Git
    data and forge objects of every type and from a working clone: the sources' trees
    are identical before and after, byte for byte and time for time."""
    bare = tmp_path / "src.git"
    populate(bare, 60)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    before = {side: _snapshot(side) for side in (bare, clone)}

    for source, target in ((bare, tmp_path / "a.git"), (clone, tmp_path / "b.git")):
        first = _sync(capsys, f"local:{source}", f"local:{target}")
        assert first["status"] == "completed", first
        for flags in ((), ("--full-audit",), ("--dry-run",)):
            assert _sync(capsys, f"local:{source}", f"local:{target}", *flags)["status"] == (
                "completed"
            )

    assert {side: _snapshot(side) for side in (bare, clone)} == before
    assert refs(tmp_path / "a.git") == refs(bare)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[], None]]:
    """What makes ``tmp_path / "mounted"`` a place no process of ours may write: for root
    (whom permissions do not stop) a read-only bind mount of it over itself, unmounted
    afterwards; for anyone else its files' write permissions taken away, given back
    afterwards so pytest can clean up."""
    directory = tmp_path / "mounted"
    directory.mkdir()
    as_root = os.geteuid() == 0

    def seal() -> None:
        if as_root:
            subprocess.run(["mount", "--bind", directory, directory], check=True)
            subprocess.run(["mount", "-o", "remount,bind,ro", directory], check=True)
        else:
            for path in [directory, *directory.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode & ~0o222)

    yield seal
    if as_root:
        for args in (["umount", directory], ["umount", "--lazy", directory]):
            if subprocess.run(args, check=False, capture_output=True).returncode == 0:
                break
    else:
        for path in [directory, *directory.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)


def test_a_source_no_process_may_write_syncs(capsys, tmp_path, data_dir, read_only):
    """A source reposync may not write (a read-only mount, which stops root too; another
    user's files) syncs whole: its refs and its forge objects reach the target."""
    source = tmp_path / "mounted" / "src.git"
    population = populate(source, 40)
    read_only()
    with pytest.raises(OSError, match=r"Read-only file system|Permission denied"):
        (source / "probe").write_text("")

    report = _sync(capsys, f"local:{source}", f"local:{tmp_path / 'dst.git'}")

    assert report["status"] == "completed", report
    assert refs(tmp_path / "dst.git") == refs(source)
    created = sum(t.get("created", 0) for n, t in report["object_types"].items() if n != "git_ref")
    assert created >= population.total - population.counts.get("reaction", 0)


def test_a_clone_and_its_linked_worktree_sync_without_a_problem(capsys, tmp_path, data_dir):
    """A working clone is synced by its branches and tags, its remote-tracking refs being
    its view of another repository (no problem reported); a linked worktree of it (a
    ``.git`` file naming its git directory) is a source too, with the clone's objects."""
    origin = populate(tmp_path / "origin.git", 10)
    assert origin.total >= 10
    clone = tmp_path / "clone"
    git = ["git", "-C", str(clone)]
    subprocess.run(
        ["git", "clone", "-q", "-b", "main", str(tmp_path / "origin.git"), str(clone)],
        check=True,
    )
    subprocess.run([*git, "tag", "mine"], check=True)
    worktree = tmp_path / "worktree"
    subprocess.run([*git, "worktree", "add", "-q", "-b", "side", str(worktree)], check=True)
    own = {k: v for k, v in refs(clone).items() if not k.startswith("refs/remotes/")}
    assert len(own) < len(refs(clone))  # the clone has remote-tracking refs to leave out

    for source, target in ((clone, tmp_path / "a.git"), (worktree, tmp_path / "b.git")):
        report = _sync(capsys, f"local:{source}", f"local:{target}")
        assert (report["status"], report["problems"], report["unsupported"]) == (
            "completed",
            [],
            {},
        ), report
    assert refs(tmp_path / "a.git") == own
    assert "refs/heads/side" in own
    assert refs(tmp_path / "b.git") == own
