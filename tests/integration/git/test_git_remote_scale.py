"""Git to and from a remote forge at scale, through the whole pipeline: pushes kept under
the forge's pack-size limit, leases on every update and delete, and fetches from a
remote source that move only what the batch applies.

Real git on both ends: the GitHub test server serves smart HTTP through ``git
http-backend`` and refuses packs over its ``max_push_bytes`` as GitHub does.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reposync.lifecycle import Stage
from reposync.models.db import Database
from reposync.providers.github.provider import GitHubProvider
from reposync.service.bindings import SyncRequest, bind
from reposync.service.embedded import sync
from reposync.service.runs import create_run
from tests.fakes.github import GitHubFake
from tests.github_env import github_context
from tests.gitrepo import commit_blob, commit_on, delete_refs, generate, refs, set_ref
from tests.integration.cli.test_embedded_sync import (
    finish,
    items_of,
    load_run,
    run_steps_until,
    synced_refs,
)
from tests.integration.conftest import event_messages

REPO = "acme/widgets"
#: Each generated commit adds 10 KB of incompressible bytes; a push may carry ~4 of them.
FILE = 10_000
LIMIT = 45_000


@pytest.fixture
def limited_fake() -> Iterator[GitHubFake]:
    """The GitHub test server with a pack-size limit of ``LIMIT`` bytes."""
    with GitHubFake(max_push_bytes=LIMIT) as fake:
        fake.state.create_repo(REPO, private=True)
        yield fake
        fake.assert_clean(requests_too=True)


def world(fake: GitHubFake, tmp_path: Path, **overrides: object) -> Iterator[Any]:
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    ctx, recorder = github_context(fake, db, tmp_path / "data", fake.add_token("acme"), **overrides)
    try:
        yield ctx
    finally:
        db.dispose()
    assert recorder.violations == []


def github_refs(fake: GitHubFake, name: str = REPO) -> dict[str, str]:
    return refs(Path(fake.state.git_dir(name)))


def by_ref(ctx: Any, run_id: int) -> dict[str, Any]:
    return {item.target_identity: item for item in items_of(ctx, run_id)}


# -- pack-size limit ----------------------------------------------------------------------


def heavy_source(tmp_path: Path) -> Path:
    """~120 KB of history over 12 commits, branches and tags along it, and one branch
    whose own commit (135 KB) is larger than any push may be."""
    source = generate(
        tmp_path / "src.git", commits=12, branches=5, tags=3, file_bytes=FILE, incompressible=True
    )
    commit_blob(source, "refs/heads/huge", 3 * LIMIT, seed=7)
    return source


def test_pushes_to_github_stay_under_its_pack_limit_and_an_oversized_ref_fails_alone(
    tmp_path, limited_fake
):
    """With the limit configured, the bootstrap is split by history into pushes the
    server accepts; the one ref whose own pack is too large fails with ``push_too_large``
    and every other ref lands."""
    source = heavy_source(tmp_path)
    for ctx in world(limited_fake, tmp_path, git_max_push_pack_bytes=LIMIT):
        run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

        items = by_ref(ctx, run.id)
        huge = items.pop("refs/heads/huge")
        assert (huge.state, huge.error_code) == ("failed", "push_too_large")
        assert "over the target's limit" in (huge.error_message or "")
        assert {i.state for i in items.values()} == {"completed"}
        expected = {k: v for k, v in refs(source).items() if k != "refs/heads/huge"}
        assert github_refs(limited_fake) == expected
        assert run.report["io"]["git"]["pushes"] >= 3  # 120 KB in pushes of <= 45 KB
        [problem] = [p for p in run.report["problems"] if p["error_code"] == "push_too_large"]
        assert problem["count"] == 1
        assert problem["retryable"] is False


def test_github_refuses_a_push_over_its_limit_and_the_refs_fail_as_too_large(
    tmp_path, limited_fake
):
    """The control: with the setting at 0, reposync assumes GitHub's 2 GiB; the server's
    smaller limit refuses the one push ("pack exceeds maximum allowed size"), nothing
    moves there, and the items fail ``push_too_large``, not as conflicts."""
    source = generate(
        tmp_path / "src.git", commits=12, branches=2, tags=0, file_bytes=FILE, incompressible=True
    )
    for ctx in world(limited_fake, tmp_path):
        run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

        assert github_refs(limited_fake) == {}
        codes = {i.error_code for i in items_of(ctx, run.id)}
        assert codes == {"push_too_large"}
        assert run.counters["conflicts"] == 0
        [item] = items_of(ctx, run.id)[:1]
        assert "pack exceeds maximum allowed size" in (item.error_message or "")


def test_a_local_target_with_a_configured_limit_is_pushed_in_parts(tmp_path, ctx, settings):
    """A local forge has no limit of its own; the setting gives it one (for tests and
    forges behind it), and the bootstrap still converges."""
    source = generate(
        tmp_path / "src.git", commits=12, branches=5, tags=3, file_bytes=FILE, incompressible=True
    )
    target = tmp_path / "dst.git"
    limited = type(ctx)(settings=settings.with_overrides(git_max_push_pack_bytes=LIMIT), db=ctx.db)

    run = sync(limited, SyncRequest(f"local:{source}", f"local:{target}"))

    assert run.status == "completed"
    assert run.report["io"]["git"]["pushes"] >= 3
    assert synced_refs(target) == synced_refs(source)


# -- push order: newest tips first -------------------------------------------------------


def test_a_bootstrap_in_several_pushes_sends_the_newest_tips_first(tmp_path, github_world):
    """Twelve branches and four tags along a linear history, five refs per push: the
    first push names main and the newest tips (so it carries nearly all the history in
    one pack, as ``git push --mirror`` would), not the first names in sorted order; the
    later pushes only name commits GitHub already has. An annotated tag counts at its
    commit's time."""
    ctx, fake = github_world
    source = generate(tmp_path / "src.git", commits=40, branches=12, tags=4)
    small = type(ctx)(settings=ctx.settings.with_overrides(git_batch_max_items=5), db=ctx.db)

    run = sync(small, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed"
    assert github_refs(fake) == synced_refs(source)
    batches: dict[int, set[str]] = {}
    for item in items_of(ctx, run.id):
        batches.setdefault(item.batch_no or 0, set()).add(item.target_identity or "")
    # Commit n is at time n: main 40, branch-b at 1 + 10b/3, tag v-t at 1 + 10t.
    assert batches[min(batches)] == {
        "refs/heads/main",
        "refs/heads/branch-00011",
        "refs/heads/branch-00010",
        "refs/heads/branch-00009",
        "refs/tags/v00003",  # lightweight, at commit 31, as branch-00009 is
    }
    assert run.report["io"]["git"]["pushes"] == 4  # 17 refs, 5 per push


def test_one_batch_of_refs_is_pushed_in_groups_of_what_the_target_takes_per_push(
    tmp_path, github_world, monkeypatch
):
    """A GitHub target taking five ref updates per push: the bootstrap's 17 refs are one
    applying batch (one source read, one LFS scan, one read-back), pushed in four atomic
    groups of at most five, newest tips first, each under its own leases."""
    ctx, fake = github_world
    monkeypatch.setattr(GitHubProvider, "max_ref_updates_per_push", 5)
    source = generate(tmp_path / "src.git", commits=40, branches=12, tags=4)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed"
    assert github_refs(fake) == synced_refs(source)
    ref_batches = {i.batch_no for i in items_of(ctx, run.id) if i.object_type == "git_ref"}
    assert len(ref_batches) == 1
    pushes = fake.receive_pack_requests
    assert [len(p) for p in pushes] == [5, 5, 5, 2]
    assert "refs/heads/main" in {ref for _, _, ref in pushes[0]}
    assert run.report["io"]["git"]["pushes"] == 4
    read_backs = [r for r in fake.upload_pack_requests if r.command == "ls-refs"]
    assert len(read_backs) == 2  # the target's inventory, then one read-back
    assert event_messages(ctx, run.id, "git_pushed") == [
        "5 of 17 refs pushed",
        "10 of 17 refs pushed",
        "15 of 17 refs pushed",
        "17 of 17 refs pushed",
    ]


# -- leases: a target ref moved between planning and push ---------------------------------


@pytest.fixture
def github_world(tmp_path, github_fake) -> Iterator[tuple[Any, GitHubFake]]:
    github_fake.state.create_repo(REPO, private=True)
    for ctx in world(github_fake, tmp_path):
        yield ctx, github_fake


def test_github_target_moved_between_planning_and_push_is_a_conflict(tmp_path, github_world):
    """An update and a delete planned against GitHub's values; a human moves both
    branches on GitHub before the push: the leases refuse the push, both items are
    conflicts and GitHub keeps the human's commits."""
    ctx, fake = github_world
    source = generate(tmp_path / "src.git", commits=10, branches=4, tags=1)
    request = SyncRequest(f"local:{source}", f"github:{REPO}")
    assert sync(ctx, request).status == "completed"
    commit_on(source, "refs/heads/branch-00001", "authority work")
    delete_refs(source, ["refs/heads/branch-00002"])

    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    git_dir = Path(fake.state.git_dir(REPO))
    moved = commit_on(git_dir, "refs/heads/branch-00001", "pushed to GitHub meanwhile")
    kept = commit_on(git_dir, "refs/heads/branch-00002", "pushed to GitHub meanwhile too")
    finish(ctx, step)

    done = load_run(ctx, run.id)
    assert done.status == "requires_attention"
    assert done.counters["conflicts"] == 2
    items = by_ref(ctx, run.id)
    for name in ("refs/heads/branch-00001", "refs/heads/branch-00002"):
        assert (items[name].action, items[name].error_code) in {
            ("update", "conflict"),
            ("delete", "conflict"),
        }
        assert "stale info" in (items[name].error_message or "")
    assert github_refs(fake)["refs/heads/branch-00001"] == moved
    assert github_refs(fake)["refs/heads/branch-00002"] == kept


def assert_a_refused_lease_holds_back_nothing_else(
    ctx: Any, source: Path, request: SyncRequest, target: Path
) -> None:
    """One ref of an atomic push moved on the target after planning: it is a conflict and
    keeps the target's commit, while the refs pushed beside it (a new branch, an update)
    still land in the same Run."""
    assert sync(ctx, request).status == "completed"
    commit_on(source, "refs/heads/branch-00001", "authority work")
    commit_on(source, "refs/heads/branch-00003", "more authority work")
    set_ref(source, "refs/heads/fresh", refs(source)["refs/heads/main"])
    fresh = commit_on(source, "refs/heads/fresh", "a new branch")

    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    moved = commit_on(target, "refs/heads/branch-00001", "pushed to the standby meanwhile")
    finish(ctx, step)

    done = load_run(ctx, run.id)
    items = by_ref(ctx, run.id)
    assert (items["refs/heads/branch-00001"].error_code, done.counters["conflicts"]) == (
        "conflict",
        1,
    )
    assert {items[n].state for n in ("refs/heads/branch-00003", "refs/heads/fresh")} == {
        "completed"
    }
    assert refs(target)["refs/heads/branch-00001"] == moved
    assert refs(target)["refs/heads/fresh"] == fresh
    assert refs(target)["refs/heads/branch-00003"] == refs(source)["refs/heads/branch-00003"]


def test_a_refused_lease_on_github_holds_back_nothing_else(tmp_path, github_world):
    """Before, the whole atomic group failed with the moved ref: the others failed as
    conflicts they were not (and, when git refused a create before sending anything,
    read back missing as "verify_mismatch")."""
    ctx, fake = github_world
    source = generate(tmp_path / "src.git", commits=10, branches=4, tags=1)
    request = SyncRequest(f"local:{source}", f"github:{REPO}")
    assert_a_refused_lease_holds_back_nothing_else(
        ctx, source, request, Path(fake.state.git_dir(REPO))
    )


def test_a_refused_lease_on_a_local_target_holds_back_nothing_else(tmp_path, ctx):
    """Before, git reported the others "[rejected] (atomic push failed)" and they failed
    as conflicts they were not."""
    source = generate(tmp_path / "src.git", commits=10, branches=4, tags=1)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert_a_refused_lease_holds_back_nothing_else(ctx, source, request, target)


def test_local_target_delete_moved_between_planning_and_push_is_a_conflict(tmp_path, ctx):
    """A delete carries its lease too: the standby's branch moved after planning, so
    the delete is refused and the branch (with the standby's commit) survives."""
    source = generate(tmp_path / "src.git", commits=10, branches=4, tags=1)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    delete_refs(source, ["refs/heads/branch-00003"])

    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    human = commit_on(target, "refs/heads/branch-00003", "standby work meanwhile")
    finish(ctx, step)

    done = load_run(ctx, run.id)
    assert done.status == "requires_attention"
    [item] = items_of(ctx, run.id)
    assert (item.action, item.state, item.error_code) == ("delete", "failed", "conflict")
    assert refs(target)["refs/heads/branch-00003"] == human


# -- a remote source: fetch only what the batch applies -----------------------------------


def wanted_since(fake: GitHubFake, start: int) -> set[str]:
    """Every object id the fetch commands the server received after request ``start``
    asked for (a negotiation over HTTP repeats its wants in each round)."""
    return {w for r in fake.upload_pack_requests[start:] if r.command == "fetch" for w in r.wants}


def test_a_github_source_is_fetched_by_the_changed_refs_only(tmp_path, github_world):
    """GitHub -> local: the bootstrap fetches each ref's object id; a one-commit
    change fetches exactly that commit (one want, negotiated against what the mirror
    keeps); a deleted branch fetches nothing; a tag on a known commit fetches nothing."""
    ctx, fake = github_world
    git_dir = Path(fake.state.git_dir(REPO))
    generate(git_dir, commits=30, branches=40, tags=20)
    local = tmp_path / "local.git"
    request = SyncRequest(f"github:{REPO}", f"local:{local}")

    start = len(fake.upload_pack_requests)
    first = sync(ctx, request)
    assert first.status == "completed", first.report["problems"]
    assert wanted_since(fake, start) == set(refs(git_dir).values())
    assert synced_refs(local) == synced_refs(git_dir)

    new = commit_on(git_dir, "refs/heads/branch-00007", "one more commit on GitHub")
    start = len(fake.upload_pack_requests)
    second = sync(ctx, request)
    assert second.status == "completed", second.report["problems"]
    assert wanted_since(fake, start) == {new}
    assert second.report["io"]["git"]["fetched_tips"] == 1
    assert synced_refs(local) == synced_refs(git_dir)

    delete_refs(git_dir, ["refs/heads/branch-00011"])
    commit = refs(git_dir)["refs/heads/branch-00020"]
    # a tag on a commit the mirror already has
    (git_dir / "refs" / "tags").mkdir(parents=True, exist_ok=True)
    (git_dir / "refs" / "tags" / "late").write_text(commit + "\n")
    start = len(fake.upload_pack_requests)
    third = sync(ctx, request)
    assert third.status == "completed", third.report["problems"]
    assert wanted_since(fake, start) == set()
    assert synced_refs(local) == synced_refs(git_dir)


def objects_in(git_dir: Path) -> int:
    """Objects stored in the repository itself (loose and packed; not its alternates)."""
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "count-objects", "-v"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts = dict(line.split(": ") for line in out.splitlines())
    return int(counts["count"]) + int(counts["in-pack"])


def test_a_worker_without_a_mirror_fetches_only_the_change(tmp_path, github_world):
    """A worker that never synced this Binding (its data directory is new) applies a
    one-commit change: the transfer repository borrows the local target's objects, so it
    negotiates with the target's refs and receives that commit alone, not the history."""
    ctx, fake = github_world
    git_dir = Path(fake.state.git_dir(REPO))
    generate(git_dir, commits=200, branches=60, tags=30, files_per_commit=3)
    local = tmp_path / "local.git"
    request = SyncRequest(f"github:{REPO}", f"local:{local}")
    assert sync(ctx, request).status == "completed"
    shutil.rmtree(ctx.settings.data_dir / "git")  # another worker, another machine

    new = commit_on(git_dir, "refs/heads/branch-00042", "one more commit on GitHub")
    start = len(fake.upload_pack_requests)
    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert wanted_since(fake, start) == {new}
    assert run.report["io"]["git"]["fetched_objects"] == 3  # commit, tree, its new file
    assert synced_refs(local) == synced_refs(git_dir)


def test_a_transfer_repository_keeps_nothing_after_its_push(tmp_path, github_world):
    """GitHub -> local: what a batch fetched into the transfer repository is in the
    target once pushed, so the transfer repository is emptied (a bootstrap must not leave
    a second copy of the repository in the data directory); the next change still
    fetches only itself, negotiated against the target."""
    ctx, fake = github_world
    git_dir = Path(fake.state.git_dir(REPO))
    generate(git_dir, commits=60, branches=10, tags=5, files_per_commit=2)
    local = tmp_path / "local.git"
    request = SyncRequest(f"github:{REPO}", f"local:{local}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    [transfer] = list((ctx.settings.data_dir / "git").glob("binding-*-source.git"))
    assert first.report["io"]["git"]["fetched_objects"] > 60
    assert objects_in(transfer) == 0
    assert objects_in(local) >= first.report["io"]["git"]["fetched_objects"]

    commit_on(git_dir, "refs/heads/branch-00004", "one more commit on GitHub")
    second = sync(ctx, request)

    assert second.status == "completed", second.report["problems"]
    assert second.report["io"]["git"]["fetched_objects"] == 3
    assert objects_in(transfer) == 0
    assert synced_refs(local) == synced_refs(git_dir)
