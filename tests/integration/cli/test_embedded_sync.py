"""Embedded mode end to end: real repositories, real git, SQLite through migrations."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from reposync.lifecycle import Stage
from reposync.models import Binding, ObjectLink, Run, RunEvent, RunItem
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext, Step
from reposync.service.embedded import Progress, read_progress, sync
from reposync.service.pipeline.runner import execute_step
from reposync.service.pipeline.stages import applying
from reposync.service.runs import create_run, request_cancel
from reposync.sync.vocabulary import RefConflictPolicy
from tests.gitrepo import commit_on, delete_refs, generate, refs, set_ref
from tests.integration.conftest import event_messages


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
    # Target reads: the 8 linked candidates and the 3 new tags (looked for by name:
    # someone may have made them there meanwhile) before the write, 11 read-backs after.
    assert third.report["io"]["target"]["object_reads"] == 8 + 3 + 11
    with ctx.db.session() as session:
        links = session.execute(select(ObjectLink.a_identity)).scalars().all()
    assert set(links) == set(synced_refs(source))


def test_a_ref_made_on_the_target_since_the_last_run_meets_the_conflict_policy(tmp_path, ctx):
    """A new source branch whose name someone used on the target after the first Run:
    a checkpoint looks for it by name, so keep_target reports the conflict without a
    push and use_source overwrites it. Before, it was planned as a blind create that git
    refused, a conflict even under use_source (whose suggested action was use_source)."""
    source = generate(tmp_path / "src.git", commits=5, branches=2, tags=1)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    main = refs(source)["refs/heads/main"]
    set_ref(source, "refs/heads/feature", main)
    authority = commit_on(source, "refs/heads/feature", "the authority's feature")
    set_ref(target, "refs/heads/feature", main)
    standby = commit_on(target, "refs/heads/feature", "the standby's own feature")

    kept = sync(ctx, request)
    assert (kept.status, kept.plan_mode) == ("requires_attention", "checkpoint")
    [item] = items_of(ctx, kept.id)
    assert (item.target_identity, item.error_code) == ("refs/heads/feature", "conflict")
    assert "git" not in kept.report["io"]  # settled at planning: nothing was pushed
    assert refs(target)["refs/heads/feature"] == standby

    over = sync(ctx, replace(request, conflict_policy=RefConflictPolicy.USE_SOURCE))
    assert over.status == "completed", over.report["problems"]
    assert refs(target)["refs/heads/feature"] == authority


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


def run_steps_until(ctx: ServiceContext, run_id: int, stage) -> Step | None:
    """Execute a Run's steps in this process until the next one is ``stage``."""
    step: Step | None = Step(run_id, Stage.CHECKING_ACCESS, None)
    while step is not None and step.stage is not stage:
        step = execute_step(ctx, step)
    return step


def finish(ctx: ServiceContext, step: Step | None) -> None:
    while step is not None:
        step = execute_step(ctx, step)


def load_run(ctx: ServiceContext, run_id: int) -> Run:
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run


@pytest.fixture
def pair(tmp_path, ctx):
    source = generate(tmp_path / "src.git", commits=20, branches=6, tags=4)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    assert sync(ctx, request).status == "completed"
    return source, target, request


def test_history_rewrite_on_the_source_is_followed(pair, ctx):
    """A branch reset backwards (non-fast-forward) is pushed with a lease, not refused."""
    source, target, request = pair
    old = synced_refs(source)["refs/heads/branch-00001"]
    set_ref(source, "refs/heads/main", old)
    run = sync(ctx, request)
    assert run.status == "completed"
    assert run.counters["updated"] == 1
    assert synced_refs(target)["refs/heads/main"] == old


def test_full_audit_repairs_drift_that_a_checkpoint_trusts(pair, ctx):
    """A human moved a standby branch: checkpoint skips it, a full audit repairs it."""
    source, target, request = pair
    commit_on(target, "refs/heads/branch-00002", "edited on the standby")
    skipped = sync(ctx, request)
    assert skipped.counters["updated"] == 0
    assert "target" not in skipped.report["io"]
    audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))
    assert audit.plan_mode == "full_audit"
    assert audit.counters["updated"] == 1
    assert audit.counters["unchanged"] == len(synced_refs(source)) - 1
    assert synced_refs(target) == synced_refs(source)
    [item] = items_of(ctx, audit.id)
    assert (item.reason, item.object_key) == ("drift", "branch branch-00002")


