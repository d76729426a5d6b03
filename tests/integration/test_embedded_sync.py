"""Embedded mode end to end: real repositories, real git, SQLite through migrations."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from reposync.models import ObjectLink, RunItem
from reposync.service.context import ServiceContext
from reposync.service.embedded import SyncRequest, sync
from tests.gitrepo import commit_on, delete_refs, generate, refs, set_ref


def synced_refs(path: Path) -> dict[str, str]:
    return {k: v for k, v in refs(path).items() if k.startswith(("refs/heads/", "refs/tags/"))}


def items_of(ctx: ServiceContext, run_id: int) -> list[RunItem]:
    with ctx.db.session() as session:
        return list(session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars())


def test_bootstrap_then_checkpoint_then_exactly_the_changed_refs(tmp_path, ctx):
    """300 branches + 300 tags bootstrap; no-change Run reads nothing; 10 edits -> 10 items."""
    source = generate(tmp_path / "src.git", commits=350, branches=300, tags=300)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")

    first = sync(ctx, request)
    assert first.status == "completed"
    assert first.plan_mode == "empty_target"
    assert synced_refs(target) == synced_refs(source)
    assert first.counters["created"] == 601  # main + 300 branches + 300 tags
    assert first.report["io"]["target"]["object_reads"] == 601  # read-back only

    second = sync(ctx, request)
    assert second.status == "completed"
    assert second.plan_mode == "checkpoint"
    assert second.counters["checkpoint_skipped"] == 601
    assert {
        k: v for k, v in second.counters.items() if k not in ("scanned", "checkpoint_skipped")
    } == dict.fromkeys(second.counters.keys() - {"scanned", "checkpoint_skipped"}, 0)
    assert "target" not in second.report["io"]  # not one target ref read
    assert "git" not in second.report["io"]  # nothing pushed
    assert items_of(ctx, second.id) == []

    moved = [f"refs/heads/branch-{n:05d}" for n in (3, 50, 120, 200, 299)]
    for ref in moved:
        commit_on(source, ref, f"move {ref}")
    set_ref(source, "refs/heads/branch-00007", synced_refs(source)["refs/heads/main"])
    moved_by_reset = "refs/heads/branch-00007"
    deleted = ["refs/heads/branch-00010", "refs/tags/v00020"]
    delete_refs(source, deleted)
    added = ["refs/tags/new-a", "refs/tags/new-b", "refs/tags/new-c"]
    for tag in added:
        set_ref(source, tag, synced_refs(source)["refs/heads/main"])

    third = sync(ctx, request)
    assert third.status == "completed"
    touched = {(item.action, item.target_identity) for item in items_of(ctx, third.id)}
    assert touched == (
        {("update", ref) for ref in [*moved, moved_by_reset]}
        | {("delete", ref) for ref in deleted}
        | {("create", ref) for ref in added}
    )
    assert synced_refs(target) == synced_refs(source)
    assert third.counters["updated"] == 6
    assert third.counters["deleted"] == 2
    assert third.counters["created"] == 3
    assert third.counters["checkpoint_skipped"] == 601 - 6 - 2
    # Target reads: the 8 linked candidates before the write, 11 read-backs after.
    assert third.report["io"]["target"]["object_reads"] == 8 + 11
    with ctx.db.session() as session:
        links = session.execute(select(ObjectLink.a_identity)).scalars().all()
    assert set(links) == set(synced_refs(source))


def test_dry_run_plans_and_reports_but_writes_nothing(tmp_path, ctx):
    """A dry run persists its plan and report; the target and the links stay untouched."""
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    sync(ctx, request)
    commit_on(source, "refs/heads/branch-00001", "later")
    before = synced_refs(target)

    dry = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}", dry_run=True))

    assert dry.status == "completed"
    assert dry.report["planned_actions"] == {"update": 1}
    assert synced_refs(target) == before
    assert [item.state for item in items_of(ctx, dry.id)] == ["planned"]
    assert "git" not in dry.report["io"]
