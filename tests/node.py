"""The JavaScript side of the test suite: packages other people wrote, run with node.

``tests/node/package.json`` pins them (its lock file fixes every transitive version) and
``scripts/test`` installs them with ``npm ci``. A test that needs them fails with the
command that installs them when they are missing; it never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_MODULES = NODE_DIR / "node_modules"


def package_dir(name: str) -> Path:
    """The installed package ``name`` (``@octokit/rest``); a clear failure when absent."""
    where = NODE_MODULES / name
    if not (where / "package.json").is_file():
        raise AssertionError(
            f"the npm package {name} is not installed in {NODE_MODULES}: run ./scripts/test "
            f"(or: npm ci --prefix {NODE_DIR})"
        )
    return where


def package_version(name: str) -> str:
    """The version of the installed package ``name``."""
    version: str = json.loads((package_dir(name) / "package.json").read_text())["version"]
    return version


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise AssertionError("node is not installed: run ./scripts/test (apt-get install nodejs)")
    return found


def run_script(
    script: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with node; returns the finished process (the caller checks it).

    Scripts live in ``tests/node/``: an ES module resolves packages from its own
    directory upwards (``NODE_PATH`` is for CommonJS only)."""
    if script.resolve().parent != NODE_DIR:
        raise AssertionError(f"{script} must live in {NODE_DIR} to find its packages")
    environment = {**os.environ, **(env or {})}
    return subprocess.run(
        [node(), str(script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        cwd=NODE_DIR,
        check=False,
    )


def run_json(script: Path, *args: str, **kwargs: Any) -> Any:
    """Run ``script`` and parse the one JSON document it prints on stdout; its stderr
    is in the failure when it exits non-zero."""
    done = run_script(script, *args, **kwargs)
    if done.returncode != 0:
        raise AssertionError(
            f"node {script.name} exited {done.returncode}:\n{done.stderr[-4000:]}\n"
            f"{done.stdout[-2000:]}"
        )
    return json.loads(done.stdout)
