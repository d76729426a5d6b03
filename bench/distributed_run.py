"""Benchmark: Runs of forge objects on PostgreSQL + Redis with 1 worker, then with 2
(issue 26: "one Run with 2 workers is never slower than with 1"; "N Runs scale with
workers up to the cores").

A local forge of ``--issues`` issues with ``--comments-per-issue`` comments each (80,000
objects by default, ``bench/metadata_sync.py``'s generator) is synced by a full Run to an
empty local forge, with real ``celery worker`` processes (concurrency 1 each, as the
tests start them); each round has its own database and target. With ``--runs N`` each
round binds the source to N empty targets and queues their N Runs at once. Prints the
seconds of each round, from the Runs queued to the last completed, their ratio, and with
N > 1 the throughput (objects synced per second over all Runs) and its speed-up.

    python bench/distributed_run.py
    python bench/distributed_run.py --issues 2000 --workers 1 2 3
    python bench/distributed_run.py --issues 5000 --runs 2
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from bench.metadata_sync import build_forge  # noqa: E402
from reposync.lifecycle import AuditMode  # noqa: E402
from reposync.models import Run  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service.bindings import SyncRequest, bind  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.runs import enqueue_run  # noqa: E402
from tests.servers import PostgresServer, RedisServer  # noqa: E402
from tests.workers import start_worker, wait_for, worker_environment  # noqa: E402


def one_round(
    work: Path, postgres: PostgresServer, broker_url: str, source: Path, workers: int, runs: int
) -> float:
    from celery import Celery

    from reposync.config import Settings
    from reposync.tasks.base import CeleryDispatcher
    from reposync.tasks.settings import celery_settings

    name = f"run_{workers}"
    postgres.admin(f"CREATE DATABASE {name}")
    database_url = postgres.database_url(name)
    db = Database(database_url)
    db.upgrade()
    env = worker_environment(
        database_url,
        broker_url,
        work / name,
        REPOSYNC_LEASE_TTL="120",
        REPOSYNC_TICK_INTERVAL="15",
        REPOSYNC_TASK_SOFT_TIME_LIMIT="300",
        REPOSYNC_TASK_TIME_LIMIT="330",
        REPOSYNC_VISIBILITY_TIMEOUT="400",
    )
    settings = Settings.from_env(env)
    sender = Celery("reposync-run-bench", broker=broker_url)
    sender.conf.update(celery_settings(settings))
    ctx = ServiceContext(settings=settings, db=db, dispatcher=CeleryDispatcher(sender))
    processes = [start_worker(env, work, f"{name}-w{n + 1}", beat=n == 0) for n in range(workers)]
    try:
        bindings = [
            bind(ctx, SyncRequest(f"local:{source}", f"local:{work / f'{name}.target{n}'}"))
            for n in range(runs)
        ]
        started = time.perf_counter()
        run_ids = [
            enqueue_run(ctx, binding.id, audit_mode=AuditMode.FULL).id for binding in bindings
        ]

        def ended() -> bool:
            with db.session() as session:
                finished = session.execute(
                    select(func.count()).where(Run.id.in_(run_ids), Run.finished_at.is_not(None))
                ).scalar_one()
                return finished == len(run_ids)

        wait_for(ended, 3600, f"the Runs with {workers} worker(s)", 0.2)
        seconds = time.perf_counter() - started
        with db.session() as session:
            for run_id in run_ids:
                run = session.get(Run, run_id)
                assert run is not None
                if run.status != "completed":
                    raise SystemExit(f"a Run with {workers} worker(s) ended {run.status}")
        return seconds
    finally:
        for process in processes:
            process.stop()
        db.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=20_000)
    parser.add_argument("--comments-per-issue", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=1, help="Runs queued at once per round")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reposync-run-bench-"))
    postgres, redis_server = PostgresServer.start(), RedisServer.start()
    try:
        source = work / "source"
        took = build_forge(
            source,
            issues=args.issues,
            comments_per_issue=args.comments_per_issue,
            labels=200,
            milestones=50,
        )
        objects = 200 + 50 + args.issues * (1 + args.comments_per_issue)
        print(f"source forge of {objects:,} objects built in {took:.1f} s", flush=True)
        results = {}
        for workers in args.workers:
            results[workers] = one_round(
                work, postgres, redis_server.url + "/0", source, workers, args.runs
            )
            rate = objects * args.runs / results[workers]
            print(
                f"{workers} worker(s), {args.runs} Run(s): {results[workers]:.1f} s, "
                f"{rate:,.0f} objects/s",
                flush=True,
            )
        first = args.workers[0]
        for workers, seconds in results.items():
            if workers != first:
                print(
                    f"{workers} workers / {first}: {seconds / results[first]:.2f}x the time, "
                    f"{results[first] / seconds:.2f}x the throughput"
                )
    finally:
        redis_server.stop()
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