def test_target_moved_between_planning_and_apply_is_a_conflict(pair, ctx):
    """The push lease catches a standby change after planning; nothing is overwritten."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00003", "authority work")
    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    human = commit_on(target, "refs/heads/branch-00003", "standby work meanwhile")
    finish(ctx, step)
    done = load_run(ctx, run.id)
    assert done.status == "requires_attention"
    assert done.counters["conflicts"] == 1
    assert synced_refs(target)["refs/heads/branch-00003"] == human
    [item] = items_of(ctx, run.id)
    assert (item.state, item.error_code) == ("failed", "conflict")
    assert "stale info" in (item.error_message or "")


def test_source_moved_after_planning_is_superseded_and_pending(pair, ctx):
    """An authority change after planning supersedes the item; the Run says so."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00004", "first")
    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    latest = commit_on(source, "refs/heads/branch-00004", "second, after planning")
    finish(ctx, step)
    done = load_run(ctx, run.id)
    assert done.status == "completed_with_pending_changes"
    assert done.counters["pending_changes"] == 1
    with ctx.db.session() as session:  # a follow-up Run was queued in the same transaction
        queued = session.execute(select(Run).where(Run.parent_run_id == run.id)).scalar_one()
    assert (queued.trigger, queued.status) == ("follow_up", "queued")
    follow_up = sync(ctx, request)
    assert follow_up.status == "completed"
    assert synced_refs(target)["refs/heads/branch-00004"] == latest


def test_deleted_then_reappeared_source_ref_supersedes_the_delete(pair, ctx):
    """A delete re-reads the source right before applying; a reappeared ref is kept."""
    source, target, request = pair
    tip = synced_refs(source)["refs/tags/v00001"]
    delete_refs(source, ["refs/tags/v00001"])
    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    set_ref(source, "refs/tags/v00001", tip)
    finish(ctx, step)
    assert load_run(ctx, run.id).counters["pending_changes"] == 1
    assert synced_refs(target)["refs/tags/v00001"] == tip


def test_baseline_adopts_equal_refs_fast_forwards_and_preserves_target_only(tmp_path, ctx):
    """First Run on a non-empty standby: equal -> adopted, behind -> fast-forward, extra -> kept."""
    source = generate(tmp_path / "src.git", commits=30, branches=4, tags=2)
    target = tmp_path / "dst.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(source), str(target)], check=True)
    src = synced_refs(source)
    set_ref(target, "refs/heads/branch-00002", src["refs/heads/branch-00001"])  # behind
    set_ref(target, "refs/heads/standby-only", src["refs/heads/main"])
    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    assert run.plan_mode == "baseline"
    assert run.status == "completed"
    assert run.counters["updated"] == 1
    assert run.counters["unchanged"] == len(src) - 1
    reasons = {i.object_key: i.reason for i in items_of(ctx, run.id) if i.action != "noop"}
    assert reasons == {"branch branch-00002": "fast_forward", "branch standby-only": "target_only"}
    assert synced_refs(target)["refs/heads/standby-only"] == src["refs/heads/main"]
    problems = {p["error_code"]: p for p in run.report["problems"]}
    assert problems["target_only_preserved"]["examples"] == ["branch standby-only"]


def test_cancel_before_inventory_ends_cancelled_and_releases_the_lease(pair, ctx):
    """A cancel request is honoured at the first cancellation point."""
    source, target, request = pair
    commit_on(source, "refs/heads/main", "never synced")
    run = create_run(ctx, bind(ctx, request).id)
    request_cancel(ctx, run.id)
    finish(ctx, Step(run.id, Stage.CHECKING_ACCESS, None))
    done = load_run(ctx, run.id)
    assert done.status == "cancelled"
    assert synced_refs(target) != synced_refs(source)
    with ctx.db.session() as session:
        binding = session.get(Binding, done.binding_id)
        assert binding is not None
        assert binding.lease_owner is None


