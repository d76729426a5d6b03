"""Leases and fences on real PostgreSQL, under real concurrency (threads, own connections)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text, update

from reposync.errors import LeaseLost
from reposync.lifecycle import Stage
from reposync.models import Binding, Run, RunItem
from reposync.models.db import Database
from reposync.service.pipeline.leases import ClaimRefused, Heartbeat, Lease, claim, fenced


def make_run(db: Database) -> int:
    with db.transaction() as session:
        binding = Binding(
            a_provider="local",
            a_repository_id="a",
            a_locator="/a",
            b_provider="local",
            b_repository_id="b",
            b_locator="/b",
        )
        session.add(binding)
        session.flush()
        run = Run(binding_id=binding.id, source_side="a", target_side="b", authority_epoch=1)
        session.add(run)
        session.flush()
        session.add(
            RunItem(
                run_id=run.id,
                phase=0,
                object_type="git_ref",
                object_key="branch x",
                action="create",
                reason="new",
                intent={},
            )
        )
        return run.id


def claim_first(db: Database, run_id: int, owner: str, ttl: float = 30.0) -> Lease:
    claimed = claim(
        db,
        run_id,
        expected_stage=Stage.CHECKING_ACCESS,
        dispatched_generation=None,
        owner=owner,
        ttl=ttl,
    )
    assert not isinstance(claimed, ClaimRefused), claimed
    return claimed[0]


def expire(db: Database, run_id: int) -> None:
    with db.transaction() as session:
        binding_id = session.execute(select(Run.binding_id).where(Run.id == run_id)).scalar_one()
        session.execute(
            update(Binding)
            .where(Binding.id == binding_id)
            .values(lease_expires_at=datetime.now(UTC) - timedelta(seconds=5))
        )


def item_state(db: Database, run_id: int) -> tuple[str, int | None]:
    with db.session() as session:
        row = session.execute(
            select(RunItem.state, RunItem.applied_generation).where(RunItem.run_id == run_id)
        ).one()
        return row[0], row[1]


def write_item(session, run_id: int, state: str, generation: int) -> None:
    session.execute(
        update(RunItem)
        .where(RunItem.run_id == run_id)
        .values(state=state, applied_generation=generation)
    )


@pytest.mark.postgres
def test_two_workers_race_to_claim_exactly_one_wins(pg_db):
    """Eight threads claim the same queued Run at the same instant: one lease, generation 1."""
    run_id = make_run(pg_db)
    barrier = threading.Barrier(8)
    results: list[object] = []

    def contender(n: int) -> None:
        barrier.wait()
        results.append(
            claim(
                pg_db,
                run_id,
                expected_stage=Stage.CHECKING_ACCESS,
                dispatched_generation=None,
                owner=f"worker-{n}",
                ttl=30,
            )
        )

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    winners = [r for r in results if not isinstance(r, ClaimRefused)]
    assert len(winners) == 1
    with pg_db.session() as session:
        binding = session.execute(select(Binding)).scalar_one()
    assert binding.lease_generation == 1
    assert binding.lease_owner == winners[0][0].owner


@pytest.mark.postgres
def test_stale_holder_cannot_overwrite_the_new_holder(pg_db):
    """w1 holds a fenced transaction; w2's takeover waits for it, then w1 is refused."""
    run_id = make_run(pg_db)
    w1 = claim_first(pg_db, run_id, "w1")
    expire(pg_db, run_id)  # w1 stalled past its lease: anyone may take over now
    fenced_open = threading.Event()
    order: list[str] = []

    def stale_worker() -> None:
        with fenced(pg_db, w1) as session:  # the fence passed before the takeover
            fenced_open.set()
            time.sleep(1.0)
            write_item(session, run_id, "applying", w1.generation)
            order.append("w1 committed")

    thread = threading.Thread(target=stale_worker)
    thread.start()
    fenced_open.wait(5)
    claimed = claim(
        pg_db, run_id, expected_stage=None, dispatched_generation=None, owner="w2", ttl=30
    )
    order.append("w2 claimed")
    thread.join()
    assert not isinstance(claimed, ClaimRefused)
    w2 = claimed[0]
    with fenced(pg_db, w2) as session:
        write_item(session, run_id, "completed", w2.generation)

    # The takeover was ordered after w1's fenced write, never in the middle of it.
    assert order == ["w1 committed", "w2 claimed"]
    assert w2.generation == w1.generation + 1
    assert item_state(pg_db, run_id) == ("completed", w2.generation)
    # And every later write of the stale holder is refused, nothing changes.
    with pytest.raises(LeaseLost), fenced(pg_db, w1) as session:
        write_item(session, run_id, "applying", w1.generation)
    assert item_state(pg_db, run_id) == ("completed", w2.generation)
    assert w1.lost.is_set()


