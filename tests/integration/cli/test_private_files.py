"""Issue 12 #8: the database, the forge database and the HTTP cache are the service
user's alone (they were created world-readable under the usual umask 022)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.models.db import Database
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from tests.github_env import embedded_world
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import populate


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_embedded_database_and_a_forge_store_are_private(tmp_path, settings, usual_umask):
    db = Database(f"sqlite:///{tmp_path / 'state' / 'reposync.db'}")
    db.upgrade()
    try:
        ctx = ServiceContext(settings=settings, db=db)
        source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
        populate(source)
        target = tmp_path / "dst.git"
        assert sync(ctx, SyncRequest(f"local:{source}", f"local:{target}")).status == "completed"
    finally:
        db.dispose()
    assert mode(tmp_path / "state") == 0o700
    assert mode(tmp_path / "state" / "reposync.db") == 0o600
    assert mode(target / "reposync") == 0o700
    assert mode(target / "reposync" / "forge.db") == 0o600


def test_the_github_http_cache_is_private(tmp_path, github_fake, usual_umask):
    github_fake.state.create_repo("acme/cache", private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
        assert sync(ctx, SyncRequest(f"local:{source}", "github:acme/cache")).status == (
            "completed"
        )
        cache = ctx.settings.data_dir / "http-cache" / "github"
        files = [p for p in cache.rglob("*") if p.is_file()]
        directories = [p for p in cache.rglob("*") if p.is_dir()]
    assert files
    assert {mode(p) for p in files} == {0o600}
    assert {mode(p) for p in directories} == {0o700}
