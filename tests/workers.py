"""Real ``celery worker`` processes for the distributed tests.

Each worker runs in its own session (process group), so a test can SIGKILL the whole
worker, children and ``git`` subprocesses included, exactly like a machine dying.
Timings are shrunk (lease TTL, visibility timeout, restore sweep) so recovery takes
seconds; the invariant soft < hard < visibility timeout still holds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker_environment(
    database_url: str, broker_url: str, data_dir: Path, **overrides: str
) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "REPOSYNC_DATABASE_URL": database_url,
            "REPOSYNC_BROKER_URL": broker_url,
            "REPOSYNC_DATA_DIR": str(data_dir),
            "REPOSYNC_LEASE_TTL": "3",
            "REPOSYNC_TASK_SOFT_TIME_LIMIT": "25",
            "REPOSYNC_TASK_TIME_LIMIT": "30",
            "REPOSYNC_VISIBILITY_TIMEOUT": "40",
            "REPOSYNC_UNACKED_RESTORE_INTERVAL": "1",
            "REPOSYNC_UNACKED_RESTORE_THROTTLE": "1",
            "REPOSYNC_TICK_INTERVAL": "1",
            "REPOSYNC_DISPATCH_GRACE": "5",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.update(overrides)
    return env


@dataclass
class WorkerProcess:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    extra: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL the whole worker: main process, pool children, git subprocesses."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill()


def start_worker(
    env: dict[str, str], log_dir: Path, name: str, *, beat: bool = False
) -> WorkerProcess:
    log_path = log_dir / f"{name}.log"
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
        "1",
        "--without-mingle",
        "--without-gossip",
        "-n",
        f"{name}@%h",
        "--loglevel=INFO",
    ]
    if beat:
        argv += ["-B", "-s", str(log_dir / f"{name}-beat-schedule")]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv,
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = WorkerProcess(name, process, log_path)
    wait_for(
        lambda: "ready." in worker.log() or process.poll() is not None,
        60,
        f"worker {name} to start",
    )
    if process.poll() is not None:
        raise RuntimeError(f"worker {name} exited:\n{worker.log()}")
    return worker


def start_api(env: dict[str, str], log_dir: Path, port: int) -> WorkerProcess:
    """``reposync api`` (gunicorn) in its own process group, ready when /health answers."""
    import requests

    log_path = log_dir / "api.log"
    argv = [sys.executable, "-m", "reposync.cli", "api", "--bind", f"127.0.0.1:{port}"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    api = WorkerProcess("api", process, log_path)

    def healthy() -> bool:
        if process.poll() is not None:
            return True
        try:
            return requests.get(f"http://127.0.0.1:{port}/api/ext/v1/sync/health", timeout=5).ok
        except (requests.ConnectionError, requests.Timeout):  # not up, or a busy machine
            return False

    wait_for(healthy, 60, "the API to answer")
    if process.poll() is not None:
        raise RuntimeError(f"the API exited:\n{api.log()}")
    return api


def wait_for(
    condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.1
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