@pytest.mark.postgres
def test_check_then_write_without_the_row_lock_loses_the_new_holders_write(pg_db):
    """Control: the race is real. A plain SELECT check lets a stale write win."""
    run_id = make_run(pg_db)
    w1 = claim_first(pg_db, run_id, "w1")
    expire(pg_db, run_id)
    checked = threading.Event()
    takeover_done = threading.Event()

    def naive_stale_worker() -> None:
        with pg_db.transaction() as session:
            still_mine = session.execute(
                select(Binding.id).where(Binding.lease_generation == w1.generation)
            ).scalar_one_or_none()
            assert still_mine is not None
            checked.set()
            takeover_done.wait(5)
            write_item(session, run_id, "applying", w1.generation)

    thread = threading.Thread(target=naive_stale_worker)
    thread.start()
    checked.wait(5)
    claimed = claim(
        pg_db, run_id, expected_stage=None, dispatched_generation=None, owner="w2", ttl=30
    )
    assert not isinstance(claimed, ClaimRefused)
    with fenced(pg_db, claimed[0]) as session:
        write_item(session, run_id, "completed", claimed[0].generation)
    takeover_done.set()
    thread.join()
    assert item_state(pg_db, run_id) == ("applying", w1.generation)


@pytest.mark.postgres
def test_duplicate_and_stale_claims_are_refused(pg_db):
    """A second delivery of the same step, or one with an old generation, gets no lease."""
    run_id = make_run(pg_db)
    first = claim_first(pg_db, run_id, "w1")
    again = claim(
        pg_db,
        run_id,
        expected_stage=Stage.CHECKING_ACCESS,
        dispatched_generation=None,
        owner="w1-duplicate",
        ttl=30,
    )
    assert isinstance(again, ClaimRefused)
    successor = claim(
        pg_db,
        run_id,
        expected_stage=Stage.CHECKING_ACCESS,
        dispatched_generation=first.generation,
        owner="next",
        ttl=30,
    )
    assert not isinstance(successor, ClaimRefused)
    stale = claim(
        pg_db,
        run_id,
        expected_stage=Stage.CHECKING_ACCESS,
        dispatched_generation=first.generation,
        owner="stale",
        ttl=30,
    )
    assert isinstance(stale, ClaimRefused)
    wrong_stage = claim(
        pg_db,
        run_id,
        expected_stage=Stage.APPLYING,
        dispatched_generation=successor[0].generation,
        owner="x",
        ttl=30,
    )
    assert isinstance(wrong_stage, ClaimRefused)
    with pg_db.session() as session:
        assert session.execute(select(Binding.lease_generation)).scalar_one() == 2


@pytest.mark.postgres
def test_heartbeat_keeps_the_lease_and_notices_a_takeover(pg_db):
    """Renewals keep a short lease alive; after a takeover the heartbeat stops and writes fail."""
    run_id = make_run(pg_db)
    lease = claim_first(pg_db, run_id, "w1", ttl=1.0)
    with Heartbeat(pg_db, lease, interval=0.2):
        time.sleep(2.0)  # twice the TTL
        thief = claim(
            pg_db, run_id, expected_stage=None, dispatched_generation=None, owner="thief", ttl=1.0
        )
        assert isinstance(thief, ClaimRefused)
        lease.check()  # still ours
        with pg_db.transaction() as session:  # someone reclaims by force
            session.execute(text("UPDATE bindings SET lease_generation = lease_generation + 1"))
        deadline = time.monotonic() + 3
        while not lease.lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert lease.lost.is_set()
    with pytest.raises(LeaseLost):
        lease.check()


def test_lease_check_refuses_writes_past_the_local_deadline(ctx):
    """Without renewals, a lease stops allowing external writes before it could expire."""
    lease = Lease(1, 1, "w", 1, ttl=0.3, deadline=0.0)
    lease.extend_from(time.monotonic())
    lease.check()
    time.sleep(0.3)
    with pytest.raises(LeaseLost):
        lease.check()
