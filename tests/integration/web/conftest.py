"""Fixtures of the API tests: the app on the embedded database, users, a Binding, Runs."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from reposync.config import Settings
from reposync.models import Binding, Run
from reposync.service.accounts.users import create_user, grant, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.runs import create_run
from reposync.web.app import API_PREFIX, create_app
from tests.browser import start_chromium
from tests.gitrepo import generate
from tests.workers import WorkerProcess

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}
#: Seals webhook secrets in the API tests (a Fernet key made for them, nothing else).
TEST_SECRET_KEY = "468Re4jg87IniMJ7wKN9E0hFpFyRBWsg5U0C9-pJNP0="


def url(path: str) -> str:
    return API_PREFIX + path


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_problem(response: TestResponse, status: int, code: str) -> dict[str, Any]:
    """The response is the one error shape, with this status and code."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    body = response.get_json(force=True)
    assert body.keys() >= PROBLEM_KEYS
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].endswith(code)
    return body


@dataclass
class Tokens:
    admin: str
    member: str  # granted the Binding's source repository
    stranger: str  # a member without any grant


#: The GitHub webhook secret of the API tests (``test_webhooks.py`` signs with it).
WEBHOOK_SECRET = "It's a Secret to Everybody"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The API may bind repositories under the test's directory (its data dir excepted);
    webhook secrets are sealed with a test key, and loopback receivers are allowed; it
    takes GitHub webhooks signed with ``WEBHOOK_SECRET``."""
    return Settings(
        data_dir=tmp_path / "data",
        lease_ttl=30.0,
        local_roots=(tmp_path,),
        secret_key=TEST_SECRET_KEY,
        webhook_allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),),
        github_webhook_secret=WEBHOOK_SECRET,
    )


@pytest.fixture
def app(ctx: ServiceContext) -> Flask:
    app = create_app(ctx.settings, ctx=ctx)
    app.config.update(REPOSYNC_SSE_POLL_SECONDS=0.05, REPOSYNC_SSE_MAX_SECONDS=0.5)
    return app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def source_repo(tmp_path: Path) -> Path:
    return generate(tmp_path / "src.git", commits=3, branches=1, tags=1)


@pytest.fixture
def owners_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A directory of local repositories (``app``, ``lib``) and an empty one to bind
    them into: a local owner's source and target."""
    source = tmp_path / "forge"
    for name in ("app", "lib"):
        generate(source / f"{name}.git", commits=1, branches=0, tags=0)
    target = tmp_path / "mirror"
    target.mkdir()
    return source, target


@pytest.fixture
def binding(ctx: ServiceContext, source_repo: Path, tmp_path: Path) -> Binding:
    return bind(ctx, SyncRequest(f"local:{source_repo}", f"local:{tmp_path / 'dst.git'}"))


@pytest.fixture
def tokens(ctx: ServiceContext, binding: Binding) -> Tokens:
    admin = create_user(ctx, "ada", role="admin")
    member = create_user(ctx, "mel")
    grant(ctx, member.id, binding.a_provider, binding.a_repository_id)
    stranger = create_user(ctx, "sam")
    return Tokens(
        admin=issue_token(ctx, admin.id),
        member=issue_token(ctx, member.id),
        stranger=issue_token(ctx, stranger.id),
    )


@pytest.fixture
def finished_run(ctx: ServiceContext, binding: Binding, source_repo: Path, tmp_path: Path) -> Run:
    """A completed apply Run, with items and events."""
    run = sync(ctx, SyncRequest(f"local:{source_repo}", f"local:{tmp_path / 'dst.git'}"))
    assert run.status == "completed"
    return run


@pytest.fixture
def queued_run(ctx: ServiceContext, binding: Binding) -> Run:
    return create_run(ctx, binding.id)


@pytest.fixture
def processes() -> Iterator[list[WorkerProcess]]:
    """Processes a test starts (API, workers): appended by the test, stopped after it."""
    started: list[WorkerProcess] = []
    yield started
    for process in started:
        process.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless chromium (Selenium's WebDriver), quit after the test."""
    driver = start_chromium(tmp_path / "chromium-profile")
    yield driver
    driver.quit()
