"""The README's first command, ``scripts/demo``, as a new user runs it (issue 25).

Run twice, as people do: each report is clean (no problem on a fresh clone, whose
remote-tracking refs were reported unsupported) and the headings say what each Run is
(the second demo's first Run is no bootstrap).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _demo(tmp_path: Path) -> str:
    """One run of ``scripts/demo`` in this suite's virtualenv, its forge and data in
    ``tmp_path``; its whole output."""
    env = {
        **os.environ,
        "REPOSYNC_VENV": sys.prefix,
        "REPOSYNC_DEMO_DIR": str(tmp_path / "demo"),
        "REPOSYNC_DATA_DIR": str(tmp_path / "data"),
    }
    env.pop("REPOSYNC_DATABASE_URL", None)
    done = subprocess.run(
        [ROOT / "scripts" / "demo"], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_the_demo_twice_reports_no_problem_and_names_each_run(tmp_path):
    """Every report of two demos is clean; the first demo bootstraps, the second says
    its mirror exists, and every Run completes."""
    first = _demo(tmp_path)
    second = _demo(tmp_path)
    for output in (first, second):
        assert "problems:" not in output, output
        assert output.count(": completed") == 3, output
        assert "Traceback" not in output
    assert "== first Run: bootstrap" in first
    assert "bootstrap" not in second.split("== second Run")[0]
    assert "an earlier demo made it" in second
