"""What ``reposync sync`` loads: the embedded sync path imports neither the distributed
mode (Flask, Celery, marshmallow, gunicorn) nor a forge its locators do not name, and a
database already at the newest migration is used without Alembic.

Each process's start-up is part of every command's time (a one-commit checkpoint is
~0.5 s, most of it start-up); what is imported is the behaviour checked here, never how
long it took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.gitrepo import commit_on, generate, init_bare, refs

#: Runs the command line's ``main`` as the ``reposync`` entry point does, then prints
#: the exit status and every module the process imported (``run`` would exit first).
PROBE = """
import contextlib, io, json, sys
from reposync.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""

#: Packages only the distributed mode, the web page or the schedules use.
NOT_FOR_A_SYNC = (
    "flask",
    "flask_smorest",
    "marshmallow",
    "werkzeug",
    "celery",
    "kombu",
    "redis",
    "gunicorn",
    "croniter",
    "reposync.web",
    "reposync.tasks",
)
#: The forges a ``local:`` to ``local:`` sync does not talk to.
OTHER_FORGES = (
    "reposync.providers.github",
    "reposync.providers.forgejo",
    "reposync.providers.gitremote",
)


def _sync_modules(data_dir: Path, source: Path, target: Path) -> set[str]:
    argv = ["--data-dir", str(data_dir), "sync", f"local:{source}", f"local:{target}", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["status"] == 0, done.stderr
    return set(answer["modules"])


def _loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_a_local_sync_imports_no_web_worker_scheduler_or_other_forge(tmp_path):
    """A first ``sync local: local:`` loads the local forge only, no Flask, Celery,
    marshmallow or croniter; its new database is migrated (through Alembic)."""
    source = generate(tmp_path / "src.git", commits=3, branches=2, tags=1)
    target = init_bare(tmp_path / "dst.git")

    modules = _sync_modules(tmp_path / "data", source, target)

    assert refs(target) == refs(source)  # the probe really synced
    assert "reposync.providers.local" in modules
    assert "alembic" in modules  # a new database has its schema only through migrations
    assert _loaded(modules, NOT_FOR_A_SYNC) == []
    assert _loaded(modules, OTHER_FORGES) == []


def test_a_sync_on_a_database_at_the_newest_migration_does_not_load_alembic(tmp_path):
    """The second sync of a pair finds its database migrated and never imports Alembic
    (nor Mako, its templates), and still syncs what changed."""
    source = generate(tmp_path / "src.git", commits=3, branches=2, tags=1)
    target = init_bare(tmp_path / "dst.git")
    data_dir = tmp_path / "data"
    _sync_modules(data_dir, source, target)
    commit_on(source, "refs/heads/main", "a later change")

    modules = _sync_modules(data_dir, source, target)

    assert refs(target) == refs(source)
    assert _loaded(modules, ("alembic", "mako")) == []
    assert _loaded(modules, NOT_FOR_A_SYNC) == []
