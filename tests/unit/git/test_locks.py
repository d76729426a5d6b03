"""Stale ref locks: only lock files, only old ones (issue 9 #4)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from reposync.git.locks import remove_stale_locks, stale_locks


def touch(path: Path, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("0" * 40 + "\n")
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
