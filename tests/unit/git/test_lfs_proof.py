"""The proof that a repository holds no LFS pointer: sound first, then cheap."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from reposync.git.lfs_proof import ProofCache, holds_no_pointer
from reposync.git.workspace import PushWorkspace
from tests.gitrepo import commit_snapshot, generate
from tests.lfsrepo import pointer_of, pointer_text

POINTER = pointer_text(pointer_of(b"large payload\n" * 100))


def _repack(repo: Path) -> None:
    subprocess.run(["git", "--git-dir", str(repo), "repack", "-adq"], check=True)


def _cache(tmp_path: Path) -> ProofCache:
    return ProofCache(tmp_path / "proofs")


def test_a_repository_of_small_ordinary_blobs_is_proven_and_its_packs_remembered(tmp_path):
    """Blobs of a pointer's size that are not pointers prove nothing wrong; the packs read
    are remembered by name and size, loose objects are not (they are read every time)."""
    repo = generate(tmp_path / "r.git", commits=20, branches=2, tags=2, file_bytes=300)
    _repack(repo)
    commit_snapshot(repo, "refs/heads/main", {b"notes.txt": b"version 2 of the notes\n" * 10})
    cache = _cache(tmp_path)

    assert holds_no_pointer(repo, cache)

    (pack,) = (repo / "objects" / "pack").glob("*.pack")
    assert cache.load() == {f"{pack.name} {pack.stat().st_size}"}
    assert holds_no_pointer(repo, cache)


def test_a_pointer_without_gitattributes_is_still_a_pointer(tmp_path):
    """No ``filter=lfs`` attribute anywhere: the pointer blob alone fails the proof, loose
    or packed, and a failed proof remembers nothing."""
    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)
    commit_snapshot(repo, "refs/heads/main", {b"model.bin": POINTER})
    cache = _cache(tmp_path)

    assert not holds_no_pointer(repo, cache)
    _repack(repo)
    assert not holds_no_pointer(repo, cache)
    assert cache.load() == set()


def test_a_pointer_in_a_pack_added_after_a_proof_fails_the_next_one(tmp_path):
    """A remembered pack is skipped, a new one is read: the pointer it brings is found."""
    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)
    _repack(repo)
    cache = _cache(tmp_path)
    assert holds_no_pointer(repo, cache)

    commit_snapshot(repo, "refs/heads/main", {b"model.bin": POINTER})
    subprocess.run(["git", "--git-dir", str(repo), "repack", "-dq"], check=True)  # a 2nd pack
    assert len(list((repo / "objects" / "pack").glob("*.pack"))) == 2

    assert not holds_no_pointer(repo, cache)


def test_the_objects_a_workspace_borrows_are_read_through_its_alternates(tmp_path):
    """The push workspace stores nothing itself: the source's pointer, behind its
    alternates, fails the proof."""
    source = generate(tmp_path / "s.git", commits=3, branches=0, tags=0)
    commit_snapshot(source, "refs/heads/main", {b"model.bin": POINTER})
    workspace = PushWorkspace(tmp_path / "ws.git", str(source / "objects"))
    workspace.prepare()

    assert not holds_no_pointer(workspace.path, _cache(tmp_path))


def test_a_partial_clone_is_never_proven(tmp_path):
    """A promisor pack says objects may live elsewhere: what is stored proves nothing."""
    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)
    _repack(repo)
    (pack,) = (repo / "objects" / "pack").glob("*.pack")
    pack.with_suffix(".promisor").write_text("")

    assert not holds_no_pointer(repo, _cache(tmp_path))


def test_a_missing_object_store_is_not_a_proof(tmp_path):
    """An alternate that cannot be read leaves the proof unmade (the scan decides)."""
    workspace = PushWorkspace(tmp_path / "ws.git", str(tmp_path / "gone" / "objects"))
    workspace.prepare()

    assert not holds_no_pointer(workspace.path, _cache(tmp_path))


def test_a_repack_while_the_proof_reads_leaves_it_unmade(tmp_path, monkeypatch):
    """Objects that moved between packs while they were read may have been missed: a
    pack set that changed during the proof proves nothing and nothing is remembered."""
    from reposync.git import lfs_proof

    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)
    _repack(repo)
    commit_snapshot(repo, "refs/heads/main", {b"notes.txt": b"plain text\n" * 20})
    real = lfs_proof._any_pointer

    def racing(*args: object) -> bool:
        found = real(*args)  # type: ignore[arg-type]
        _repack(repo)  # the loose commit and the old pack become one new pack
        return found

    monkeypatch.setattr(lfs_proof, "_any_pointer", racing)
    cache = _cache(tmp_path)

    assert not holds_no_pointer(repo, cache)
    assert cache.load() == set()


def test_a_background_proof_answers_as_the_proof_does_with_its_readers_niced(tmp_path, monkeypatch):
    """``BackgroundProof`` gives ``holds_no_pointer``'s answer (yes for plain blobs, no
    for a pointer), and the git processes reading the objects run at a lower priority
    than this one (beside a push, the push comes first)."""
    import os

    from reposync.git import lfs_proof

    plain = generate(tmp_path / "plain.git", commits=5, branches=1, tags=1, file_bytes=300)
    pointed = generate(tmp_path / "pointed.git", commits=3, branches=0, tags=0)
    commit_snapshot(pointed, "refs/heads/main", {b"model.bin": POINTER})
    started: list[int] = []
    reniced: dict[int, int] = {}
    real_popen = lfs_proof.subprocess.Popen
    real_setpriority = os.setpriority

    def popen(*args: Any, **kwargs: Any) -> Any:
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        return proc

    def setpriority(which: int, pid: int, priority: int) -> None:
        reniced[pid] = priority
        real_setpriority(which, pid, priority)

    monkeypatch.setattr(lfs_proof.subprocess, "Popen", popen)
    monkeypatch.setattr(lfs_proof.os, "setpriority", setpriority)

    assert lfs_proof.BackgroundProof(plain, _cache(tmp_path)).result()
    assert not lfs_proof.BackgroundProof(pointed, _cache(tmp_path)).result()
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert len(started) == 4
    assert reniced == {pid: own + lfs_proof.BackgroundProof.NICENESS for pid in started}


def test_a_background_proof_that_breaks_is_no_proof(tmp_path, monkeypatch):
    """An error inside the proof's thread is an answer: not proven (the walk decides)."""
    from reposync.git import lfs_proof

    repo = generate(tmp_path / "r.git", commits=3, branches=0, tags=0)

    def broken(*args: object, **kwargs: object) -> bool:
        raise RuntimeError("a bug in the proof")

    monkeypatch.setattr(lfs_proof, "_any_pointer", broken)

    assert not lfs_proof.BackgroundProof(repo, _cache(tmp_path)).result()
