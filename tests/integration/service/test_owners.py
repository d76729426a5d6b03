"""Whole owners bound at once (``service/owners.py``, ``service/owner_pass.py``), local to
local in the embedded mode: what a pass binds, creates, adopts, reports and leaves alone,
what a dry run writes (nothing), one pass at a time, the tick's passes and sync switches,
and how the schedule of fifty Bindings is spread so that it neither fires at once nor
crowds out another account's Run."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from sqlalchemy import func, select, update

from reposync.errors import OwnerBindingBusy, OwnerNotFound
from reposync.lifecycle import Stage, Trigger
from reposync.models import Binding, OwnerBinding, OwnerBindingMember, Run
from reposync.service import owners
from reposync.service.bindings import SyncRequest, bind, delete_binding, update_binding
from reposync.service.context import NoDispatch, ServiceContext, Step
from reposync.service.owner_pass import spread
from reposync.service.owners import OwnerRequest
from reposync.service.scheduling import schedules
from tests.gitrepo import generate, init_bare, refs

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def make_sources(root: Path, *names: str) -> Path:
    for name in names:
        generate(root / f"{name}.git", commits=1, branches=0, tags=0)
    return root


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A source directory of three repositories and an empty target directory."""
    source = make_sources(tmp_path / "src", "alpha", "beta", "gamma")
    target = tmp_path / "dst"
    target.mkdir()
    return source, target


def request(source: Path, target: Path, **options: object) -> OwnerRequest:
    return OwnerRequest(f"local:{source}", f"local:{target}", **options)  # type: ignore[arg-type]


def count(ctx: ServiceContext, model: type) -> int:
    with ctx.db.session() as session:
        return int(session.execute(select(func.count()).select_from(model)).scalar_one())


def outcomes(report: owners.PassReport) -> dict[str, str]:
    return {repo.name: repo.outcome.value for repo in report.repositories}


def test_bind_all_creates_each_missing_target_and_binds_it(ctx, world):
    """Every source repository gets a created target of its name and a Binding (source
    the authority), each a member with its first Run queued, a full audit; the owner
    binding keeps the pass's report."""
    source, target = world
    row, report = owners.bind_all(ctx, request(source, target))
    assert row is not None
    assert report is not None
    assert outcomes(report) == dict.fromkeys(["alpha", "beta", "gamma"], "created")
    assert sorted(p.name for p in target.iterdir()) == ["alpha.git", "beta.git", "gamma.git"]
    with ctx.db.session() as session:
        bindings = session.execute(select(Binding).order_by(Binding.id)).scalars().all()
        runs = session.execute(select(Run).order_by(Run.id)).scalars().all()
    assert [(b.a_locator, b.b_locator) for b in bindings] == [
        (str(source / f"{n}.git"), str(target / f"{n}.git")) for n in ("alpha", "beta", "gamma")
    ]
    assert [(r.binding_id, r.audit_mode, r.status) for r in runs] == [
        (b.id, "full", "queued") for b in bindings
    ]
    assert [repo.run_id for repo in report.repositories] == [r.id for r in runs]
    assert owners.get_owner_binding(ctx, row.id).last_pass == report.to_dict()
    assert [m.binding_id for m in owners.members_of(ctx, row.id)] == [b.id for b in bindings]


def test_a_dry_run_lists_what_would_be_bound_and_writes_nothing(ctx, world):
    """A dry run reports a missing target as would_create, an empty one as would_bind and
    one holding data as a clash, and leaves no owner binding, Binding, Run or repository."""
    source, target = world
    init_bare(target / "beta.git")
    generate(target / "gamma.git", commits=1, branches=0, tags=0)
    before = sorted(os.listdir(target))
    row, report = owners.bind_all(ctx, request(source, target, dry_run=True))
    assert row is None
    assert report is not None
    assert report.dry_run
    assert outcomes(report) == {"alpha": "would_create", "beta": "would_bind", "gamma": "clash"}
    assert sorted(os.listdir(target)) == before
    assert [count(ctx, m) for m in (OwnerBinding, OwnerBindingMember, Binding, Run)] == [0] * 4


def test_a_second_pass_binds_only_the_new_source_repository(ctx, world):
    """After a repository appears in the source, the next pass binds just that one; the
    others are already bound and get no second Binding or Run."""
    source, target = world
    row, _ = owners.bind_all(ctx, request(source, target))
    assert row is not None
    make_sources(source, "delta")
    report = owners.run_pass(ctx, row.id)
    assert outcomes(report) == {
        "alpha": "already_bound",
        "beta": "already_bound",
        "gamma": "already_bound",
        "delta": "created",
    }
    assert (count(ctx, Binding), count(ctx, Run)) == (4, 4)


