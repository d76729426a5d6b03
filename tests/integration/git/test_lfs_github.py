"""LFS objects between a local forge and GitHub (the test server's Batch API), through
the real pipeline; the real git-lfs client reads what reposync uploaded."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.sync.lfs import LfsPointer
from tests.github_env import embedded_world
from tests.gitrepo import generate, refs
from tests.lfsrepo import clone_with_lfs, commit_lfs, commit_pointers, store, stored

REPO = "acme/widgets"
MODEL = b"weights " * 3000


@pytest.fixture
def world(github_fake: Any, tmp_path: Path):
    github_fake.state.create_repo(REPO, private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        yield ctx, github_fake


def _source(tmp_path: Path) -> Path:
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)
    commit_lfs(source, "refs/heads/main", {"model.bin": MODEL, "notes.bin": b"notes\n"})
    return source


def _item(ctx: Any, run_id: int, ref: str) -> RunItem:
    with ctx.db.session() as session:
        return session.execute(
            select(RunItem).where(RunItem.run_id == run_id, RunItem.source_identity == ref)
        ).scalar_one()


def test_local_to_github_uploads_through_the_batch_api_and_git_lfs_clones_it(world, tmp_path):
    """Objects reach GitHub's LFS store (upload + verify actions) before the refs; the
    real git-lfs client then clones from the test server and gets the bytes back."""
    ctx, fake = world
    source = _source(tmp_path)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert fake.lfs.objects(REPO) == stored(source)
    assert run.report["io"]["lfs"]["objects_uploaded"] == 2
    verifies = [r for r in fake.requests_log if r.path.endswith("/verify")]
    assert len(verifies) == 2
    token = fake.add_token("acme")
    clone = clone_with_lfs(fake.git_remote(REPO, token), tmp_path / "clone")
    assert (clone / "model.bin").read_bytes() == MODEL

    again = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    assert again.status == "completed"
    assert "lfs" not in again.report["io"]


def test_github_to_local_downloads_every_object_verified(world, tmp_path):
    """GitHub as the source: objects come down through download actions into the local
    forge's git-lfs store, each checked against its OID and size."""
    ctx, _ = world
    source = _source(tmp_path)
    sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    target = tmp_path / "copy.git"

    run = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{target}"))

    assert run.status == "completed", run.report["problems"]
    assert stored(target) == stored(source)
    assert refs(target)["refs/heads/main"] == refs(source)["refs/heads/main"]


def test_a_lost_upload_response_is_settled_by_asking_github_not_by_sending_again(world, tmp_path):
    """GitHub stores the object, then the connection drops before the answer: the Batch
    API read-back finds it, the Run completes, and the object was sent exactly once."""
    ctx, fake = world
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    _, (pointer,) = commit_lfs(source, "refs/heads/main", {"model.bin": MODEL})
    fake.faults.commit_then_drop("PUT", r"^/_lfs/", drop="close", host="git")

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert fake.lfs.objects(REPO) == {pointer.oid: MODEL}
    puts = [r for r in fake.requests_log if r.method == "PUT" and r.path.startswith("/_lfs/")]
    assert len(puts) == 1
    assert run.report["io"]["lfs"]["objects_uploaded"] == 1


def test_an_object_over_githubs_limit_fails_its_ref_which_github_never_gets(world, tmp_path):
    """GitHub's per-object 422 (size limit) becomes lfs_object_too_large on the ref."""
    ctx, fake = world
    fake.lfs.max_object_size = 1000
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    commit_lfs(source, "refs/heads/main", {"ok.bin": b"x" * 10})
    commit_lfs(source, "refs/heads/big", {"big.bin": b"y" * 2000})

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    item = _item(ctx, run.id, "refs/heads/big")
    assert (item.state, item.error_code) == ("failed", "lfs_object_too_large")
    github_refs = refs(Path(fake.state.git_dir(REPO)))
    assert "refs/heads/big" not in github_refs
    assert "refs/heads/main" in github_refs


def _good_and_bad(source: Path) -> LfsPointer:
    """``good`` points at (G, 10), whose object is stored; ``bad`` at (G, 3)."""
    real = store(source, b"0123456789")
    commit_pointers(source, "refs/heads/good", {"data.bin": real})
    commit_pointers(source, "refs/heads/bad", {"data.bin": LfsPointer(real.oid, 3)})
    return real


def test_one_oid_with_a_false_size_on_another_branch_holds_back_only_that_branch(world, tmp_path):
    """(G, 10) and (G, 3) in one Batch chunk are two objects: GitHub gets G and ``good``,
    ``bad`` fails lfs_object_corrupt and never reaches GitHub."""
    ctx, fake = world
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    real = _good_and_bad(source)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    github_refs = refs(Path(fake.state.git_dir(REPO)))
    assert github_refs["refs/heads/good"] == refs(source)["refs/heads/good"]
    assert "refs/heads/bad" not in github_refs
    bad = _item(ctx, run.id, "refs/heads/bad")
    assert (bad.state, bad.error_code) == ("failed", "lfs_object_corrupt")
    assert fake.lfs.objects(REPO) == {real.oid: b"0123456789"}


def test_from_github_a_false_size_holds_back_only_its_branch(world, tmp_path):
    """GitHub as the source of both branches: G comes down once, verified, for ``good``;
    the bytes GitHub serves for (G, 3) are not 3 bytes, so ``bad`` fails, alone."""
    ctx, fake = world
    local = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    real = _good_and_bad(local)
    github = Path(fake.state.git_dir(REPO))
    subprocess.run(
        ["git", "--git-dir", str(local), "push", "-q", "--mirror", str(github)], check=True
    )
    store(github, b"0123456789")
    target = tmp_path / "copy.git"

    run = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{target}"))

    assert refs(target)["refs/heads/good"] == refs(local)["refs/heads/good"]
    assert "refs/heads/bad" not in refs(target)
    bad = _item(ctx, run.id, "refs/heads/bad")
    assert (bad.state, bad.error_code) == ("failed", "lfs_object_corrupt")
    assert stored(target) == {real.oid: b"0123456789"}
