"""Issue 12 #2: git and a local target's hooks inherit no secret of the worker's, and a
local target's hooks do not run during a sync unless the operator opts in.

Before, a ``pre-receive`` hook of a local target ran as the service's user and saw the
GitHub App's key path, its ids and the broker URL (a token or database URL would have
travelled the same way).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from tests.gitrepo import commit_on, generate

SECRETS = {
    "REPOSYNC_GITHUB_TOKEN": "ghp_must_not_travel",
    "REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH": "/etc/reposync/app.pem",
    "REPOSYNC_BROKER_URL": "redis://:broker-password@broker:6379/0",
    "REPOSYNC_DATABASE_URL": "postgresql://reposync:db-password@db/reposync",
}


@pytest.fixture
def pair(tmp_path: Path, ctx: ServiceContext, monkeypatch) -> tuple[Path, Path, Path]:
    """A synced pair whose target has a pre-receive hook that records its environment."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    target = tmp_path / "dst.git"
    assert sync(ctx, SyncRequest(f"local:{source}", f"local:{target}")).status == "completed"
    seen = tmp_path / "hook-env.txt"
    hook = target / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\nenv > {seen}\ncat > /dev/null\nexit 0\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    commit_on(source, "refs/heads/main", "a change to push")
    return source, target, seen


def test_a_local_targets_hooks_do_not_run_during_a_sync(ctx, pair):
    source, target, seen = pair
    assert sync(ctx, SyncRequest(f"local:{source}", f"local:{target}")).status == "completed"
    assert not seen.exists()


def test_hooks_the_operator_opts_into_see_no_secret(tmp_path, ctx, pair):
    source, target, seen = pair
    opted = ServiceContext(settings=ctx.settings.with_overrides(local_target_hooks=True), db=ctx.db)
    assert sync(opted, SyncRequest(f"local:{source}", f"local:{target}")).status == "completed"
    environment = seen.read_text()
    # The one variable reposync hands its pushes: the standby lock's pass, no secret.
    ours = [line for line in environment.splitlines() if "REPOSYNC_" in line]
    assert ours == ["REPOSYNC_SYNC_PUSH=1"]
    for value in SECRETS.values():
        assert value not in environment