def test_a_clash_is_reported_and_the_target_left_as_it_was(ctx, world):
    """A target of the same name that holds its own history is no Binding's: the pass
    reports it and writes nothing there, neither ref nor Binding."""
    source, target = world
    generate(target / "beta.git", commits=2, branches=1, tags=0)
    before = refs(target / "beta.git")
    _, report = owners.bind_all(ctx, request(source, target))
    assert report is not None
    assert outcomes(report)["beta"] == "clash"
    assert report.needs_action()
    assert refs(target / "beta.git") == before
    with ctx.db.session() as session:
        targets = session.execute(select(Binding.b_locator)).scalars().all()
    assert str(target / "beta.git") not in targets


def test_an_empty_target_is_bound_and_the_pairs_binding_adopted(ctx, world):
    """An existing empty target is bound as it is; a pair bound before by hand (reposync
    sync) joins the owner binding as it is, with no second Binding and no new Run."""
    source, target = world
    init_bare(target / "alpha.git")
    earlier = bind(ctx, SyncRequest(f"local:{source / 'beta.git'}", f"local:{target / 'beta.git'}"))
    _, report = owners.bind_all(ctx, request(source, target))
    assert report is not None
    assert outcomes(report) == {"alpha": "bound", "beta": "adopted", "gamma": "created"}
    adopted = next(repo for repo in report.repositories if repo.name == "beta")
    assert (adopted.binding_id, adopted.run_id) == (earlier.id, None)
    assert count(ctx, Binding) == 3


def test_deleted_and_gone_repositories_are_reported_never_rebound_nor_unbound(ctx, world):
    """A member whose Binding an operator deleted is not bound again (unbound); a member
    whose source repository disappeared keeps its Binding (gone)."""
    source, target = world
    row, report = owners.bind_all(ctx, request(source, target))
    assert row is not None
    assert report is not None
    bindings = {repo.name: repo.binding_id for repo in report.repositories}
    with ctx.db.transaction() as session:
        session.execute(update(Run).values(status="completed"))
    assert bindings["alpha"] is not None
    delete_binding(ctx, bindings["alpha"])
    (source / "gamma.git").rename(source.parent / "elsewhere.git")
    report = owners.run_pass(ctx, row.id)
    assert outcomes(report) == {"alpha": "unbound", "beta": "already_bound", "gamma": "gone"}
    assert count(ctx, Binding) == 2
    gone = next(repo for repo in report.repositories if repo.name == "gamma")
    assert gone.binding_id == bindings["gamma"]


def test_an_owner_that_is_no_directory_is_refused_with_nothing_written(ctx, tmp_path):
    """bind-all of a missing source owner is OwnerNotFound, before any row is written."""
    with pytest.raises(OwnerNotFound):
        owners.bind_all(ctx, request(tmp_path / "nowhere", tmp_path))
    assert count(ctx, OwnerBinding) == 0


def test_one_pass_at_a_time_and_a_dead_workers_claim_is_taken_over(ctx, world):
    """A pass while another holds the row is OwnerBindingBusy; a claim older than the pass
    timeout is a dead worker's and the next pass takes it."""
    source, target = world
    row, _ = owners.bind_all(ctx, request(source, target))
    assert row is not None
    started = datetime.now(UTC)
    with ctx.db.transaction() as session:
        session.execute(
            update(OwnerBinding).where(OwnerBinding.id == row.id).values(pass_started_at=started)
        )
    with pytest.raises(OwnerBindingBusy):
        owners.run_pass(ctx, row.id)
    stale = started - owners.PASS_TIMEOUT - timedelta(minutes=1)
    with ctx.db.transaction() as session:
        session.execute(
            update(OwnerBinding).where(OwnerBinding.id == row.id).values(pass_started_at=stale)
        )
    assert owners.run_pass(ctx, row.id).counts() == {"already_bound": 3}
    assert owners.get_owner_binding(ctx, row.id).pass_started_at is None


class RecordingDispatcher(NoDispatch):
    def __init__(self) -> None:
        self.passes: list[tuple[int, Trigger]] = []
        self.steps: list[Step] = []

    def dispatch_owner_pass(self, owner_binding_id: int, trigger: Trigger) -> None:
        self.passes.append((owner_binding_id, trigger))

    def dispatch(self, step: Step) -> None:
        self.steps.append(step)


