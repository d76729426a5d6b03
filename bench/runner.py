"""Running ``reposync sync`` as the benchmarks measure it: one process, timed from the
outside, with its peak RSS (the embedded default, as a user would run it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed_sync(source: Path, target: Path, data_dir: Path) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS in bytes, report) of one ``reposync sync`` process."""
    return timed_reposync(f"local:{source}", f"local:{target}", data_dir)


def timed_reposync(
    source: str, target: str, data_dir: Path, env: dict[str, str] | None = None
) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS in bytes, report) of ``reposync sync SOURCE TARGET``, run as
    a user runs it (``env``: extra ``REPOSYNC_*`` settings). The RSS is the largest of the
    process and every child it waited for (git's included)."""
    argv = [
        sys.executable,
        "-m",
        "reposync",
        "--data-dir",
        str(data_dir),
        "sync",
        source,
        target,
        "--json",
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            argv, stdout=out, stderr=err, cwd=ROOT, env={**os.environ, **(env or {})}
        )
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"sync failed: {err.read().decode()}{text}")
    return elapsed, usage.ru_maxrss * 1024, json.loads(text)
