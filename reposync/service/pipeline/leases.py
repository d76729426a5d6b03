"""Per-Binding leases and the fence around every state write.

The lease is the Binding row's ``lease_owner`` / ``lease_generation`` / ``lease_expires_at``.
Every stage execution *claims* it, which increments the generation, so the generation is
a fencing token (Kleppmann): a duplicate delivery, or a worker that stalled past its
lease, carries an older generation and every write it attempts is refused.

Rules that make this hold under READ COMMITTED (measured in the Celery note, §5.4):

* Claims and renewals are single guarded ``UPDATE … WHERE`` statements: PostgreSQL
  re-evaluates the WHERE on the newest row version, so two claimers cannot both win.
* A fenced transaction starts with ``SELECT … FOR SHARE`` on the Binding row (SQLite:
  ``BEGIN IMMEDIATE``), so a takeover waits until the fenced write committed or sees it
  roll back; a plain check-then-write would let a stale worker overwrite the new holder.
* Expiry is judged on the database's clock, never a worker's.
* The heartbeat renews at a third of the TTL and the local deadline ends a safety margin
  before the expiry it last obtained: a stalled worker stops external writes before
  anyone else may claim.
* The heartbeat also watches for a cancel of the Run (``Lease.cancelled``, every
  ``CANCEL_POLL`` seconds: one primary-key read), so a write that can run for minutes
  (a push) is stopped within seconds of the request rather than at the next batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, func, inspect, or_, select, update
from sqlalchemy.orm import Session

from reposync import metrics, signals
from reposync.errors import LeaseLost, RunCancelled
from reposync.lifecycle import ACTIVE_RUN_STATUSES, RunStatus, Stage
from reposync.models import Binding, Run
from reposync.models.db import Database
from reposync.service.events import emit
from reposync.service.pipeline.holders import holder_gone, holder_name

log = logging.getLogger(__name__)

#: Fraction of the TTL kept as a safety margin before the lease could be taken over.
SAFETY_MARGIN = 0.2
#: Seconds between two looks of a running stage's heartbeat at its Run's cancel request.
CANCEL_POLL = 1.0


def new_owner(label: str = "") -> str:
    """An execution identity: host, process and a random part, for humans and fences,
    and what tells whether the process still runs (``holders``)."""
    return holder_name(label)[:255]


def database_now(session: Session) -> datetime:
    """The database's clock (PostgreSQL), or this host's for the embedded SQLite file."""
    if session.get_bind().dialect.name == "postgresql":
        value: datetime = session.execute(select(func.clock_timestamp())).scalar_one()
        return value.astimezone(UTC)
    return datetime.now(UTC)


@dataclass(slots=True)
class Lease:
    """What an execution holds after a successful claim."""

    binding_id: int
    run_id: int
    owner: str
    generation: int
    ttl: float
    #: ``time.monotonic()`` after which no external write may start.
    deadline: float
    lost: threading.Event = field(default_factory=threading.Event)
    #: Set by the heartbeat once somebody asked the Run to stop (``Heartbeat``).
    cancelled: threading.Event = field(default_factory=threading.Event)

    def check(self) -> None:
        """Call right before every external write (and a signal's interruption that a
        finalizer dropped is raised here again: ``signals.raise_unheard``)."""
        signals.raise_unheard()
        if self.lost.is_set():
            raise LeaseLost(f"lease generation {self.generation} of binding {self.binding_id} lost")
        if time.monotonic() >= self.deadline:
            raise LeaseLost(
                f"lease generation {self.generation} of binding {self.binding_id} is too close "
                "to expiry to start a write"
            )

    def extend_from(self, started: float) -> None:
        self.deadline = started + self.ttl * (1 - SAFETY_MARGIN)

    def check_write(self) -> None:
        """``check``, and stop a write that is running for a Run somebody cancelled (the
        guard of every write: ``reposync.guards``); the caller reads back what it may have
        written."""
        self.check()
        if self.cancelled.is_set():
            raise RunCancelled(f"run {self.run_id} was cancelled while it was writing")


@dataclass(frozen=True, slots=True)
class ClaimRefused:
    reason: str


def _stage_matches(run: Run, expected: Stage | None) -> bool:
    if expected is None:
        return True
    if run.stage == expected.value:
        return True
    return run.stage == Stage.QUEUED.value and expected is Stage.CHECKING_ACCESS


def claim(
    db: Database,
    run_id: int,
    *,
    expected_stage: Stage | None,
    dispatched_generation: int | None,
    owner: str,
    ttl: float,
) -> tuple[Lease, Run] | ClaimRefused:
    """Claim the Run's Binding for one stage execution; bumps the generation.

    Allowed when the Binding's lease is free, expired, or still exactly the one the
    dispatching execution held (``dispatched_generation``: the normal hand-over along
    the chain). Anything else is a duplicate or stale delivery and is refused.
    """
    started = time.monotonic()
    reclaimed = False
    try:
        with db.transaction() as session:
            binding_id = session.execute(
                select(Run.binding_id).where(Run.id == run_id)
            ).scalar_one_or_none()
            if binding_id is None:
                raise _Refuse(f"run {run_id} does not exist")
            # Lock order everywhere: the Binding row first, then the Run row.
            now = database_now(session)
            previous = session.execute(
                select(Binding.lease_owner, Binding.lease_run_id, Binding.lease_generation).where(
                    Binding.id == binding_id
                )
            ).one()
            allowed = [Binding.lease_run_id.is_(None), Binding.lease_expires_at < now]
            if holder_gone(previous.lease_owner):  # a process of this machine that died
                allowed.append(Binding.lease_owner == previous.lease_owner)
            if dispatched_generation is not None:
                allowed.append(
                    (Binding.lease_run_id == run_id)
                    & (Binding.lease_generation == dispatched_generation)
                )
            generation = _take(
                session, binding_id, or_(*allowed), run_id, owner, now + timedelta(seconds=ttl)
            )
            if generation is None:
                raise _Refuse(f"binding {binding_id} is leased by another execution")
            run = session.execute(
                select(Run).where(Run.id == run_id).with_for_update()
            ).scalar_one()
            if run.status not in ACTIVE_RUN_STATUSES:
                raise _Refuse(f"run {run_id} is {run.status}")
            if not _stage_matches(run, expected_stage):
                raise _Refuse(f"run {run_id} is at {run.stage}, not {expected_stage}")
            if run.stage == Stage.QUEUED.value:
                run.stage = Stage.CHECKING_ACCESS.value
            run.status = RunStatus.RUNNING.value
            run.started_at = run.started_at or now
            run.lease_generation = generation
            run.stage_attempts += 1
            session.flush()
            if previous.lease_run_id == run_id and previous.lease_generation != (
                dispatched_generation
            ):
                # Not the hand-over along the chain: whoever held this Run stopped.
                reclaimed = True
                emit(
                    session,
                    run_id,
                    "lease_reclaimed",
                    run.stage,
                    generation=generation,
                    counts={"previous_generation": previous.lease_generation},
                    message=f"{owner} took over from {previous.lease_owner}, whose lease "
                    f"(generation {previous.lease_generation}) had expired or was given up, "
                    "or whose process had ended",
                )
            session.expunge(run)
    except _Refuse as refused:  # the transaction rolled back: the generation is untouched
        return ClaimRefused(str(refused))
    if reclaimed:  # counted once committed
        metrics.record_lease_reclaim(run.stage)
    lease = Lease(run.binding_id, run_id, owner, generation, ttl, deadline=0.0)
    lease.extend_from(started)
    return lease, run


class _Refuse(Exception):
    pass


def renew(db: Database, lease: Lease) -> bool:
    """Extend the lease; False (and ``lease.lost`` set) when the generation moved on."""
    started = time.monotonic()
    with db.transaction() as session:
        now = database_now(session)
        renewed = session.execute(
            update(Binding)
            .where(
                Binding.id == lease.binding_id,
                Binding.lease_owner == lease.owner,
                Binding.lease_generation == lease.generation,
            )
            .values(lease_expires_at=now + timedelta(seconds=lease.ttl))
            .returning(Binding.id)
        ).scalar_one_or_none()
    if renewed is None:
        lease.lost.set()
        return False
    lease.extend_from(started)
    return True


def fence(session: Session, lease: Lease) -> None:
    """First statement of every fenced transaction: still ours, and locked until commit."""
    held = session.execute(
        select(Binding.id)
        .where(
            Binding.id == lease.binding_id,
            Binding.lease_owner == lease.owner,
            Binding.lease_generation == lease.generation,
        )
        .with_for_update(read=True)
    ).scalar_one_or_none()
    if held is None:
        lease.lost.set()
        raise LeaseLost(
            f"binding {lease.binding_id} was reclaimed; generation {lease.generation} may not write"
        )


@contextmanager
def fenced(db: Database, lease: Lease) -> Iterator[Session]:
    """A short transaction that commits only while ``lease`` is the Binding's lease."""
    with db.transaction() as session:
        fence(session, lease)
        yield session


