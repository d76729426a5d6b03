"""Running ``reposync sync`` as the benchmarks measure it: one process, timed from the
outside, with its peak RSS (the embedded default, as a user would run it).

Its modules run from compiled bytecode, as an installed reposync's do (pip compiles a
wheel's modules at install; the image runs ``compileall``): ``compiled`` compiles the
package and the migrations Alembic loads, once, before the first timed process. This
machine's environment sets ``PYTHONDONTWRITEBYTECODE``, so nothing run from a checkout is
cached: in a checkout ``scripts/test`` never compiled (a new worktree), every timed
process compiled ~140 modules from source, ~0.2 s of each sync's start-up (measured);
the migrations alone cost ~5 ms.
"""

from __future__ import annotations

import compileall
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def compiled() -> None:
    """Compile reposync and its migrations to bytecode (once per bench process)."""
    for directory in (ROOT / "reposync", ROOT / "migrations"):
        if not compileall.compile_dir(directory, quiet=1):
            raise SystemExit(f"cannot compile {directory}")


def timed_sync(source: Path, target: Path, data_dir: Path) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS in bytes, report) of one ``reposync sync`` process."""
    return timed_reposync(f"local:{source}", f"local:{target}", data_dir)


def timed_reposync(
    source: str, target: str, data_dir: Path, env: dict[str, str] | None = None
) -> tuple[float, int, dict]:
    """(wall seconds, peak RSS in bytes, report) of ``reposync sync SOURCE TARGET``, run as
    a user runs it (``env``: extra ``REPOSYNC_*`` settings). The RSS is the largest of the
    process and every child it waited for (git's included)."""
    compiled()
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
