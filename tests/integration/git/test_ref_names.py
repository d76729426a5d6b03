"""Ref names Git would refuse never crash a Run nor loop it (issue 9 #8).

A repository can hold names ``git`` itself never creates: bytes that are not UTF-8, a
broken ``packed-refs`` line, a name too long for libgit2. They crashed
``inventory_source`` (``UnicodeEncodeError``), failed a whole batch (PostgreSQL:
``StringDataRightTruncation``) or were listed, re-read as missing, superseded and
followed up forever. Now they are counted in the report by stable code, with
printable examples, and every other ref still syncs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.lifecycle import RunStatus
from reposync.models import Run, RunEvent
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.pipeline.stages.ref_applier import GitRefApplier
from tests.gitrepo import commit_on, generate, refs

LONG = "refs/heads/" + "/".join(["x" * 200] * 7)  # 1,417 characters


def add_broken_refs(repo: Path) -> None:
    oid = refs(repo)["refs/heads/main"]
    (repo / os.fsdecode(b"refs/heads/bad\xff\xfename")).write_text(oid + "\n")
    long_ref = repo / LONG
    long_ref.parent.mkdir(parents=True)
    long_ref.write_text(oid + "\n")
    with (repo / "packed-refs").open("a") as packed:
        packed.write(f"{oid} refs/heads/broken..name\n")


def problems_by_code(run: Run) -> dict[str, dict]:
    return {p["error_code"]: p for p in run.report["problems"]}


def check(ctx: ServiceContext, tmp_path: Path) -> None:
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    add_broken_refs(source)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    synced = {k: v for k, v in refs(source).items() if k in refs(target)}
    assert len(synced) == 1 + 3 + 2  # main, the branches and the tags
    problems = problems_by_code(first)
    assert problems["invalid_ref_name"]["count"] == 2
    assert problems["invalid_ref_name"]["category"] == "data_gap"
    assert problems["invalid_ref_name"]["problem_type"] == "sync_failed"
    assert sorted(problems["invalid_ref_name"]["examples"]) == [
        "refs/heads/bad\\xff\\xfename",
        "refs/heads/broken..name",
    ]
    assert problems["ref_name_too_long"]["count"] == 1
    assert first.report["rejected"]["ref_name_too_long"]["count"] == 1

    commit_on(source, "refs/heads/main", "later")
    second = sync(ctx, request)
    assert second.status == "completed", second.report["problems"]
    assert second.counters["updated"] == 1
    assert second.counters.get("superseded", 0) == 0
    with ctx.db.session() as session:
        assert session.execute(select(Run.id)).scalars().all() == [first.id, second.id]


def test_refs_git_refuses_are_reported_and_the_others_sync_on_sqlite(ctx, tmp_path):
    check(ctx, tmp_path)


@pytest.mark.postgres
def test_refs_git_refuses_are_reported_and_the_others_sync_on_postgres(pg_ctx, tmp_path):
    check(pg_ctx, tmp_path)


def test_a_source_that_keeps_moving_gets_a_bounded_chain_of_follow_ups(ctx, tmp_path, monkeypatch):
    """Each Run is superseded (the source "moved" again): three follow-ups, then the
    chain stops with an event, and no Run is left queued (the tick would run it)."""
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)
    request = SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}")
    real_prepare = GitRefApplier.prepare

    def always_moved(self, ex, items):
        to_write, settled = real_prepare(self, ex, items)
        return [], [*settled, *(_superseded(item) for item in to_write)]

    monkeypatch.setattr(GitRefApplier, "prepare", always_moved)
    last = sync(ctx, request)

    with ctx.db.session() as session:
        runs = session.execute(select(Run).order_by(Run.id)).scalars().all()
        stopped = (
            session.execute(select(RunEvent).where(RunEvent.type == "follow_ups_stopped"))
            .scalars()
            .all()
        )
    assert [r.trigger for r in runs] == ["manual", "follow_up", "follow_up", "follow_up"]
    assert all(r.status == RunStatus.COMPLETED_WITH_PENDING_CHANGES.value for r in runs)
    assert last.id == runs[-1].id
    assert [e.run_id for e in stopped] == [runs[-1].id]


def _superseded(item):
    from reposync.providers.base import ItemError
    from reposync.service.pipeline.stages.objects.applier_contract import ItemOutcome
    from reposync.sync.vocabulary import ItemState

    return ItemOutcome(item, ItemState.SUPERSEDED, ItemError("superseded", "moved (test)"))
