"""Ref locks of a frozen push, end to end: real ``git push`` and ``receive-pack``,
embedded mode.

The chaos suite found it (``sigstop_holder@push``): a lease holder SIGSTOPped while its
push's ``receive-pack`` held the target's ref locks lost its lease; the next holder
removed the locks as stale (older than the TTL) and pushed; when the frozen worker was
continued its ``receive-pack`` committed the same refs a second time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.config import Settings
from reposync.git import procfs
from reposync.models import RunEvent
from reposync.providers.local.hooks import SYNC_PUSH_ENV
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.gitrepo import commit_on, enable_reflog, generate, reflog_lengths, refs

pytestmark = pytest.mark.skipif(not procfs.available(), reason="needs Linux /proc")

REF = "refs/heads/branch-00001"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Short retries: the Run waits for the frozen push in this process."""
    return Settings(
        data_dir=tmp_path / "data",
        lease_ttl=30.0,
        retry_backoff=0.3,
        retry_backoff_max=1.0,
        max_stage_attempts=30,
        local_target_hooks=True,  # the test's hook freezes the push's transaction
    )


def hold_prepared_transactions_once(target: Path, marker: Path) -> None:
    """A ``reference-transaction`` hook that holds the next push's ref locks for a moment
    (writing ``marker``), as the chaos suite's does; later pushes pass straight through."""
    once = target / "hold-once"
    once.touch()
    hook = target / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        "cat >/dev/null\n"
        f'if [ "$1" = prepared ] && rm "{once}" 2>/dev/null; then\n'
        f'  echo $PPID > "{marker}"; sleep 1\n'
        "fi\n"
    )
    hook.chmod(0o755)


def test_the_locks_of_a_frozen_push_are_waited_for_never_removed(tmp_path, ctx):
    source = generate(tmp_path / "src.git", commits=20, branches=4, tags=2)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    enable_reflog(target)
    moved = commit_on(source, REF, "moved while a push froze")

    # An earlier execution's push of the same change, frozen (SIGSTOP to its whole
    # process group: git push, receive-pack, the hook) while it holds the ref's lock. It
    # is reposync's own push, so the standby lock lets it through.
    held = tmp_path / "receive-pack-pid"
    hold_prepared_transactions_once(target, held)
    frozen = subprocess.Popen(
        ["git", f"--git-dir={source}", "push", "--quiet", str(target), f"{moved}:{REF}"],
        start_new_session=True,
        env={**os.environ, SYNC_PUSH_ENV: "1"},
    )
    deadline = time.monotonic() + 30
    while not held.exists():
        assert time.monotonic() < deadline
        assert frozen.poll() is None
        time.sleep(0.01)
    os.killpg(frozen.pid, signal.SIGSTOP)
    lock = target / f"{REF}.lock"
    assert lock.exists()
    stamp = time.time() - ctx.settings.lease_ttl - 60  # far older than the lease TTL
    os.utime(lock, (stamp, stamp))
    # It is continued a while later (the Run waits for it meanwhile).
    thaw = threading.Timer(3.0, os.killpg, (frozen.pid, signal.SIGCONT))
    thaw.start()
    try:
        run = sync(ctx, request)
    finally:
        thaw.join()
        os.killpg(frozen.pid, signal.SIGCONT)
        frozen.wait(timeout=60)

    assert run.status == "completed", run.report["problems"]
    assert refs(target)[REF] == moved
    # Written once, by whichever push got the lock: not again by the one that resumed.
    assert reflog_lengths(target).get(REF) == 1
    assert not lock.exists()
    with ctx.db.session() as session:
        messages = list(
            session.execute(select(RunEvent.message).where(RunEvent.run_id == run.id)).scalars()
        )
    waited = [m for m in messages if "may still complete" in (m or "")]
    assert waited, messages
    assert f"{REF}.lock" in waited[0]
    assert "stopped" in waited[0]