def give_up(db: Database, run_id: int, generation: int, reason: str) -> bool:
    """End the lease of ``generation`` now, keeping the Run as it is, so the next
    execution claims at once: for an execution that stops without finishing its stage
    (Ctrl-C, a shutdown), where waiting out the TTL would only delay the resume.
    Whatever it left mid-write is settled by read-back when the Run resumes.
    """
    with db.transaction() as session:
        now = database_now(session)
        ended = session.execute(
            update(Binding)
            .where(Binding.lease_run_id == run_id, Binding.lease_generation == generation)
            .values(lease_expires_at=now)
            .returning(Binding.id)
        ).scalar_one_or_none()
        if ended is None:
            return False
        stage = session.execute(select(Run.stage).where(Run.id == run_id)).scalar_one()
        emit(session, run_id, "interrupted", stage, generation=generation, message=reason)
    return True


def release(session: Session, lease: Lease) -> None:
    """Give the Binding back (inside the fenced transaction that finishes the Run)."""
    session.execute(
        update(Binding)
        .where(Binding.id == lease.binding_id, Binding.lease_generation == lease.generation)
        .values(lease_owner=None, lease_run_id=None, lease_expires_at=None)
    )


class Heartbeat:
    """Renews a lease in a background thread while a stage runs.

    It stops renewing on the first refusal, and it gives up (without renewing further)
    when a renewal fails for a database error until the local deadline passes: the stage
    then fails its next ``Lease.check()`` before it can write after expiry.

    With ``watch_cancel`` it also reads the Run's cancel request every ``CANCEL_POLL``
    seconds and sets ``lease.cancelled`` once there is one.
    """

    def __init__(
        self, db: Database, lease: Lease, interval: float, *, watch_cancel: bool = False
    ) -> None:
        self._db = db
        self._lease = lease
        self._interval = interval
        self._watch_cancel = watch_cancel
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"lease-heartbeat-{lease.binding_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)

    def _loop(self) -> None:
        tick = min(self._interval, CANCEL_POLL) if self._watch_cancel else self._interval
        renew_at = time.monotonic() + self._interval
        while not self._stop.wait(tick):
            if self._watch_cancel and not self._lease.cancelled.is_set():
                self._look_for_cancel()
            if time.monotonic() < renew_at:
                continue
            renew_at = time.monotonic() + self._interval
            try:
                if not renew(self._db, self._lease):
                    log.warning("lease %s lost; heartbeat stops", self._lease.generation)
                    return
            except Exception:  # a database outage: keep trying until the deadline passes
                log.exception("lease renewal failed")
                if time.monotonic() >= self._lease.deadline:
                    self._lease.lost.set()
                    return

    def _look_for_cancel(self) -> None:
        try:
            with self._db.session() as session:
                asked = session.execute(
                    select(Run.cancel_requested_at).where(Run.id == self._lease.run_id)
                ).scalar_one_or_none()
        except Exception:  # the renewal says what a database outage means
            log.debug("could not read run %s's cancel request", self._lease.run_id)
            return
        if asked is not None:
            log.info("run %s: cancel requested; a running write stops", self._lease.run_id)
            self._lease.cancelled.set()


