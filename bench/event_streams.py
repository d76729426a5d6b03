"""Benchmark: the API's latency with no event streams open, then with 200 (issue 12 #4).

50 streams on one Run once made ``/health`` take 23 s: each stream held a request thread
and polled the database every second. This starts the real ``reposync api`` (gunicorn,
2 processes) on PostgreSQL, times ``/health``, a Run and the overview with no stream
open, then opens 200 streams on one active Run (reconnecting with ``Last-Event-ID`` as a
browser's EventSource does) while events are appended to it, times the same requests
again, and prints both with their ratio (target: the same, within the machine's noise)
and how many events each stream received.

    python bench/event_streams.py
    python bench/event_streams.py --streams 50 --requests 100
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reposync.config import Settings  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service.accounts.users import create_user, issue_token  # noqa: E402
from reposync.service.bindings import SyncRequest, bind  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.events import emit  # noqa: E402
from reposync.service.runs import create_run  # noqa: E402
from tests.gitrepo import generate  # noqa: E402
from tests.servers import PostgresServer, RedisServer, free_port  # noqa: E402
from tests.workers import start_api, worker_environment  # noqa: E402

PREFIX = "/api/ext/v1/sync"


def timings(session: requests.Session, urls: list[str], count: int) -> list[float]:
    """Seconds of ``count`` sequential requests, cycling through ``urls``."""
    seconds = []
    for n in range(count):
        started = time.perf_counter()
        response = session.get(urls[n % len(urls)], timeout=60)
        seconds.append(time.perf_counter() - started)
        response.raise_for_status()
    return seconds


def summary(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


class Follower(threading.Thread):
    """One client following the Run's events, reconnecting like EventSource."""

    def __init__(self, url: str, headers: dict[str, str], stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.headers, self.stop = url, headers, stop
        self.last_id = 0
        self.received = 0
        self.connected = threading.Event()
        self.refused = 0

    def run(self) -> None:
        while not self.stop.is_set():
            headers = {**self.headers, "Accept": "text/event-stream"}
            if self.last_id:
                headers["Last-Event-ID"] = str(self.last_id)
            with requests.get(self.url, headers=headers, stream=True, timeout=60) as response:
                if response.status_code != 200:
                    self.refused += 1
                    time.sleep(1)
                    continue
                self.connected.set()
                for line in response.iter_lines(decode_unicode=True):
                    if line.startswith("id: "):
                        self.last_id = int(line[4:])
                        self.received += 1
                    if self.stop.is_set():
                        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--events-per-second", type=float, default=5.0)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="reposync-bench-streams-"))
    postgres, redis = PostgresServer.start(), RedisServer.start()
    api = None
    try:
        postgres.admin("CREATE DATABASE bench")
        database_url = postgres.database_url("bench")
        db = Database(database_url)
        db.upgrade()
        settings = Settings(data_dir=work / "data", database_url=database_url)
        ctx = ServiceContext(settings=settings, db=db)
        source = generate(work / "src.git", commits=3, branches=1, tags=1)
        binding = bind(ctx, SyncRequest(f"local:{source}", f"local:{work / 'dst.git'}"))
        run = create_run(ctx, binding.id)  # no worker: it stays queued, so active
        admin = create_user(ctx, "bench", role="admin")
        headers = {"Authorization": f"Bearer {issue_token(ctx, admin.id)}"}

        port = free_port()
        env = worker_environment(
            database_url,
            redis.url + "/0",
            work / "api-data",
            REPOSYNC_API_STREAMS_PER_USER=str(args.streams),
            REPOSYNC_LOCAL_ROOTS=str(work),
        )
        api = start_api(env, work, port)
        base = f"http://127.0.0.1:{port}{PREFIX}"
        urls = [f"{base}/health", f"{base}/runs/{run.id}", f"{base}/overview"]
        client = requests.Session()
        client.headers.update(headers)
        timings(client, urls, 30)  # warm both processes' connections and caches
        quiet = timings(client, urls, args.requests)

        stop = threading.Event()
        followers = [
            Follower(f"{base}/runs/{run.id}/events", headers, stop) for _ in range(args.streams)
        ]
        for follower in followers:
            follower.start()
        for follower in followers:
            follower.connected.wait(60)
        connected = sum(f.connected.is_set() for f in followers)

        appended = 0

        def append_events() -> None:
            nonlocal appended
            while not stop.is_set():
                with db.transaction() as session:
                    emit(session, run.id, "progress", "apply", message="bench")
                appended += 1
                stop.wait(1 / args.events_per_second)

        writer = threading.Thread(target=append_events, daemon=True)
        writer.start()
        time.sleep(2)
        busy = timings(client, urls, args.requests)
        time.sleep(2)
        stop.set()
        writer.join()
        received = [f.received for f in followers]

        q50, q95 = summary(quiet)
        b50, b95 = summary(busy)
        print(
            f"streams open: {connected} of {args.streams} (refusals: "
            f"{sum(f.refused for f in followers)})"
        )
        print(f"requests per phase: {args.requests} over {', '.join(u[len(base) :] for u in urls)}")
        print(f"no streams:   p50 {q50 * 1000:7.2f} ms   p95 {q95 * 1000:7.2f} ms")
        print(f"{connected} streams: p50 {b50 * 1000:7.2f} ms   p95 {b95 * 1000:7.2f} ms")
        print(f"ratio with/without streams: p50 {b50 / q50:.2f}   p95 {b95 / q95:.2f}")
        print(
            f"events appended while streaming: {appended}; received per stream: "
            f"min {min(received)} median {statistics.median(received):.0f} max {max(received)}"
        )
    finally:
        if api is not None:
            api.stop()
        redis.stop()
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    main()
