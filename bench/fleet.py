"""Benchmark: a fleet of Bindings on one PostgreSQL with Redis, beat and 2 workers (issue 26).

The distributed mode for real: ``reposync api`` (gunicorn), two ``celery worker``s (the
first with beat), PostgreSQL and Redis, started from this machine's binaries as the
tests do. N Bindings (default 1,000) between small local repositories:

* creation: ``bind`` of every pair (through the service, one transaction each);
* bootstrap: a full Run of every Binding, all queued at once;
* ``GET /overview`` at rest (median of several);
* a no-change pass: every Binding gets the cron ``* * * * *``; from the next minute's
  slot, how long until the scheduler created the slot's Run of every Binding (the goal:
  all within the minute), and until all of them finished (goal: within 10 minutes);
* during the pass: ``GET /overview`` every second (p50/max; goal < 200 ms), the ticks
  beat sent and what became of them (on time: started within one tick interval of being
  sent; late; lost: expired or never started), from Celery's task events;
* a manual Run of a spare Binding (no schedule) queued mid-pass, against the same Run
  on the idle system: its queue wait (created -> started) and its end to end time.

Timings are printed, never asserted; ``tests/integration/distributed/test_fleet.py`` runs a small
profile of the same code (``Fleet``) and asserts what is not a timing.

    python bench/fleet.py
    python bench/fleet.py --bindings 200 --tick 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select, update  # noqa: E402

from reposync.lifecycle import AuditMode  # noqa: E402
from reposync.models import Binding, Run  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service.accounts.users import create_user, issue_token  # noqa: E402
from reposync.service.bindings import SyncRequest, bind  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.runs import enqueue_run  # noqa: E402
from reposync.tasks.settings import TICK_TASK  # noqa: E402
from tests.servers import PostgresServer, RedisServer, free_port  # noqa: E402
from tests.workers import (  # noqa: E402
    WorkerProcess,
    start_api,
    start_worker,
    wait_for,
    worker_environment,
)

OVERVIEW = "/api/ext/v1/sync/overview"
ACTIVE = ("queued", "running")
#: The overview's largest page (``GET /overview?limit=``, the API's MAX_PAGE).
PAGE = "?limit=200"


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def template_repository(path: Path) -> Path:
    """A small bare repository: two commits on main, one tag."""
    work = path.parent / "template-work"
    git("init", "-q", "-b", "main", str(work))
    for n in range(2):
        (work / "file.txt").write_text(f"content {n}\n")
        git("add", "file.txt", cwd=work)
        git("-c", "user.name=B", "-c", "user.email=b@e", "commit", "-qm", f"c{n}", cwd=work)
    git("tag", "v1", cwd=work)
    git("clone", "-q", "--bare", str(work), str(path))
    shutil.rmtree(work)
    return path


@dataclass
class TickRecord:
    sent: float | None = None
    started: float | None = None
    expired: bool = False


@dataclass
class TickWatch:
    """The ticks beat sends and what becomes of them, from Celery's task events."""

    broker_url: str
    interval: float
    ticks: dict[str, TickRecord] = field(default_factory=dict)
    _receiver: Any = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _record(self, event: dict[str, Any]) -> None:
        kind, uuid = event.get("type"), event.get("uuid")
        if uuid is None:
            return
        with self._lock:
            if kind in ("task-sent", "task-received") and event.get("name") == TICK_TASK:
                record = self.ticks.setdefault(uuid, TickRecord())
                if kind == "task-sent":
                    record.sent = event["timestamp"]
                elif record.sent is None and event.get("expires"):
                    expires = datetime.fromisoformat(event["expires"])
                    record.sent = expires.timestamp() - self.interval
            elif uuid in self.ticks:
                if kind == "task-started":
                    self.ticks[uuid].started = event["timestamp"]
                elif kind == "task-revoked" and event.get("expired"):
                    self.ticks[uuid].expired = True

    def start(self) -> None:
        from celery import Celery

        app = Celery("reposync-fleet-bench", broker=self.broker_url)

        def capture() -> None:
            with app.connection() as connection:
                self._receiver = app.events.Receiver(connection, handlers={"*": self._record})
                self._receiver.capture(limit=None, timeout=None, wakeup=False)

        self._thread = threading.Thread(target=capture, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._receiver is not None:
            self._receiver.should_stop = True

    def between(self, start: float, end: float) -> tuple[int, int, int]:
        """(on time, late, lost) of the ticks sent in [start, end]; one still waiting
        an interval after ``end`` counts as lost."""
        on_time = late = lost = 0
        with self._lock:
            records = [r for r in self.ticks.values() if r.sent and start <= r.sent <= end]
        for record in records:
            assert record.sent is not None
            if record.started is None or record.expired:
                lost += 1
            elif record.started - record.sent <= self.interval:
                on_time += 1
            else:
                late += 1
        return on_time, late, lost


class OverviewSampler:
    """``GET /overview`` once a second in a thread: the latencies, in seconds."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.samples: list[float] = []
        self.paged: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def once(self, session: requests.Session, query: str = "") -> float:
        started = time.perf_counter()
        response = session.get(self.url + query, headers={"Authorization": f"Bearer {self.token}"})
        elapsed = time.perf_counter() - started
        response.raise_for_status()
        return elapsed

    def _loop(self) -> None:
        with requests.Session() as session:
            while not self._stop.is_set():
                self.samples.append(self.once(session))
                self.paged.append(self.once(session, PAGE))
                self._stop.wait(1.0)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[float]:
        self._stop.set()
        self._thread.join(30)
        return self.samples


@dataclass
class PassResult:
    slot: datetime
    bindings: int
    created: int
    created_within_minute: int
    last_created_after: float
    finished_after: float
    ticks: tuple[int, int, int]
    overview: list[float]
    overview_paged: list[float]
    manual_wait: float
    manual_total: float


class Fleet:
    """The processes and the Bindings of one fleet; ``Fleet.up`` starts everything."""

    def __init__(
        self,
        work: Path,
        postgres: PostgresServer,
        broker_url: str,
        tick: float,
        *,
        database: str = "fleet",
        **overrides: str,
    ) -> None:
        from celery import Celery

        from reposync.config import Settings
        from reposync.tasks.base import CeleryDispatcher
        from reposync.tasks.settings import celery_settings

        self.work, self.tick = work, tick
        postgres.admin(f"CREATE DATABASE {database}")
        self.database_url = postgres.database_url(database)
        self.db = Database(self.database_url)
        self.db.upgrade()
        self.broker_url = broker_url
        self.env = worker_environment(
            self.database_url,
            self.broker_url,
            work / "data",
            # Production timings but the tick's (a 3 s lease would flatter nothing).
            REPOSYNC_LEASE_TTL="120",
            REPOSYNC_TICK_INTERVAL=f"{tick:g}",
            REPOSYNC_DISPATCH_GRACE="60",
            REPOSYNC_TASK_SOFT_TIME_LIMIT="300",
            REPOSYNC_TASK_TIME_LIMIT="330",
            REPOSYNC_VISIBILITY_TIMEOUT="400",
            **overrides,
        )
        settings = Settings.from_env(self.env)
        sender = Celery("reposync-fleet-bench", broker=self.broker_url)
        sender.conf.update(celery_settings(settings))
        self.ctx = ServiceContext(
            settings=settings, db=self.db, dispatcher=CeleryDispatcher(sender)
        )
        self.processes: list[WorkerProcess] = []
        self.binding_ids: list[int] = []
        self.spare_id = 0
        self.token = issue_token(self.ctx, create_user(self.ctx, "fleet", role="admin").id)
        self.api_url = ""

    def build(self, count: int) -> float:
        """``count`` Bindings and one spare (no schedule); returns the seconds it took."""
        template = template_repository(self.work / "template.git")
        (self.work / "src").mkdir()
        (self.work / "dst").mkdir()
        started = time.perf_counter()
        for n in range(count + 1):
            source = self.work / "src" / f"{n}.git"
            shutil.copytree(template, source)
            binding = bind(
                self.ctx, SyncRequest(f"local:{source}", f"local:{self.work / 'dst' / f'{n}.git'}")
            )
            self.binding_ids.append(binding.id)
        self.spare_id = self.binding_ids.pop()
        return time.perf_counter() - started

    def up(self, workers: int = 2) -> None:
        for n in range(workers):
            self.processes.append(start_worker(self.env, self.work, f"w{n + 1}", beat=n == 0))
        port = free_port()
        self.processes.append(start_api(self.env, self.work, port))
        self.api_url = f"http://127.0.0.1:{port}{OVERVIEW}"

    def down(self) -> None:
        for process in self.processes:
            process.stop()
        self.db.dispose()

    def active(self) -> int:
        with self.db.session() as session:
            return session.execute(
                select(func.count()).select_from(Run).where(Run.status.in_(ACTIVE))
            ).scalar_one()

    def failed(self) -> int:
        with self.db.session() as session:
            return session.execute(
                select(func.count())
                .select_from(Run)
                .where(Run.status.not_in([*ACTIVE, "completed"]))
            ).scalar_one()

    def bootstrap(self, timeout: float) -> float:
        started = time.perf_counter()
        for binding_id in [*self.binding_ids, self.spare_id]:
            enqueue_run(self.ctx, binding_id, audit_mode=AuditMode.FULL)
        wait_for(lambda: self.active() == 0, timeout, "the bootstrap of every Binding", 1.0)
        if self.failed():
            raise SystemExit(f"{self.failed()} Runs of the bootstrap did not complete")
        return time.perf_counter() - started

    def manual_run(self, timeout: float = 300) -> tuple[float, float]:
        """(queue wait, created -> finished) of a checkpoint Run of the spare Binding."""
        run_id = enqueue_run(self.ctx, self.spare_id, audit_mode=AuditMode.CHECKPOINT).id

        def done() -> bool:
            with self.db.session() as session:
                run = session.get(Run, run_id)
                assert run is not None
                return run.finished_at is not None

        wait_for(done, timeout, "the manual Run", 0.05)
        with self.db.session() as session:
            run = session.get(Run, run_id)
            assert run is not None
            assert run.started_at is not None
            assert run.finished_at is not None
            if run.status != "completed":
                raise SystemExit(f"the manual Run ended {run.status}")
            return (
                (run.started_at - run.created_at).total_seconds(),
                (run.finished_at - run.created_at).total_seconds(),
            )

    def overview(self, rounds: int, query: str = "") -> list[float]:
        sampler = OverviewSampler(self.api_url, self.token)
        with requests.Session() as session:
            sampler.once(session, query)
            return [sampler.once(session, query) for _ in range(rounds)]

    def schedule(self, slot: datetime | None) -> None:
        """Every Binding on ``* * * * *``, its next slot ``slot`` (None: switched off)."""
        with self.db.transaction() as session:
            session.execute(
                update(Binding)
                .where(Binding.id.in_(self.binding_ids))
                .values(
                    sync_enabled=slot is not None,
                    schedule_cron="* * * * *" if slot is not None else None,
                    next_run_at=slot,
                )
            )

    def scheduled_pass(self, slot: datetime, timeout: float) -> PassResult:
        """The Runs of ``slot`` for every Binding, with everything measured meanwhile."""
        watch = TickWatch(self.broker_url, self.tick)
        watch.start()
        sampler = OverviewSampler(self.api_url, self.token)
        sampler.start()
        self.schedule(slot)
        start = slot.timestamp()
        count = len(self.binding_ids)

        def of_slot() -> tuple[int, int, datetime | None, datetime | None]:
            with self.db.session() as session:
                row = session.execute(
                    select(
                        func.count(),
                        func.count(Run.finished_at),
                        func.max(Run.created_at),
                        func.max(Run.finished_at),
                    ).where(Run.scheduled_for == slot)
                ).one()
                return row[0], row[1], row[2], row[3]

        manual: tuple[float, float] | None = None
        deadline = time.time() + timeout
        while True:
            created, finished, _, _ = of_slot()
            if manual is None and created and (finished >= count // 4 or created == count):
                manual = self.manual_run()
            if created == count and finished == count and manual is not None:
                break
            if time.time() > deadline:
                raise SystemExit(f"pass: {created} created, {finished} finished of {count}")
            time.sleep(0.5)
        end = time.time()
        self.schedule(None)
        overview = sampler.stop()
        paged = sampler.paged
        time.sleep(self.tick + 2)  # the last ticks sent have had their interval
        watch.stop()
        with self.db.session() as session:
            lags = [
                (created - slot).total_seconds()
                for created in session.execute(
                    select(Run.created_at).where(Run.scheduled_for == slot)
                ).scalars()
            ]
        _, _, _, last_finished = of_slot()
        assert last_finished is not None
        return PassResult(
            slot=slot,
            bindings=count,
            created=len(lags),
            created_within_minute=sum(1 for lag in lags if lag < 60),
            last_created_after=max(lags),
            finished_after=(last_finished - slot).total_seconds(),
            ticks=watch.between(start, end),
            overview=overview,
            overview_paged=paged,
            manual_wait=manual[0],
            manual_total=manual[1],
        )

    def now(self) -> datetime:
        from reposync.service.pipeline.leases import database_now

        with self.db.session() as session:
            return database_now(session)


@contextmanager
def fleet(tick: float) -> Iterator[Fleet]:
    work = Path(tempfile.mkdtemp(prefix="reposync-fleet-"))
    postgres, redis_server = PostgresServer.start(), RedisServer.start()
    built: Fleet | None = None
    try:
        built = Fleet(work, postgres, redis_server.url + "/0", tick)
        yield built
    finally:
        if built is not None:
            built.down()
        redis_server.stop()
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)


def ms(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    return (
        f"p50 {statistics.median(ordered) * 1000:.0f} ms, "
        f"max {ordered[-1] * 1000:.0f} ms (n={len(ordered)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--tick", type=float, default=15.0, help="tick interval (s)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with fleet(args.tick) as built:
        seconds = built.build(args.bindings)
        print(f"created {args.bindings} Bindings (+1 spare): {seconds:.1f} s", flush=True)
        built.up(args.workers)
        seconds = built.bootstrap(timeout=3600)
        print(f"bootstrap of all: {seconds:.1f} s", flush=True)
        print(f"GET /overview at rest: {ms(built.overview(9))}", flush=True)
        print(f"GET /overview{PAGE} at rest: {ms(built.overview(9, PAGE))}", flush=True)
        idle_wait, idle_total = built.manual_run()
        print(f"manual Run, idle: waited {idle_wait:.2f} s, done after {idle_total:.2f} s")
        now = built.now()
        slot = (now + timedelta(seconds=5)).replace(second=0, microsecond=0) + timedelta(minutes=1)
        print(f"cron * * * * * for all; pass of the slot {slot:%H:%M:%S}", flush=True)
        result = built.scheduled_pass(slot, timeout=1800)
        on_time, late, lost = result.ticks
        print(
            f"slot's Runs created: {result.created}/{result.bindings}, "
            f"{result.created_within_minute} within the minute, last "
            f"{result.last_created_after:.1f} s after the slot"
        )
        print(f"no-change pass of all: finished {result.finished_after:.1f} s after the slot")
        print(f"GET /overview during the pass: {ms(result.overview)}")
        print(f"GET /overview{PAGE} during the pass: {ms(result.overview_paged)}")
        print(
            f"ticks during the pass ({args.tick:g} s): {on_time} on time, {late} late, {lost} lost"
        )
        print(
            f"manual Run mid-pass: waited {result.manual_wait:.2f} s, done after "
            f"{result.manual_total:.2f} s (idle: {idle_wait:.2f} s, {idle_total:.2f} s)"
        )
        print(f"Runs not completed: {built.failed()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
