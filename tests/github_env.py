"""Wiring reposync to the GitHub test server: settings, contract-checked sessions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from reposync.config import Settings
from reposync.models.db import Database
from reposync.providers.base import ProviderEnvironment
from reposync.service.accounts.budgets import DatabaseWriteBudget
from reposync.service.context import ServiceContext
from tests.fakes.contract import RecordingValidator, attach
from tests.fakes.github import GitHubFake


def github_fields(fake: GitHubFake, token: str) -> dict[str, object]:
    """The settings that point reposync at the test server with ``token``, its writes not
    spaced out (the test server has no secondary limit to respect by default)."""
    return {
        "github_api_url": fake.api_url,
        "github_uploads_url": fake.uploads_url,
        "github_git_url": fake.git_url,
        "github_token": token,
        "github_write_interval": 0.0,
        "http_timeout": 10.0,
    }


def github_env(fake: GitHubFake, token: str) -> dict[str, str]:
    """The environment that points a reposync process (the command line, a worker) at
    the test server with ``token``."""
    return {
        "REPOSYNC_GITHUB_API_URL": fake.api_url,
        "REPOSYNC_GITHUB_UPLOADS_URL": fake.uploads_url,
        "REPOSYNC_GITHUB_GIT_URL": fake.git_url,
        "REPOSYNC_GITHUB_TOKEN": token,
    }


def github_worker_env(fake: GitHubFake, token: str) -> dict[str, str]:
    """``github_fields`` as the environment of worker processes."""
    return {
        **github_env(fake, token),
        "REPOSYNC_GITHUB_WRITE_INTERVAL": "0",
        "REPOSYNC_HTTP_TIMEOUT": "10",
    }


def github_settings(fake: GitHubFake, data_dir: Path, token: str, **overrides: object) -> Settings:
    fields = {"data_dir": data_dir, "lease_ttl": 30.0, **github_fields(fake, token)}
    return Settings(**(fields | overrides))  # type: ignore[arg-type]


def checked_sessions(recorder: RecordingValidator):
    """Sessions whose every request and response is validated against the contract."""

    def make() -> requests.Session:
        session = requests.Session()
        attach(session, recorder)
        return session

    return make


def github_context(
    fake: GitHubFake, db: Database, data_dir: Path, token: str, **overrides: object
) -> tuple[ServiceContext, RecordingValidator]:
    settings = github_settings(fake, data_dir, token, **overrides)
    recorder = RecordingValidator(fake.contract)
    environment = ProviderEnvironment(
        settings=settings, budget=DatabaseWriteBudget(db), http_session=checked_sessions(recorder)
    )
    return ServiceContext(settings=settings, db=db, environment=environment), recorder


@contextmanager
def embedded_world(
    fake: GitHubFake,
    tmp_path: Path,
    owner: str = "acme",
    *,
    token: str | None = None,
    **overrides: object,
) -> Iterator[tuple[ServiceContext, RecordingValidator]]:
    """An embedded-mode context (SQLite) with ``token``, by default a new one of
    ``owner``'s (``""`` and an App's ``overrides``: the App's credentials instead);
    ``overrides``: other settings. On exit, no request or response may have broken the
    contract."""
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    ctx, recorder = github_context(
        fake, db, tmp_path / "data", fake.add_token(owner) if token is None else token, **overrides
    )
    try:
        yield ctx, recorder
    finally:
        db.dispose()
    assert recorder.violations == []
