"""Wiring reposync to the Forgejo test server: its instance in the settings, sessions
whose every exchange is checked against Forgejo's description, an embedded world."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import requests

from reposync.config import Settings
from reposync.forge_instances import ForgejoInstance, instance_name
from reposync.models.db import Database
from reposync.providers.base import ProviderEnvironment
from reposync.service.context import ServiceContext
from tests.fakes.forgejo import ForgejoFake


def instance(
    fake: ForgejoFake, token: str, accounts: Mapping[str, str] | None = None
) -> ForgejoInstance:
    """The test server as a configured instance (named by its address, as people would)."""
    name = instance_name(fake.root_url.split("://", 1)[1])
    return ForgejoInstance(name, fake.root_url, token, dict(accounts or {}))


def locator(fake: ForgejoFake, full_name: str) -> str:
    """``<instance>/<owner>/<name>``: a repository of the test server, as a locator's location."""
    return f"{fake.root_url.split('://', 1)[1]}/{full_name}"


def forgejo_settings(
    fake: ForgejoFake,
    data_dir: Path,
    token: str,
    accounts: Mapping[str, str] | None = None,
    **overrides: object,
) -> Settings:
    fields: dict[str, object] = {
        "data_dir": data_dir,
        "lease_ttl": 30.0,
        "http_timeout": 10.0,
        "forgejo_instances": (instance(fake, token, accounts),),
    }
    return Settings(**(fields | overrides))  # type: ignore[arg-type]


def checked_sessions(fake: ForgejoFake):
    """Sessions whose every request and response is checked (``fake.client_recorder``)."""

    def make() -> requests.Session:
        return fake.session()

    return make


def forgejo_environment(settings: Settings, fake: ForgejoFake) -> ProviderEnvironment:
    return ProviderEnvironment(settings=settings, http_session=checked_sessions(fake))


@contextmanager
def embedded_world(
    fake: ForgejoFake, tmp_path: Path, owner: str = "acme", **settings: object
) -> Iterator[ServiceContext]:
    """An embedded-mode context (SQLite) with a token for ``owner`` on the test server."""
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    config = forgejo_settings(fake, tmp_path / "data", fake.add_token(owner), **settings)
    environment = forgejo_environment(config, fake)
    try:
        yield ServiceContext(settings=config, db=db, environment=environment)
    finally:
        db.dispose()