def test_a_scheduled_pass_queues_its_new_members_runs_in_the_background(ctx, world):
    """An operator's bind-all queues its members' first Runs at the interactive priority;
    a scheduled pass's new member waits behind operators' and webhooks' Runs, as the
    scheduler's own Runs do."""
    source, target = world
    dispatcher = RecordingDispatcher()
    ctx.dispatcher = dispatcher
    row, _ = owners.bind_all(ctx, request(source, target))
    assert row is not None
    assert [step.background for step in dispatcher.steps] == [False] * 3
    make_sources(source, "delta")
    report = owners.run_pass(ctx, row.id, trigger=Trigger.SCHEDULE)
    (delta,) = [repo for repo in report.repositories if repo.name == "delta"]
    assert dispatcher.steps[3:] == [
        Step(delta.run_id, Stage.CHECKING_ACCESS, None, background=True)
    ]


def test_the_tick_hands_a_due_pass_to_a_worker_once_per_slot(ctx, world):
    """A pass due on the owner binding's cron is handed on by the tick once; a second
    tick in the same slot, or before the next, hands on nothing."""
    source, target = world
    dispatcher = RecordingDispatcher()
    ctx.dispatcher = dispatcher
    with freeze_time(T0):
        row, _ = owners.bind_all(ctx, request(source, target, pass_cron="*/15 * * * *"))
    assert row is not None
    assert row.next_pass_at == T0 + timedelta(minutes=15)
    with freeze_time(T0 + timedelta(minutes=10)):
        assert owners.tick(ctx) == []
    with freeze_time(T0 + timedelta(minutes=15)):
        assert owners.tick(ctx) == [row.id]
        assert owners.tick(ctx) == []
    assert dispatcher.passes == [(row.id, Trigger.SCHEDULE)]
    assert owners.get_owner_binding(ctx, row.id).next_pass_at == T0 + timedelta(minutes=30)


def test_sync_is_switched_on_once_after_the_first_full_apply(ctx, world):
    """A member's sync is switched on by the tick once its Binding has a full apply in its
    epoch (not before), and not again after an operator switched it off."""
    source, target = world
    _row, report = owners.bind_all(ctx, request(source, target))
    assert report is not None
    first = report.repositories[0].binding_id
    assert first is not None
    with ctx.db.transaction() as session:
        session.execute(update(Run).values(status="completed"))
    assert owners.switch_sync_on(ctx) == []
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding)
            .where(Binding.id == first)
            .values(last_full_apply_epoch=Binding.authority_epoch, last_full_apply_at=T0)
        )
    assert owners.switch_sync_on(ctx) == [first]
    update_binding(ctx, first, sync_enabled=False)
    assert owners.switch_sync_on(ctx) == []


def test_offsets_are_stable_spread_and_within_the_period():
    """Member k's offset does not depend on how many members follow; the first n members'
    offsets are spread over the period (no gap wider than a few even shares)."""
    period = 600
    offsets = [spread("*/10 * * * *", k, T0) for k in range(50)]
    assert offsets[:10] == [spread("*/10 * * * *", k, T0) for k in range(10)]
    assert all(0 <= offset < period for offset in offsets)
    ordered = sorted(offsets)
    gaps = [b - a for a, b in zip(ordered, [*ordered[1:], ordered[0] + period], strict=True)]
    assert max(gaps) <= 3 * period / 50


def test_fifty_bindings_of_one_schedule_start_over_its_period_not_in_one_tick(ctx, tmp_path: Path):
    """Fifty Bindings given one cron start their scheduled Runs spread over its period: no
    tick starts more than a few, and another account's Binding with the same cron gets its
    Run in the tick of its own slot, not one later."""
    cron = "*/10 * * * *"
    names = [f"repo-{n:02d}" for n in range(50)]
    source = make_sources(tmp_path / "src", *names)
    (tmp_path / "dst").mkdir()
    with freeze_time(T0 - timedelta(minutes=30)):
        row, _ = owners.bind_all(
            ctx, request(source, tmp_path / "dst", schedule_cron=cron), queue_runs=False
        )
        other_source = generate(tmp_path / "other.git", commits=1, branches=0, tags=0)
        other = bind(ctx, SyncRequest(f"local:{other_source}", f"local:{tmp_path / 'o.git'}"))
    assert row is not None
    with ctx.db.transaction() as session:  # every Binding had its first full apply
        session.execute(
            update(Binding).values(
                last_full_apply_epoch=Binding.authority_epoch, last_full_apply_at=T0
            )
        )
    with freeze_time(T0 - timedelta(seconds=1)):  # each next slot: its first after T0
        assert len(owners.switch_sync_on(ctx)) == 50
        update_binding(ctx, other.id, schedule_cron=cron, sync_enabled=True)
    per_tick: list[int] = []
    other_started = None
    for minute in range(0, 11):
        with freeze_time(T0 + timedelta(minutes=minute)):
            created = schedules.tick(ctx)
        with ctx.db.session() as session:
            mine = session.execute(
                select(Run.id).where(Run.binding_id == other.id, Run.id.in_(created or [0]))
            ).all()
        if mine and other_started is None:
            other_started = minute
        per_tick.append(len(created))
    assert sum(per_tick) == 51  # each Binding once in the period (and the other's first)
    assert max(per_tick) <= math.ceil(50 / 10) + 3
    assert other_started == 0  # T0 is its slot: its Run starts in that very tick


