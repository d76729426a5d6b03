"""Shared fixtures: real servers, databases migrated through Alembic, Git repositories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import freezegun
import pytest

from reposync.config import Settings
from reposync.models.db import Database
from reposync.service.context import ServiceContext
from tests.servers import REDIS_DB, TEMPLATE, PostgresServer, RedisServer, database_name

# freezegun's freeze_time reads an attribute of every loaded module to find the ones that
# hold time functions; pyforgejo's client (the Forgejo test server's tests load it) builds
# a pydantic model when one of its attributes is read, which fails on freezegun's fake
# datetime and broke every frozen test that ran after it. Those modules hold no clock.
freezegun.configure(extend_ignore_list=["pyforgejo", "pydantic", "pydantic_core"])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer.start()
    server.admin(f"DROP DATABASE IF EXISTS {TEMPLATE}")
    server.admin(f"CREATE DATABASE {TEMPLATE}")
    template = Database(server.database_url(TEMPLATE))
    template.upgrade()  # the schema exists only through migrations
    template.dispose()
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, fully migrated PostgreSQL database for one test."""
    name = database_name("test")
    postgres_server.admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    yield postgres_server.database_url(name)
    postgres_server.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer.start()
    yield server
    server.stop()


@pytest.fixture
def broker_url(redis_server: RedisServer) -> str:
    import redis

    url = f"{redis_server.url}/{REDIS_DB}"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", lease_ttl=30.0)


@pytest.fixture
def sqlite_db(settings: Settings) -> Iterator[Database]:
    db = Database(settings.effective_database_url)
    db.upgrade()
    yield db
    db.dispose()


@pytest.fixture
def ctx(settings: Settings, sqlite_db: Database) -> ServiceContext:
    """The embedded mode: SQLite, stages executed in this process."""
    return ServiceContext(settings=settings, db=sqlite_db)


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[Database]:
    db = Database(pg_url)
    yield db
    db.dispose()


@pytest.fixture
def pg_ctx(settings: Settings, pg_db: Database) -> ServiceContext:
    return ServiceContext(
        settings=settings.with_overrides(
            database_url=pg_db.url.render_as_string(hide_password=False)
        ),
        db=pg_db,
    )


@pytest.fixture
def github_fake():
    """A GitHub-faithful server (REST, uploads, Git smart HTTP), contract-checked."""
    from tests.fakes.github import GitHubFake

    with GitHubFake() as fake:
        yield fake
        fake.assert_clean(requests_too=True)


@pytest.fixture
def forgejo_fake():
    """A Forgejo-faithful server (REST API, Git smart HTTP, LFS, webhooks), contract-checked."""
    from tests.fakes.forgejo import ForgejoFake

    with ForgejoFake() as fake:
        yield fake
        fake.assert_clean(requests_too=True)


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[Any]:
    """A plain Git server over HTTP (``git http-backend`` and an LFS server), users
    ``alice`` (may push) and ``bob`` (may read)."""
    from tests.fakes.gitserver.plain import GitHttpServer

    server = GitHttpServer(tmp_path / "git-server")
    server.add_user("alice", "alice-secret")
    server.add_user("bob", "bob-secret", write=False)
    yield server
    server.close()


@pytest.fixture
def git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git_server: Any) -> Path:
    """This process's ``HOME`` for git: the ``store`` credential helper answers ``alice``
    for the Git server (what an operator configures for the service's user)."""
    from tests.fakes.gitserver.plain import client_home

    home = client_home(
        tmp_path / "git-home", [f"http://alice:alice-secret@127.0.0.1:{git_server.port}"]
    )
    monkeypatch.setenv("HOME", str(home))
    return home
