"""``git:`` locators over the API: the service's own Git credentials reach only remotes
under ``REPOSYNC_GIT_REMOTE_PREFIXES``, and a refused remote is never contacted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reposync.config import Settings
from tests.gitrepo import generate
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    return tmp_path / "roots"


@pytest.fixture
def settings(tmp_path: Path, roots: Path, git_server) -> Settings:
    return Settings(
        data_dir=roots / "data",
        lease_ttl=30.0,
        local_roots=(roots,),
        git_remote_prefixes=(f"{git_server.base_url}/acme/",),
    )


def create(client, token: str, source: str, target: str):
    return client.post(
        url("/bindings"), headers=bearer(token), json={"source": source, "target": target}
    )


def test_a_remote_under_a_prefix_binds_and_one_outside_is_never_contacted(
    client, tokens, roots, git_server, git_home
):
    """Under the listed prefix the Binding is made (the server was asked); outside it,
    403 locator_refused and the server saw no request at all."""
    source = generate(roots / "app.git", commits=2, branches=0, tags=0)
    for name in ("acme/app.git", "other/app.git"):
        path = git_server.repository(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)

    refused = create(
        client, tokens.admin, f"local:{source}", "git:" + git_server.url("other/app.git")
    )

    assert_problem(refused, 403, "locator_refused")
    assert git_server.requests == []

    made = create(client, tokens.admin, f"local:{source}", "git:" + git_server.url("acme/app.git"))

    assert made.status_code == 201, made.json
    assert made.json["target"] == "git:" + git_server.url("acme/app.git")
    assert git_server.requests
    assert all(r.path.startswith("/acme/app.git/") for r in git_server.requests)
