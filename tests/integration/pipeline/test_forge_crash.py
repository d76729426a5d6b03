"""A worker SIGKILLed in the comments phase, right after the target committed a batch.

The nastiest moment: comments exist on the target, the RunItems still say ``applying``
and nobody recorded an outcome. Recovery must settle them by read-back (markers), never
by creating them again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from reposync.models import RunEvent, RunItem
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.service.bindings import SyncRequest, bind
from reposync.service.runs import enqueue_run
from tests.gitrepo import generate
from tests.integration.conftest import completed_transitions, run_row, wait_terminal
from tests.workers import start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

ISSUES, COMMENTS_PER_ISSUE = 120, 5


def make_source(path: Path) -> None:
    generate(path, commits=3, branches=1, tags=0)
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        forge = ForgeAuthoring(provider.forge)
        for n, issue in enumerate(
            forge.create_many(
                "issue", [{"title": f"issue {n}", "author": "ann"} for n in range(ISSUES)]
            )
        ):
            forge.create_many(
                "issue_comment",
                [
                    {"body": f"comment {c} on {n}", "author": "bob"}
                    for c in range(COMMENTS_PER_ISSUE)
                ],
                parent=("issue", issue),
            )
    finally:
        provider.close()


def target_comments(path: Path) -> tuple[int, Counter[str]]:
    """How many comments the target holds, and how often each marker occurs."""
    import sqlite3

    db = path / "reposync" / "forge.db"
    if not db.exists():
        return 0, Counter()
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute(
                "SELECT marker FROM objects WHERE object_type = 'issue_comment'"
            ).fetchall()
        except sqlite3.OperationalError as exc:  # the file exists before its schema does
            if "no such table" not in str(exc):
                raise
            return 0, Counter()
    markers = [m for (m,) in rows]
    return len(markers), Counter(markers)


def test_sigkill_after_a_comment_batch_committed_recovers_without_duplicates(
    tmp_path, dctx, env, workers
):
    """Each comment exists exactly once on the target after the crash and recovery."""
    source, target = tmp_path / "src.git", tmp_path / "dst.git"
    make_source(source)
    binding = bind(dctx, SyncRequest(f"local:{source}", f"local:{target}"))
    faulty = dict(
        env, REPOSYNC_FAULTS=("local_forge.after_commit:sleep=60:object_type=issue_comment:times=1")
    )
    first = start_worker(faulty, tmp_path, "w1")
    workers.append(first)

    run = enqueue_run(dctx, binding.id)

    def committed_but_unrecorded() -> bool:
        count, _ = target_comments(target)
        with dctx.db.session() as session:
            applying = session.execute(
                select(func.count()).where(
                    RunItem.run_id == run.id,
                    RunItem.object_type == "issue_comment",
                    RunItem.state == "applying",
                )
            ).scalar_one()
        return count > 0 and applying > 0

    wait_for(committed_but_unrecorded, 90, "a comment batch committed on the target")
    written_before_kill, _ = target_comments(target)
    first.kill()
    assert written_before_kill == 200  # exactly one batch, committed, never recorded

    workers.append(start_worker(env, tmp_path, "w2", beat=True))  # no fault this time
    finished = wait_terminal(dctx, run.id, timeout=120)

    assert finished.status == "completed", finished.report["problems"]
    count, markers = target_comments(target)
    assert count == ISSUES * COMMENTS_PER_ISSUE
    assert set(markers.values()) == {1}, "a comment was created twice"
    with dctx.db.session() as session:
        recovered = (
            session.execute(
                select(RunEvent.counts).where(
                    RunEvent.run_id == run.id, RunEvent.type == "items_recovered"
                )
            )
            .scalars()
            .all()
        )
        items = session.execute(select(func.count()).where(RunItem.run_id == run.id)).scalar_one()
    assert sum(c.get("completed", 0) for c in recovered) == 200  # settled by read-back
    assert completed_transitions(dctx, run.id) == items
    assert run_row(dctx, run.id).lease_generation is not None