def claim_binding(
    db: Database, binding_id: int, run_id: int, *, owner: str, ttl: float
) -> Lease | ClaimRefused:
    """Claim a Binding for work outside a Run's pipeline (recovery, the handoff switch).

    Only a free or expired lease can be taken: an active Run keeps its Binding.
    """
    started = time.monotonic()
    with db.transaction() as session:
        now = database_now(session)
        free = or_(Binding.lease_run_id.is_(None), Binding.lease_expires_at < now)
        generation = _take(session, binding_id, free, run_id, owner, now + timedelta(seconds=ttl))
    if generation is None:
        return ClaimRefused(f"binding {binding_id} is leased by a running execution")
    lease = Lease(binding_id, run_id, owner, generation, ttl, deadline=0.0)
    lease.extend_from(started)
    return lease


def _take(
    session: Session,
    binding_id: int,
    allowed: ColumnElement[bool],
    run_id: int,
    owner: str,
    expires_at: datetime,
) -> int | None:
    """The one guarded UPDATE every claim is: next generation, or None when not allowed."""
    return session.execute(
        update(Binding)
        .where(Binding.id == binding_id, allowed)
        .values(
            lease_generation=Binding.lease_generation + 1,
            lease_owner=owner,
            lease_run_id=run_id,
            lease_expires_at=expires_at,
        )
        .returning(Binding.lease_generation)
    ).scalar_one_or_none()


def interrupted(run: Run, now: datetime | None = None) -> bool:
    """Whether ``run`` is ``running`` although nobody executes it any more: its lease ran
    out, was given up (a ``reposync sync`` stopped by a signal) or is held by a process
    of this host that has ended. Its status stays ``running`` (the Run goes on where it
    stopped once resumed: the next ``reposync sync`` of the pair, or a worker's recovery
    tick); this is what a listing adds so nobody takes it for one making progress.

    On this host's clock (a display, never a fence). A Run read without its lease
    columns (just created) is not judged.
    """
    if run.status != RunStatus.RUNNING.value:
        return False
    if {"lease_holder", "lease_held_until"} & inspect(run).unloaded:
        return False
    if run.lease_held_until is None:  # no lease names this Run
        return True
    return run.lease_held_until <= (now or datetime.now(UTC)) or holder_gone(run.lease_holder)
