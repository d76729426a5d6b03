"""Wiring reposync to the GitHub test server: settings, contract-checked sessions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from reposync.config import Settings
from reposync.models.db import Database
from reposync.providers.base import ProviderEnvironment
from reposync.service.budgets import DatabaseWriteBudget
from reposync.service.context import ServiceContext
from tests.fakes.contract import RecordingValidator, attach
from tests.fakes.github import GitHubFake


def github_settings(fake: GitHubFake, data_dir: Path, token: str, **overrides: object) -> Settings:
    fields: dict[str, object] = {
        "data_dir": data_dir,
        "lease_ttl": 30.0,
        "github_api_url": fake.api_url,
        "github_uploads_url": fake.uploads_url,
        "github_git_url": fake.git_url,
        "github_token": token,
        "github_write_interval": 0.0,
        "http_timeout": 10.0,
    }
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
    fake: GitHubFake, tmp_path: Path, owner: str = "acme"
) -> Iterator[tuple[ServiceContext, RecordingValidator]]:
    """An embedded-mode context (SQLite) with a token for ``owner``; on exit, no request
    or response may have broken the contract."""
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    ctx, recorder = github_context(fake, db, tmp_path / "data", fake.add_token(owner))
    try:
        yield ctx, recorder
    finally:
        db.dispose()
    assert recorder.violations == []
