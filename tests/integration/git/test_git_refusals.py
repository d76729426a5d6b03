"""A push the target refuses for its own reasons is not a conflict (issue 23, item 4).

A target whose disk fills during a push, a hook that declines, an object the target's
fsck refuses: the refs' items fail ``target_refused_push`` (the cause and the target's
own words in the message; a rerun may clear it), never ``conflict`` (which asks a person
to pick a side, and suggests a policy that would overwrite the standby later). Nothing
refused is reported completed, and the next Run after the cause is fixed converges.

The full disk is real: a small tmpfs mounted for the test. Root mounts it (CI runs as
root on Debian); anyone else runs that test again inside a user namespace of their own
(``unshare --user --map-root-user --mount``), where they are root and may mount a tmpfs.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.providers.local.hooks import CHAINED
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from tests.github_env import embedded_world
from tests.gitrepo import bad_tree_commit, commit_blob, commit_on, generate, refs
from tests.lfsrepo import commit_lfs, stored

#: The small disk's size; the filler leaves less than the push needs.
DISK_BYTES = 4 * 1024 * 1024
#: A user and mount namespace where the user is root (and may mount a tmpfs).
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount")


def _items(ctx: Any, run_id: int) -> dict[str, RunItem]:
    with ctx.db.session() as session:
        rows = session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars()
        return {str(r.source_identity): r for r in rows}


def _fsck(repo: Path) -> None:
    subprocess.run(["git", "--git-dir", str(repo), "fsck", "--strict"], check=True)


def _refused(ctx: Any, run: Any, names: set[str]) -> dict[str, RunItem]:
    """The Run's items for ``names`` all failed as the target's refusal, reported as a
    retryable problem of its own and never as a conflict."""
    items = _items(ctx, run.id)
    for name in names:
        assert (items[name].state, items[name].error_code) == ("failed", "target_refused_push")
    problems = {p["error_code"]: p for p in run.report["problems"]}
    assert "conflict" not in problems
    problem = problems["target_refused_push"]
    assert problem["retryable"] is True
    assert "use_source" not in problem["suggested_action"]
    return items


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path | None]:
    """A directory on a tmpfs of ``DISK_BYTES``, unmounted afterwards; None where this
    process may not mount (not root): the test then runs itself in a user namespace."""
    if os.geteuid() != 0:
        yield None
        return
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0755", "reposync-test", disk],
        check=True,
    )
    try:
        yield disk
    finally:
        if subprocess.run(["umount", disk], check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", disk], check=True)


def _passes_in_a_user_namespace(node_id: str) -> None:
    """Run the test ``node_id`` again where this user is root of a user and mount
    namespace of its own (a tmpfs may be mounted there), and require that it passed."""
    ran = subprocess.run(
        [*UNSHARE, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node_id],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, (
        "the full-disk test needs root, or unprivileged user namespaces to mount its tmpfs "
        f"in:\n{ran.stdout[-4000:]}\n{ran.stderr[-2000:]}"
    )
    assert "1 passed" in ran.stdout, ran.stdout[-4000:]


def _fill(disk: Path, leave: int) -> Path:
    """A file taking all of ``disk`` but ``leave`` bytes (tmpfs counts whole pages)."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("wb") as out:
        out.write(b"\0" * max(free - leave, 0))
    return filler


def test_a_target_disk_that_fills_during_a_push_is_the_targets_refusal_and_recovers(
    ctx, tmp_path, small_disk, request
):
    """A real ENOSPC in the middle of receive-pack: the changed refs fail
    target_refused_push (retryable, naming the full disk and the target's words), the
    target keeps its refs and a sound repository; once space is freed, the next Run
    pushes them and completes."""
    if small_disk is None:  # not root: the same test, where this user may mount
        _passes_in_a_user_namespace(request.node.nodeid)
        return
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    target = small_disk / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    before = refs(target)
    commit_blob(source, "refs/heads/main", 1_000_000, seed=1)  # incompressible
    commit_blob(source, "refs/heads/grown", 600_000, seed=2)
    filler = _fill(small_disk, leave=256 * 1024)

    full = sync(ctx, request)

    items = _refused(ctx, full, {"refs/heads/main", "refs/heads/grown"})
    message = items["refs/heads/main"].error_message or ""
    assert message.startswith("refs/heads/main was not pushed: the target's disk is full")
    assert "No space left on device" in message
    assert full.status != "completed"
    assert refs(target) == before
    _fsck(target)

    filler.unlink()
    freed = sync(ctx, request)

    assert freed.status == "completed", freed.report["problems"]
    assert refs(target) == refs(source)
    _fsck(target)


