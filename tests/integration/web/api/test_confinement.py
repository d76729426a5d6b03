"""Issue 12 #1: ``local:`` locators that arrive over the API stay inside the roots.

Before, an admin token reached the whole filesystem: a target under /etc got refs and a
forge database, any readable repository could be copied out, ``/proc/self/cwd`` bound
the server's own checkout, and refusals said what existed ("... is a file but not a Git
repository").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from flask import Flask

from reposync.config import Settings
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from tests.gitrepo import generate
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    return tmp_path / "roots"


@pytest.fixture
def settings(tmp_path: Path, roots: Path) -> Settings:
    return Settings(data_dir=roots / "data", lease_ttl=30.0, local_roots=(roots,))


@pytest.fixture
def admin(tokens) -> dict[str, str]:
    return bearer(tokens.admin)


def create(client, admin, source: str, target: str):
    return client.post(url("/bindings"), headers=admin, json={"source": source, "target": target})


def test_a_repository_inside_a_root_binds_under_its_real_path(client, admin, roots):
    source = generate(roots / "team" / "app.git", commits=2, branches=0, tags=0)
    (roots / "link").symlink_to(roots / "team")
    response = create(client, admin, f"local:{roots}/link/app.git", f"local:{roots}/mirror.git")
    assert response.status_code == 201, response.json
    assert response.json["source"] == f"local:{source.resolve()}"


@pytest.mark.parametrize(
    "where",
    [
        "outside",  # a repository outside every root
        "file",  # an existing file outside
        "missing",  # nothing at all
        "symlink",  # a link inside a root that leads outside
        "dotdot",  # .. out of a root
        "data_dir",  # the service's own data directory (inside the root)
        "proc_cwd",  # the server's working directory
        "root_itself",  # the root directory is no repository to bind
    ],
)
def test_everything_else_is_refused_alike_and_nothing_is_written(
    client, admin, tmp_path, roots, where
):
    source = generate(roots / "app.git", commits=2, branches=0, tags=0)
    outside = generate(tmp_path / "elsewhere" / "secret.git", commits=2, branches=0, tags=0)
    (tmp_path / "elsewhere" / "notes.txt").write_text("not a repository")
    (roots / "escape").symlink_to(tmp_path / "elsewhere")
    config_before = (outside / "config").read_text()
    locator = {
        "outside": f"local:{outside}",
        "file": f"local:{tmp_path}/elsewhere/notes.txt",
        "missing": f"local:{tmp_path}/elsewhere/nothing.git",
        "symlink": f"local:{roots}/escape/secret.git",
        "dotdot": f"local:{roots}/../elsewhere/secret.git",
        "data_dir": f"local:{roots}/data/stolen.git",
        "proc_cwd": "local:/proc/self/cwd",
        "root_itself": f"local:{roots}",
    }[where]

    as_target = create(client, admin, f"local:{source}", locator)
    as_source = create(client, admin, locator, f"local:{roots}/mirror.git")

    for response in (as_target, as_source):
        problem = assert_problem(response, 403, "locator_refused")
        assert (
            problem["detail"] == f"{locator!r} is not under a repository root this server may use"
        )
    assert (outside / "config").read_text() == config_before  # no repository id written
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["notes.txt", "secret.git"]
    assert not (roots / "mirror.git").exists()
    assert not (roots / "data" / "stolen.git").exists()


def app_with_roots(ctx: ServiceContext, *roots: Path) -> Flask:
    settings = ctx.settings.with_overrides(local_roots=roots)
    return create_app(settings, ctx=ServiceContext(settings=settings, db=ctx.db))


def test_without_roots_the_api_takes_no_local_locators(tmp_path, ctx: ServiceContext, tokens):
    source = generate(tmp_path / "roots" / "app.git", commits=2, branches=0, tags=0)
    response = create(
        app_with_roots(ctx).test_client(),
        bearer(tokens.admin),
        f"local:{source}",
        f"local:{source}.mirror",
    )
    problem = assert_problem(response, 403, "locator_refused")
    assert "no REPOSYNC_LOCAL_ROOTS" in problem["detail"]


def test_the_server_may_not_bind_its_own_code(ctx: ServiceContext, tokens, roots):
    """Even under a root (an operator who roots the whole disk), reposync's own code
    is no repository to sync."""
    import reposync

    own = Path(os.path.realpath(Path(reposync.__file__).parent))
    client = app_with_roots(ctx, Path("/")).test_client()
    response = create(client, bearer(tokens.admin), f"local:{own}", f"local:{roots}/mirror.git")
    assert_problem(response, 403, "locator_refused")
