"""A busy worker survives a broker crash: Redis SIGKILLed and restarted mid-task.

The operator's report: every worker that was executing a task exited when Redis
restarted (``Restoring 1 unacknowledged message(s)``, then ``Unrecoverable error:
AttributeError("'NoneType' object has no attribute 'hostname'")``), idle ones
survived, and the Run stayed stuck. reposync.tasks.broker explains the kombu bug.

Here a real ``celery worker`` with two pool processes (like ``reposync worker`` on a
machine with several CPUs: one process busy, one free, so a BRPOP is outstanding when
the broker dies, which the bug needs) is held inside a real ``git push`` by a
pre-receive hook that waits for the test. Redis is SIGKILLed and restarted on the same
port from its append-only file, then the push is let go. The worker must still be
running and the Run must converge by itself.

The test has a Redis server of its own (``broker_url`` below), so killing it does not
disturb the session's server that the other tests share.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.service.bindings import SyncRequest, bind
from reposync.service.runs import enqueue_run
from tests.gitrepo import generate, init_bare, install_gate_hook, refs
from tests.integration.conftest import TERMINAL, run_row
from tests.servers import RedisServer
from tests.workers import ROOT, WorkerProcess, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own, even when REPOSYNC_TEST_REDIS_URL names a
    shared one (as .ci/run does): that one must not be killed under other tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("REPOSYNC_TEST_REDIS_URL", raising=False)
        server = RedisServer.start()
    yield server
    server.stop()


@pytest.fixture
def broker_url(own_redis: RedisServer) -> str:
    """Overrides the shared broker: this test kills its Redis."""
    return own_redis.url + "/0"


def synced(path: Path) -> dict[str, str]:
    return {k: v for k, v in refs(path).items() if k.startswith(("refs/heads/", "refs/tags/"))}


def start_busy_capable_worker(env: dict[str, str], log_dir: Path) -> WorkerProcess:
    """``celery worker`` with two pool processes and beat (the recovery tick), in its
    own session; tests.workers.start_worker runs one process, where the bug hides."""
    log_path = log_dir / "w1.log"
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "reposync.tasks.app",
        "worker",
        "-P",
        "prefork",
        "-c",
        "2",
        "--without-mingle",
        "--without-gossip",
        "-n",
        "w1@%h",
        "--loglevel=INFO",
        "-B",
        "-s",
        str(log_dir / "w1-beat-schedule"),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    worker = WorkerProcess("w1", process, log_path)
    wait_for(
        lambda: "ready." in worker.log() or process.poll() is not None, 60, "the worker to start"
    )
    assert process.poll() is None, f"the worker exited:\n{worker.log()}"
    return worker


def test_a_busy_worker_survives_a_redis_crash_and_the_run_converges(
    tmp_path, own_redis, dctx, env, workers
):
    source = generate(tmp_path / "src.git", commits=120, branches=100, tags=50)
    target = init_bare(tmp_path / "dst.git")
    entered, gate = tmp_path / "push-entered", tmp_path / "push-gate"
    install_gate_hook(target, entered, gate)
    binding = bind(dctx, SyncRequest(f"local:{source}", f"local:{target}"))
    worker = start_busy_capable_worker(env, tmp_path)
    workers.append(worker)

    run = enqueue_run(dctx, binding.id)
    wait_for(entered.exists, 60, "the worker to be busy inside a push")

    own_redis.crash()
    wait_for(
        lambda: "Connection to broker lost" in worker.log() or worker.process.poll() is not None,
        60,
        "the worker to notice that the broker is gone",
    )
    own_redis.restart()
    gate.touch()  # the held push may go on now

    # Wait for the Run, or stop early if the worker died (the bug): then nothing
    # would ever finish it.
    wait_for(
        lambda: run_row(dctx, run.id).status in TERMINAL or worker.process.poll() is not None,
        180,
        f"run {run.id} to finish",
    )
    log = worker.log()
    assert worker.process.poll() is None, f"the worker exited:\n{log}"
    assert "Unrecoverable error" not in log, log
    finished = run_row(dctx, run.id)
    assert finished.status == "completed", finished.report
    assert finished.stage == "completed"
    assert synced(target) == synced(source)
