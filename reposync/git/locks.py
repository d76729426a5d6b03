"""Lock files a killed ``git`` left behind, found and removed safely.

Git takes a ref's lock by creating ``<ref>.lock`` next to it (``packed-refs.lock`` for
the packed refs), writes the new value into it and, when the whole transaction is
prepared, renames it into place; a process killed in between (a worker SIGKILLed while
its ``git push`` waited on ``receive-pack``) leaves the lock, and every later update of
that ref fails with "cannot lock ref" until someone deletes it.

A lock is stale when its writer is gone, and only a proof of that makes it removable.
Age is no proof: a ``receive-pack`` that was stopped (SIGSTOP, a frozen container or VM)
while it held a prepared transaction resumes as if nothing happened and renames its
locks into place, however old they are. The chaos suite caught exactly that: a lease
holder SIGSTOPped mid-push lost its lease, the next holder removed the "stale" locks
and pushed, and when the frozen worker was continued its ``receive-pack`` wrote the
refs a second time. So reposync removes locks only when all of these hold:

* the caller holds the Binding's lease, so no other execution of reposync writes here;
* ``/proc`` shows no live process (running or stopped) that may still complete a ref
  transaction of this repository: none has a lock open, no ``git`` works in it or
  names it (``reposync.git.procfs``); where that cannot be proven (no ``/proc``,
  processes hidden or not inspectable) no lock is ever removed;
* the lock is older than the lease TTL, which still protects a writer ``/proc`` cannot
  show (another host, another PID namespace) that has only just taken it.

While such a process lives, nothing is removed and the caller gets a retryable
``GitTransportError`` naming the locks and the processes: the push waits for the
transaction to finish (its refs are then read back as written once) instead of stealing
its locks. Nothing else is touched: objects, quarantine directories and fresh locks stay.

A lock with no writer that is not yet older than the TTL (a push killed moments before
the lease passed on: the chaos suite's seed 33, a Redis restart) would fail its ref's
push all the same. With ``wait``, the caller waits, its guard asked, until such a lock
is as old as the TTL and removes it then: at most one TTL, the lease renewed meanwhile.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from reposync.errors import GitTransportError
from reposync.git import procfs
from reposync.git.process import GUARD_INTERVAL
from reposync.guards import current_guard

log = logging.getLogger(__name__)

#: Lock files of ref transactions in a repository's directory (``refs/**`` as well).
TOP_LEVEL_LOCKS = ("packed-refs.lock", "HEAD.lock", "FETCH_HEAD.lock", "shallow.lock")


def ref_locks(git_dir: Path) -> list[Path]:
    """Every ref lock file under ``git_dir``, whatever its age."""
    candidates = [git_dir / name for name in TOP_LEVEL_LOCKS]
    refs = git_dir / "refs"
    if refs.is_dir():
        candidates.extend(refs.rglob("*.lock"))
    found: list[Path] = []
    for path in candidates:
        try:
            if path.is_file():
                found.append(path)
        except OSError:  # gone while we looked: its writer finished
            continue
    return sorted(found)


def stale_locks(git_dir: Path, older_than: float, *, now: float | None = None) -> list[Path]:
    """Ref lock files under ``git_dir`` not modified for ``older_than`` seconds (by age
    alone: whether a live process may still write them is ``remove_stale_locks``' test)."""
    limit = (time.time() if now is None else now) - older_than
    found: list[Path] = []
    for path in ref_locks(git_dir):
        try:
            if path.stat().st_mtime < limit:
                found.append(path)
        except OSError:
            continue
    return found


def remove_stale_locks(git_dir: Path, older_than: float, *, wait: bool = False) -> list[str]:
    """Remove the stale ref locks of ``git_dir``; returns them, relative to it. With
    ``wait``, first wait until the locks no process holds are ``older_than`` old.

    Raises ``GitTransportError`` (retryable), removing nothing, while a live process may
    still complete a ref transaction of ``git_dir``: pushing now would fail on its locks,
    removing them would let it write the refs again after us.
    """
    locks = ref_locks(git_dir)
    if not locks:
        return []
    if wait:
        _refuse_while_written(git_dir, locks)
        youngest = max(_mtimes(locks), default=0.0)
        if youngest + older_than > time.time():
            log.info(
                "waiting %.1fs for ref locks of %s no process holds to grow stale",
                youngest + older_than - time.time(),
                git_dir,
            )
            _sleep_until(youngest + older_than)
        return remove_stale_locks(git_dir, older_than)  # their writers asked again
    _refuse_while_written(git_dir, locks)
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


def _refuse_while_written(git_dir: Path, locks: list[Path]) -> None:
    """A retryable ``GitTransportError`` while a live process may still complete a ref
    transaction holding ``locks``."""
    writers = procfs.possible_writers(git_dir, locks)
    if writers:
        names = [str(path.relative_to(git_dir)) for path in locks]
        raise GitTransportError(
            f"ref locks in {git_dir} ({_some(names, 5)}) belong to a ref transaction that "
            f"may still complete: {_some(writers, 3)}; waiting for it to end (a lock is "
            "never removed while its writer may live)"
        )


def _mtimes(paths: list[Path]) -> list[float]:
    found: list[float] = []
    for path in paths:
        try:
            found.append(path.stat().st_mtime)
        except OSError:  # gone while we looked: its writer finished
            continue
    return found


def _sleep_until(deadline: float) -> None:
    """Sleep until ``deadline`` (``time.time()``), asking the running stage's guard (a
    lease lost, a cancel) every ``GUARD_INTERVAL``."""
    guard = current_guard()
    while (left := deadline - time.time()) > 0:
        if guard is not None:
            guard()
        time.sleep(min(left, GUARD_INTERVAL))


def _some(items: list[str], limit: int) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
