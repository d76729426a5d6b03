"""Stale ref locks: only lock files, only old ones (issue 9 #4), and never one a live
process may still commit (chaos: a SIGSTOPped ``receive-pack`` resumed after its locks
were removed and wrote its refs a second time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.errors import GitTransportError
from reposync.git import procfs
from reposync.git.locks import remove_stale_locks, stale_locks
from tests.gitrepo import generate, refs

linux_only = pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")


def touch(path: Path, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("0" * 40 + "\n")
    return age_of(path, age)


def age_of(path: Path, age: float) -> Path:
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def test_old_ref_locks_are_stale_fresh_ones_and_other_files_are_not(tmp_path):
    old_ref = touch(tmp_path / "refs" / "heads" / "feature" / "x.lock", age=600)
    old_packed = touch(tmp_path / "packed-refs.lock", age=600)
    touch(tmp_path / "refs" / "heads" / "main.lock", age=5)  # a push in progress
    touch(tmp_path / "refs" / "heads" / "main", age=600)  # a ref, not a lock
    touch(tmp_path / "objects" / "pack" / "tmp_pack.lock", age=600)  # not a ref lock
    assert stale_locks(tmp_path, older_than=120) == sorted([old_ref, old_packed])


def test_remove_stale_locks_names_what_it_removed(tmp_path):
    touch(tmp_path / "refs" / "tags" / "v1.lock", age=600)
    fresh = touch(tmp_path / "refs" / "tags" / "v2.lock", age=1)
    assert remove_stale_locks(tmp_path, older_than=120) == ["refs/tags/v1.lock"]
    assert not (tmp_path / "refs" / "tags" / "v1.lock").exists()
    assert fresh.exists()
    assert remove_stale_locks(tmp_path / "missing", older_than=120) == []


def test_a_young_lock_no_process_holds_is_waited_for_then_removed(tmp_path):
    """With ``wait``, a lock younger than the TTL that no process holds (a push killed
    moments ago) is waited for until it is that old, then removed; without, it stays."""
    young = touch(tmp_path / "refs" / "heads" / "main.lock", age=0.5)
    assert remove_stale_locks(tmp_path, older_than=1.0) == []
    assert young.exists()
    assert remove_stale_locks(tmp_path, older_than=1.0, wait=True) == ["refs/heads/main.lock"]
    assert not young.exists()


@pytest.fixture
def repo(tmp_path) -> Path:
    return generate(tmp_path / "repo.git", commits=3, branches=1, tags=0)


@pytest.fixture
def prepared(repo) -> Iterator[subprocess.Popen[str]]:
    """A real ``git update-ref`` holding ``refs/heads/main.lock`` in a prepared
    transaction, as ``receive-pack`` holds it while its hooks run. It works in the
    repository (its cwd) and does not name it; the caller stops and continues it."""
    main = refs(repo)["refs/heads/main"]
    other = refs(repo)["refs/heads/branch-00000"]
    proc = subprocess.Popen(
        ["git", "update-ref", "--stdin"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(f"start\nupdate refs/heads/main {other} {main}\nprepare\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "start: ok\n"
    assert proc.stdout.readline() == "prepare: ok\n"
    assert (repo / "refs" / "heads" / "main.lock").exists()
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@linux_only
def test_an_old_lock_of_a_stopped_git_is_never_removed(repo, prepared):
    """The chaos finding: the writer froze (SIGSTOP) while it held a prepared ref
    transaction, its lock grew older than the TTL. Removing it would let the writer,
    once continued, commit over whatever was pushed meanwhile."""
    lock = age_of(repo / "refs" / "heads" / "main.lock", 600)
    os.kill(prepared.pid, signal.SIGSTOP)
    try:
        for wait in (False, True):  # a writer's lock is never waited out either
            with pytest.raises(GitTransportError) as raised:
                remove_stale_locks(repo, older_than=120, wait=wait)
        assert raised.value.retryable
        assert "refs/heads/main.lock" in raised.value.message
        assert f"pid {prepared.pid} (stopped; works in the repository)" in raised.value.message
        assert lock.exists()
    finally:
        os.kill(prepared.pid, signal.SIGCONT)
    # Its writer gone (killed while prepared, as a SIGKILLed worker's push is), the same
    # lock is stale and goes.
    prepared.kill()
    prepared.wait()
    assert lock.exists()
    assert remove_stale_locks(repo, older_than=120) == ["refs/heads/main.lock"]
    assert not lock.exists()


@linux_only
def test_a_git_that_names_the_repository_holds_its_locks(tmp_path, repo):
    """``git push <target>`` and ``git --git-dir <repo> ...`` do not work in the
    repository but name it: alive, they may still write it."""
    lock = touch(repo / "packed-refs.lock", age=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    named = subprocess.Popen(  # waits for its commands on stdin
        ["git", f"--git-dir={repo}", "update-ref", "--stdin"], cwd=elsewhere, stdin=subprocess.PIPE
    )
    try:
        _until(lambda: "update-ref" in _argv(named.pid))
        with pytest.raises(GitTransportError, match="names the repository"):
            remove_stale_locks(repo, older_than=120)
        assert lock.exists()
    finally:
        named.kill()
        named.wait()
    assert remove_stale_locks(repo, older_than=120) == ["packed-refs.lock"]


@linux_only
def test_any_process_with_the_lock_open_holds_it(tmp_path, repo):
    """Not only git writes refs (libgit2, JGit): a lock file open in any process."""
    lock = touch(repo / "refs" / "heads" / "topic.lock", age=600)
    keep_open = "import sys, time; f = open(sys.argv[1], 'a'); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", keep_open, lock], cwd=tmp_path)
    try:
        _until(lambda: str(lock) in _open_files(holder.pid))
        with pytest.raises(GitTransportError, match="has a lock file open"):
            remove_stale_locks(repo, older_than=120)
    finally:
        holder.kill()
        holder.wait()
    assert remove_stale_locks(repo, older_than=120) == ["refs/heads/topic.lock"]


@linux_only
def test_a_process_that_is_no_git_and_holds_no_lock_is_no_writer(repo):
    """A shell or editor sitting in the repository cannot commit a ref transaction: it
    does not keep a stale lock forever."""
    touch(repo / "refs" / "heads" / "left.lock", age=600)
    bystander = subprocess.Popen(["sleep", "60"], cwd=repo)
    try:
        assert remove_stale_locks(repo, older_than=120) == ["refs/heads/left.lock"]
    finally:
        bystander.kill()
        bystander.wait()


def test_without_proc_no_lock_is_ever_removed(repo, monkeypatch):
    """Absence of a writer cannot be proven without /proc: the lock stays."""
    lock = touch(repo / "refs" / "heads" / "main.lock", age=600)
    monkeypatch.setattr(procfs, "PROC", repo / "no-proc")
    with pytest.raises(GitTransportError, match="no /proc"):
        remove_stale_locks(repo, older_than=120)
    assert lock.exists()


def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _open_files(pid: int) -> set[str]:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return {os.readlink(fds / name) for name in os.listdir(fds)}
    except OSError:
        return set()