def test_a_pass_asked_for_whose_message_is_lost_is_handed_on_by_the_tick(ctx, world):
    """A pass asked for on demand is due at once: if its message is lost the next tick
    hands it on; once a pass ran, the tick owes none (no second pass for one request)."""
    source, target = world
    dispatcher = RecordingDispatcher()
    ctx.dispatcher = dispatcher
    row, _ = owners.bind_all(ctx, request(source, target, pass_cron=None), run_now=False)
    assert row is not None
    assert dispatcher.passes == [(row.id, Trigger.MANUAL)]
    assert owners.tick(ctx) == [row.id]  # as if the message had been lost
    assert owners.get_owner_binding(ctx, row.id).next_pass_at is None  # on demand only
    owners.request_pass(ctx, row.id)
    owners.run_pass(ctx, row.id)  # the message arrived: the pass takes the due slot
    assert owners.tick(ctx) == []


def test_binding_the_pair_again_changes_only_what_it_names(ctx, world):
    """bind-all of the same owners again finds their owner binding: a pass schedule, a
    Binding schedule or a policy not named stays as it was; one named replaces it; a new
    owner binding passes hourly unless told otherwise."""
    source, target = world
    first, _ = owners.bind_all(ctx, request(source, target, schedule_cron="*/30 * * * *"))
    assert first is not None
    assert (first.pass_cron, first.schedule_cron) == (owners.DEFAULT_PASS_CRON, "*/30 * * * *")
    again, _ = owners.bind_all(ctx, request(source, target))
    assert again is not None
    assert (again.id, again.pass_cron, again.schedule_cron) == (
        first.id,
        owners.DEFAULT_PASS_CRON,
        "*/30 * * * *",
    )
    quiet, _ = owners.bind_all(ctx, request(source, target, pass_cron=None))
    assert quiet is not None
    assert (quiet.pass_cron, quiet.next_pass_at) == (None, None)
    kept, _ = owners.bind_all(ctx, request(source, target))
    assert kept is not None
    assert kept.pass_cron is None


def test_a_pass_cut_short_keeps_what_it_did_and_the_next_goes_on(ctx, world, monkeypatch):
    """A pass that dies on its second repository (a worker's time limit, a bug) frees its
    claim and keeps its report so far, marked interrupted, and the first repository's
    Binding; the next pass binds the rest, and the first only once."""
    from reposync.service import owner_pass

    source, target = world
    row, _ = owners.bind_all(ctx, request(source, target, dry_run=False), run_now=False)
    assert row is not None
    real = owner_pass._one
    calls: list[str] = []

    def dies_on_the_second(state, repo):  # type: ignore[no-untyped-def]
        calls.append(repo.name)
        if len(calls) == 2:
            raise RuntimeError("SoftTimeLimitExceeded")
        return real(state, repo)

    monkeypatch.setattr(owner_pass, "_one", dies_on_the_second)
    with pytest.raises(RuntimeError):
        owners.run_pass(ctx, row.id)
    kept = owners.get_owner_binding(ctx, row.id)
    assert kept.pass_started_at is None
    assert kept.last_pass is not None
    assert kept.last_pass["error_code"] == "interrupted"
    assert kept.last_pass["counts"] == {"created": 1}
    monkeypatch.setattr(owner_pass, "_one", real)
    report = owners.run_pass(ctx, row.id)
    assert outcomes(report) == {"alpha": "already_bound", "beta": "created", "gamma": "created"}
    assert count(ctx, Binding) == 3
