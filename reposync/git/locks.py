"""Lock files a killed ``git`` left behind, found and removed safely.

Git takes a ref's lock by creating ``<ref>.lock`` next to it (``packed-refs.lock`` for
the packed refs) and renames it into place; a process killed in between (a worker
SIGKILLed while its ``git push`` waited on ``receive-pack``) leaves the lock, and every
later update of that ref fails with "cannot lock ref" until someone deletes it.

A lock is stale when its writer is gone. reposync removes one only when both hold:

* the caller holds the Binding's lease, so no other execution of reposync writes here;
* the lock is older than the lease TTL, so a ``git`` that a stalled former holder
  started (or a person's push) has had far longer than any ref transaction needs.

Nothing else is touched: objects, quarantine directories and fresh locks stay.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

#: Lock files of ref transactions in a repository's directory (``refs/**`` as well).
TOP_LEVEL_LOCKS = ("packed-refs.lock", "HEAD.lock", "FETCH_HEAD.lock", "shallow.lock")


def stale_locks(git_dir: Path, older_than: float, *, now: float | None = None) -> list[Path]:
    """Ref lock files under ``git_dir`` not modified for ``older_than`` seconds."""
    limit = (time.time() if now is None else now) - older_than
    found: list[Path] = []
    candidates = [git_dir / name for name in TOP_LEVEL_LOCKS]
    refs = git_dir / "refs"
    if refs.is_dir():
        candidates.extend(refs.rglob("*.lock"))
    for path in candidates:
        try:
            if path.is_file() and path.stat().st_mtime < limit:
                found.append(path)
        except OSError:  # gone while we looked: its writer finished
            continue
    return sorted(found)


def remove_stale_locks(git_dir: Path, older_than: float) -> list[str]:
    """Remove the stale ref locks of ``git_dir``; returns them, relative to it."""
    removed: list[str] = []
    for path in stale_locks(git_dir, older_than):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        relative = str(path.relative_to(git_dir))
        log.warning("removed stale lock %s of %s (its writer is gone)", relative, git_dir)
        removed.append(relative)
    return removed