def test_cancel_between_batches_stops_before_the_next_push(pair, ctx):
    """A cancel during applying lets the running batch settle and writes no further one."""
    source, target, request = pair
    small = ServiceContext(settings=ctx.settings.with_overrides(git_batch_max_items=2), db=ctx.db)
    for n in range(6):
        commit_on(source, f"refs/heads/branch-{n:05d}", "cancel me")
    run = create_run(small, bind(small, request).id)
    step = run_steps_until(small, run.id, Stage.APPLYING)
    step = execute_step(small, step)  # the first batch: two refs pushed and settled
    request_cancel(small, run.id)
    finish(small, step)
    done = load_run(small, run.id)
    assert done.status == "cancelled"
    moved = [f"refs/heads/branch-{n:05d}" for n in range(6)]
    pushed = [ref for ref in moved if refs(target)[ref] == refs(source)[ref]]
    assert len(pushed) == 2
    states = sorted(item.state for item in items_of(small, run.id))
    assert states == ["completed"] * 2 + ["planned"] * 4
    with small.db.session() as session:
        binding = session.get(Binding, done.binding_id)
        assert binding is not None
        assert binding.lease_owner is None
    assert sync(small, request).status == "completed"  # the next Run does the rest
    assert synced_refs(target) == synced_refs(source)


def test_cancel_of_a_run_without_differences_still_ends_cancelled(pair, ctx):
    """Zero differences skip applying; finalize still honours the cancel request."""
    _source, _target, request = pair
    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.PLANNING)
    request_cancel(ctx, run.id)
    finish(ctx, step)
    done = load_run(ctx, run.id)
    assert done.status == "cancelled"
    assert items_of(ctx, run.id) == []


