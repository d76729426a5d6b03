"""``reposync.metrics``'s multi-process setup, in a fresh interpreter each (it changes
prometheus_client's storage for the whole process): directories per main process,
cleaned at start, and a sum over forked children."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from reposync import metrics

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from reposync import metrics
    from reposync.web.endpoints.metrics import FilesCollector

    base = Path(sys.argv[1])
    own = metrics.setup_multiprocess(base, "worker")
    children = []
    for n in (1, 2):
        pid = os.fork()
        if pid == 0:  # a pool process: counts for itself, then ends
            metrics.record_run_finished("completed", "manual")
            metrics.record_items({("issue", "failed"): n})
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
        metrics.process_dead(pid)
    metrics.record_run_finished("failed", "schedule")
    found = {}
    for family in FilesCollector(base).collect():
        for s in family.samples:
            found[s.name + json.dumps(sorted(s.labels.items()))] = s.value
    print(json.dumps({"own": str(own), "files": sorted(p.name for p in own.iterdir()),
                      "found": found}))
    """
)


def run(base: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(metrics.MULTIPROC_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(base)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_forked_children_are_summed_across_directories(tmp_path: Path):
    other = tmp_path / f"api-{socket.gethostname()}-{os.getpid()}"
    other.mkdir(parents=True)
    result = run(tmp_path)
    found = result["found"]
    assert (
        found['reposync_runs_finished_total[["status", "completed"], ["trigger", "manual"]]'] == 2
    )
    assert found['reposync_runs_finished_total[["status", "failed"], ["trigger", "schedule"]]'] == 1
    assert found['reposync_items_settled_total[["object_type", "issue"], ["state", "failed"]]'] == 3
    assert len([f for f in result["files"] if f.startswith("counter_")]) == 3  # 3 processes
    assert Path(result["own"]).parent == tmp_path


def test_start_cleans_its_own_and_dead_directories_of_its_role_only(tmp_path: Path):
    host = socket.gethostname()
    dead = tmp_path / f"worker-{host}-{dead_pid()}"
    alive = tmp_path / f"worker-{host}-{os.getpid()}"  # this test's process: alive
    api = tmp_path / f"api-{host}-{dead_pid()}"
    elsewhere = tmp_path / f"worker-another-host-{dead_pid()}"
    for directory in (dead, alive, api, elsewhere):
        directory.mkdir()
        (directory / "counter_1.db").write_bytes(b"")
    result = run(tmp_path)
    assert not dead.exists()
    assert alive.exists()
    assert api.exists()
    assert elsewhere.exists()
    assert Path(result["own"]).name.startswith(f"worker-{host}-")