def _hooked(ctx: ServiceContext) -> ServiceContext:
    """The operator opted into running a local target's hooks during a sync."""
    return ServiceContext(settings=ctx.settings.with_overrides(local_target_hooks=True), db=ctx.db)


def test_a_declining_pre_receive_hook_is_the_targets_refusal_with_its_words(ctx, tmp_path):
    """A pre-receive hook that exits 1 with a message: every pushed ref fails
    target_refused_push quoting it; the target is unchanged; without the hook the next
    Run completes."""
    ctx = _hooked(ctx)
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    before = refs(target)
    # The operator's own hook: reposync's standby lock holds the name pre-receive and
    # runs a hook of the user's from CHAINED after its own check.
    hook = target / "hooks" / CHAINED
    hook.write_text("#!/bin/sh\necho 'standby frozen by ops until Monday' >&2\nexit 1\n")
    hook.chmod(0o755)
    commit_on(source, "refs/heads/main", "work to push")
    commit_on(source, "refs/heads/branch-00000", "more work")

    declined = sync(ctx, request)

    items = _refused(ctx, declined, {"refs/heads/main", "refs/heads/branch-00000"})
    message = items["refs/heads/main"].error_message or ""
    assert "a hook on the target declined it" in message
    assert "standby frozen by ops until Monday" in message
    assert refs(target) == before

    hook.unlink()
    again = sync(ctx, request)
    assert again.status == "completed", again.report["problems"]
    assert refs(target) == refs(source)


def test_an_object_the_targets_fsck_refuses_is_its_refusal_not_a_conflict(ctx, tmp_path):
    """A target with receive.fsckObjects refuses a branch whose tree names a file twice:
    that branch fails target_refused_push (naming the fsck message); the branches synced
    before stay as they were."""
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    subprocess.run(
        ["git", "--git-dir", str(target), "config", "receive.fsckObjects", "true"], check=True
    )
    before = refs(target)
    bad_tree_commit(source, "refs/heads/bad")

    run = sync(ctx, request)

    items = _refused(ctx, run, {"refs/heads/bad"})
    message = items["refs/heads/bad"].error_message or ""
    assert "fsck" in message
    assert "duplicateEntries" in message
    assert refs(target) == before


def test_a_target_disk_too_full_for_an_lfs_object_holds_back_its_ref_until_freed(
    ctx, tmp_path, small_disk
):
    """The LFS object a new commit needs does not fit on the target's disk: its ref
    fails target_refused_push before any push, nothing half-written stays in the
    target's store; once space is freed the object and the ref arrive."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    target = small_disk / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    before = refs(target)
    content = random.Random(3).randbytes(1_000_000)
    _, (pointer,) = commit_lfs(source, "refs/heads/main", {"model.bin": content})
    filler = _fill(small_disk, leave=256 * 1024)

    full = sync(ctx, request)

    items = _refused(ctx, full, {"refs/heads/main"})
    assert "No space left on device" in (items["refs/heads/main"].error_message or "")
    assert refs(target) == before
    assert stored(target) == {}
    assert list((target / "lfs" / "tmp").iterdir()) == []

    filler.unlink()
    freed = sync(ctx, request)

    assert freed.status == "completed", freed.report["problems"]
    assert refs(target) == refs(source)
    assert stored(target) == {pointer.oid: content}


def test_github_declining_a_push_is_its_refusal_with_its_words(github_fake, tmp_path):
    """GitHub's receive-pack runs a pre-receive hook that declines (as GitHub does for a
    file over 100 MB or a protected branch): the ref fails target_refused_push with the
    words GitHub sent over HTTP, not a conflict; GitHub's refs are unchanged."""
    github_fake.state.create_repo("acme/widgets", private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
        request = SyncRequest(f"local:{source}", "github:acme/widgets")
        assert sync(ctx, request).status == "completed"
        github = Path(github_fake.state.git_dir("acme/widgets"))
        before = refs(github)
        hook = github / "hooks" / "pre-receive"
        hook.parent.mkdir(exist_ok=True)
        hook.write_text("#!/bin/sh\necho 'error: GH001: Large files detected.' >&2\nexit 1\n")
        hook.chmod(0o755)
        commit_on(source, "refs/heads/main", "work to push")

        run = sync(ctx, request)

        items = _refused(ctx, run, {"refs/heads/main"})
        assert "GH001: Large files detected." in (items["refs/heads/main"].error_message or "")
        assert refs(github) == before