def test_a_run_left_by_a_dead_process_is_resumed_by_the_next_sync(pair, ctx):
    """The embedded process died mid-run: the next invocation finishes that Run and
    reports it (issue 9 #6: it used to report a second Run instead); the Run after
    that takes what changed since."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00005", "in flight")
    run = create_run(ctx, bind(ctx, request).id)
    run_steps_until(ctx, run.id, Stage.APPLYING)  # ... and the process "dies" here
    with ctx.db.transaction() as session:  # its lease runs out
        session.execute(
            update(Binding).values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    commit_on(source, "refs/heads/branch-00000", "next change")
    later = sync(ctx, request)
    assert later.id == run.id
    assert later.status == "completed"
    assert refs(target)["refs/heads/branch-00005"] == refs(source)["refs/heads/branch-00005"]
    assert sync(ctx, request).id > run.id
    assert synced_refs(target) == synced_refs(source)


def lease_expired(ctx: ServiceContext, binding_id: int) -> bool:
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        expires = binding.lease_expires_at
        return expires is not None and expires.replace(tzinfo=UTC) <= datetime.now(UTC)


def event_types(ctx: ServiceContext, run_id: int) -> list[str]:
    with ctx.db.session() as session:
        return list(
            session.execute(
                select(RunEvent.type).where(RunEvent.run_id == run_id).order_by(RunEvent.seq)
            ).scalars()
        )


def test_ctrl_c_inside_a_stage_gives_the_lease_up_and_the_next_sync_reports_that_run(
    pair, ctx, monkeypatch
):
    """Issue 9 #6: an interrupted in-process Run left its lease held for the TTL (every
    invocation failed ``binding_busy``); now it gives the lease up, and the next
    invocation resumes it at once and reports it."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00003", "interrupted")
    real_apply = applying.apply_items

    def interrupted(*args, **kwargs):
        monkeypatch.setattr(applying, "apply_items", real_apply)
        raise KeyboardInterrupt

    monkeypatch.setattr(applying, "apply_items", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sync(ctx, request)
    with ctx.db.session() as session:
        [run] = session.execute(select(Run).order_by(Run.id.desc()).limit(1)).scalars()
    assert run.status == "running"
    assert lease_expired(ctx, run.binding_id)
    assert event_types(ctx, run.id)[-1] == "interrupted"

    resumed = sync(ctx, request)

    assert resumed.id == run.id
    assert resumed.status == "completed"
    assert "lease_reclaimed" in event_types(ctx, run.id)
    assert synced_refs(target) == synced_refs(source)


def test_ctrl_c_between_two_steps_gives_the_lease_up_too(pair, ctx):
    """Between two steps the lease is still held for the hand-over: given up as well."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00004", "interrupted between steps")

    def progress(step):
        if step.stage == Stage.APPLYING.value:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sync(ctx, request, progress)
    with ctx.db.session() as session:
        [run] = session.execute(select(Run).order_by(Run.id.desc()).limit(1)).scalars()
    assert lease_expired(ctx, run.binding_id)

    resumed = sync(ctx, request)

    assert (resumed.id, resumed.status) == (run.id, "completed")
    assert synced_refs(target) == synced_refs(source)


def lock_ref(repo: Path, ref: str, age: float) -> Path:
    """A ``<ref>.lock`` as a killed ``receive-pack`` leaves it, ``age`` seconds old."""
    lock = repo / f"{ref}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("0" * 40 + "\n")
    stamp = datetime.now(UTC).timestamp() - age
    os.utime(lock, (stamp, stamp))
    return lock


def test_a_ref_lock_left_by_a_killed_push_is_removed_and_reported(pair, ctx):
    """Issue 9 #4: a worker killed while ``receive-pack`` held ref locks left
    ``refs/…/*.lock`` behind and every later push of those refs failed. A lock older
    than the lease TTL, found by the lease holder, is stale: removed and reported."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00001", "after the crash")
    lock = lock_ref(target, "refs/heads/branch-00001", age=ctx.settings.lease_ttl + 60)

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert not lock.exists()
    assert synced_refs(target) == synced_refs(source)
    assert run.report["io"]["git"]["stale_locks_removed"] == 1
    with ctx.db.session() as session:
        [event] = session.execute(
            select(RunEvent).where(
                RunEvent.run_id == run.id, RunEvent.type == "stale_locks_removed"
            )
        ).scalars()
    assert "refs/heads/branch-00001.lock" in event.message


def test_a_fresh_ref_lock_no_process_holds_is_waited_for_then_removed(pair, ctx):
    """A lock younger than the lease TTL that no process holds: a push killed moments
    before the lease passed on (the chaos suite's seed 33: a Redis restart, the next
    holder 2 s later). It may not be removed yet (a writer ``/proc`` cannot show may
    have just taken it), and pushing past it fails its ref: the push waits until the
    lock is as old as the TTL, removes it, and lands. Before, the ref failed
    ``target_refused_push`` and the Run with it."""
    source, target, request = pair
    ctx.settings = replace(ctx.settings, lease_ttl=3.0)
    commit_on(source, "refs/heads/branch-00002", "while someone pushed")
    lock = lock_ref(target, "refs/heads/branch-00002", age=1)

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert not lock.exists()
    assert synced_refs(target) == synced_refs(source)
    assert "refs/heads/branch-00002.lock" in event_messages(ctx, run.id, "stale_locks_removed")[0]


def test_a_ref_lock_a_live_process_holds_is_never_removed(pair, ctx):
    """A lock a live process holds open (a push in progress) is its: never removed nor
    waited out; the Run does not complete while it stays, and completes once the lock
    is released."""
    source, target, request = pair
    commit_on(source, "refs/heads/branch-00002", "while someone pushes")
    lock = lock_ref(target, "refs/heads/branch-00002", age=1)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=2)
    with lock.open() as held:  # this process: a live writer by /proc's account
        run = sync(ctx, request)
        assert not held.closed

    assert lock.exists()
    assert run.status != "completed"
    assert refs(target)["refs/heads/branch-00002"] != refs(source)["refs/heads/branch-00002"]
    lock.unlink()
    assert sync(ctx, request).status == "completed"
    assert synced_refs(target) == synced_refs(source)


def test_a_push_reports_git_s_progress_on_the_line_the_run_and_its_events(tmp_path, ctx):
    """Issue 25: a push is not one silent step. While it runs, the command line hears
    git's updates (several, objects going up), the Run's progress as the API reads it
    carries them, and a ``git_progress`` event says where it is; once it ended, the Run
    shows no transfer any more."""
    from reposync.service import queries
    from reposync.service.accounts.users import operator

    source = generate(tmp_path / "src.git", commits=600, branches=40, tags=40, file_bytes=400)
    target = tmp_path / "dst.git"
    heard: list[Progress] = []
    stored: list[dict] = []

    def listen(progress: Progress) -> None:
        heard.append(progress)
        if progress.transfer is not None:  # in the push: what the API answers right now
            shown = queries.run_progress(ctx, operator(), progress.run_id)
            stored.append(shown.get("transfer") or {})

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"), listen)

    assert run.status == "completed"
    assert synced_refs(target) == synced_refs(source)
    pushing = [p.transfer for p in heard if p.transfer is not None]
    assert len(pushing) > 1
    writing = [t.objects_done for t in pushing if t.phase == "writing objects"]
    assert len(writing) > 1
    assert writing == sorted(writing)
    assert writing[0] < writing[-1]
    assert pushing[-1].bytes_done > 0
    # The Run's row carries git's figures during the push (written at the first update,
    # then at most once a second): the API's ``transfer`` key, in the documented shape.
    assert stored[1:]
    assert all(
        set(shown) == {"phase", "objects_done", "objects_total", "bytes_done"}
        for shown in stored[1:]
    )
    assert "transfer" not in queries.run_progress(ctx, operator(), run.id)
    with ctx.db.session() as session:
        events = (
            session.execute(
                select(RunEvent).where(RunEvent.run_id == run.id, RunEvent.type == "git_progress")
            )
            .scalars()
            .all()
        )
        assert events
        assert events[0].message.startswith(pushing[0].phase)
        assert session.get(Run, run.id).transfer is None


def test_an_interrupted_run_is_listed_as_such_and_a_cancelled_one_syncs_on_the_next_call(
    pair, ctx, monkeypatch
):
    """Issue 25: a Run whose execution stopped (Ctrl-C gave its lease up) is listed
    ``running`` and ``interrupted`` (the API and ``runs list``), not as one making
    progress; once cancelled, the very next ``sync`` of the pair syncs (it used to answer
    with the cancelled Run, and only the call after it synced)."""
    from reposync.service import queries
    from reposync.service.accounts.users import operator
    from reposync.web.schemas.runs import RunSchema, RunSummarySchema

    source, target, request = pair
    commit_on(source, "refs/heads/branch-00003", "interrupted")
    real_apply = applying.apply_items
    seen_running: list[bool] = []

    def interrupt(ex, *args, **kwargs):
        # Mid-stage, lease held: running, and not interrupted.
        shown = RunSchema().dump(queries.get_run_for(ctx, operator(), ex.run_id))
        seen_running.append(shown["interrupted"])
        monkeypatch.setattr(applying, "apply_items", real_apply)
        raise KeyboardInterrupt

    monkeypatch.setattr(applying, "apply_items", interrupt)
    with pytest.raises(KeyboardInterrupt):
        sync(ctx, request)
    [listed] = RunSummarySchema(many=True).dump(queries.list_runs(ctx, operator(), limit=1))
    assert (listed["status"], listed["interrupted"]) == ("running", True)
    assert seen_running == [False]

    request_cancel(ctx, listed["id"])
    again = sync(ctx, request)

    assert again.id != listed["id"]
    assert again.status == "completed"
    assert synced_refs(target) == synced_refs(source)
    cancelled = load_run(ctx, listed["id"])
    assert cancelled.status == "cancelled"
    assert (
        RunSchema().dump(queries.get_run_for(ctx, operator(), cancelled.id))["interrupted"] is False
    )


def test_progress_tracked_per_batch_equals_a_whole_count_before_every_step(tmp_path, ctx):
    """The progress told before each step (counted per batch while applying) is what
    counting every item of the Run says at that moment, through many small batches."""
    from tests.forge_population import populate

    source = tmp_path / "src.git"
    populate(source, 300)
    small = replace(ctx, settings=ctx.settings.with_overrides(batch_max_items=25))
    told: list[tuple[Progress, Progress]] = []

    def progress(step: Progress) -> None:
        if step.transfer is None:  # git's own updates during a push repeat the last count
            told.append((step, read_progress(small, step.run_id)))

    run = sync(small, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}"), progress)
    assert run.status == "completed"
    applying_steps = [pair for pair in told if pair[0].stage == Stage.APPLYING.value]
    assert len(applying_steps) > 10
    assert [p for p, _ in told] == [whole for _, whole in told]
    assert told[-1][0].items_done == told[-1][0].items_total > 300
