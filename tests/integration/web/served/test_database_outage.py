"""Issue 23 #5: with the database away, every endpoint answers 503 ``database_unavailable``
with ``Retry-After`` (it answered 500 ``internal_error``: the token lookup raised the raw
driver error), the page too, and all of it comes back by itself with the database.

Fault injection on both backends: a real PostgreSQL stopped mid-test (``pg_ctl stop``, as
an operator or a crash-restart does) and an SQLite database whose path stops being
openable (its directory replaced by a file: a volume gone; unlike a ``chmod`` it holds
for root as well).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from reposync.config import Settings
from reposync.forge_instances import ForgejoInstance
from reposync.models.db import Database
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from reposync.web.app import SWAGGER_ASSETS, create_app
from reposync.web.endpoints.github import FLOW_COOKIE
from reposync.web.pages import session
from tests import webhooks
from tests.integration.web.accounts.test_access import ENDPOINTS, call
from tests.integration.web.conftest import TEST_SECRET_KEY, WEBHOOK_SECRET, bearer, url
from tests.integration.web.intake import deliver
from tests.servers import PostgresServer

_names = itertools.count()


@dataclass
class Outage:
    """A migrated database and the switch that takes it away and brings it back."""

    ctx: ServiceContext
    stop: Callable[[], None]
    start: Callable[[], None]


#: An instance whose hooks are signed, so a Forgejo delivery reaches the database.
FORGEJO = ForgejoInstance(
    "git.example.test", "https://git.example.test", "t" * 40, webhook_secret="hook secret"
)


def _forgejo_push(client: FlaskClient) -> TestResponse:
    """A push delivery signed as the instance's hook signs it."""
    body = json.dumps(
        {
            "ref": "refs/heads/main",
            "before": "a" * 40,
            "after": "b" * 40,
            "repository": {
                "id": 7,
                "full_name": "acme/app",
                "html_url": f"{FORGEJO.url}/acme/app",
            },
        }
    ).encode()
    signature = hmac.new(FORGEJO.webhook_secret.encode(), body, hashlib.sha256).hexdigest()
    return client.post(
        url("/webhooks/forgejo"),
        data=body,
        headers={
            "Content-Type": "application/json",
            "X-Forgejo-Event": "push",
            "X-Forgejo-Delivery": "0b7c6a52-outage",
            "X-Forgejo-Signature": signature,
        },
    )


def _settings(tmp_path: Path, database_url: str = "") -> Settings:
    """Connect GitHub and webhooks configured, so their endpoints reach the database."""
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        secret_key=TEST_SECRET_KEY,
        github_webhook_secret=WEBHOOK_SECRET,
        forgejo_instances=(FORGEJO,),
        github_client_id="Iv1.outage",
        github_client_secret="outage-secret",
        github_app_slug="reposync-outage",
    )


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this module's own: its tests stop it."""
    server = PostgresServer.start_local()
    yield server
    server.stop()


@pytest.fixture
def postgres_outage(own_postgres: PostgresServer, tmp_path: Path) -> Iterator[Outage]:
    name = f"outage_{next(_names)}"
    own_postgres.admin(f"CREATE DATABASE {name}")
    db = Database(own_postgres.database_url(name))
    db.upgrade()
    ctx = ServiceContext(settings=_settings(tmp_path, own_postgres.database_url(name)), db=db)
    try:
        yield Outage(ctx, own_postgres.halt, own_postgres.resume)
    finally:
        db.dispose()
        if own_postgres.directory is not None and not _accepts(own_postgres):
            own_postgres.resume()  # a failed test must not leave the next one without it


def _accepts(server: PostgresServer) -> bool:
    import psycopg

    try:
        psycopg.connect(server.database_url("postgres"), connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


@pytest.fixture
def sqlite_outage(tmp_path: Path) -> Iterator[Outage]:
    settings = _settings(tmp_path)
    db = Database(settings.effective_database_url)
    db.upgrade()
    directory, aside = settings.data_dir, tmp_path / "data-aside"

    def stop() -> None:
        db.dispose()  # an open connection would go on reading the file it holds
        directory.rename(aside)
        directory.write_text("not a directory any more")

    def start() -> None:
        directory.unlink()
        aside.rename(directory)
        db.dispose()

    yield Outage(ServiceContext(settings=settings, db=db), stop, start)
    db.dispose()
    if aside.exists():
        directory.unlink(missing_ok=True)
        shutil.move(aside, directory)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def outage(request: pytest.FixtureRequest) -> Outage:
    fixture: Outage = request.getfixturevalue(f"{request.param}_outage")
    return fixture


def _is_unavailable(response: TestResponse, *, problem_json: bool = True) -> str | None:
    """None when the response is the outage's answer, else what is wrong with it."""
    if response.status_code != 503:
        return f"{response.status_code}: {response.get_data(as_text=True)[:200]}"
    if not response.headers.get("Retry-After", "").isdigit():
        return f"Retry-After: {response.headers.get('Retry-After')!r}"
    if response.headers.get("X-Content-Type-Options") != "nosniff":
        return "no X-Content-Type-Options: nosniff"
    if problem_json:
        if response.mimetype != "application/problem+json":
            return f"content type {response.mimetype}"
        if response.json["code"] != "database_unavailable":
            return f"code {response.json['code']}"
    elif "database_unavailable" not in response.get_data(as_text=True):
        return "the page does not name database_unavailable"
    return None


def _page_requests(app: Flask) -> list[tuple[str, str]]:
    """Every route of the web page (method, path), ids filled with 1."""
    found = []
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("pages.") or rule.endpoint == "pages.static":
            continue
        path = rule.rule
        for argument in rule.arguments:
            path = path.replace(f"<int:{argument}>", "1").replace(f"<{argument}>", "1")
        found.extend((method, path) for method in sorted(rule.methods - {"HEAD", "OPTIONS"}))
    return found


def test_every_endpoint_answers_503_while_the_database_is_away(outage: Outage):
    """Every documented operation (the access table), a webhook delivery, every page and
    the sign-in form answer 503 database_unavailable with Retry-After while the database
    is away; the documents and /metrics still answer; once it is back, so is the API."""
    ctx = outage.ctx
    app = create_app(ctx.settings, ctx=ctx)
    client = app.test_client()
    token = issue_token(ctx, create_user(ctx, "ada", role="admin").id)
    client.set_cookie(FLOW_COOKIE, "a flow secret")  # the callback reaches its state row
    assert client.get(url("/overview"), headers=bearer(token)).status_code == 200

    outage.stop()
    wrong: dict[str, str] = {}
    for endpoint in ENDPOINTS:
        if endpoint.access == "signature":
            continue  # unsigned, a delivery is refused before any read: signed ones follow
        verdict = _is_unavailable(call(client, endpoint, bearer(token)))
        if verdict:
            wrong[str(endpoint)] = verdict
    delivery = deliver(
        client, "push", webhooks.push(7, "acme/app", "refs/heads/main", "a" * 40, "b" * 40)
    )
    if verdict := _is_unavailable(delivery):
        wrong["POST /webhooks/github"] = verdict
    if verdict := _is_unavailable(_forgejo_push(client)):
        wrong["POST /webhooks/forgejo"] = verdict
    health = client.get(url("/health"))  # its own document: degraded, unreachable
    if health.status_code != 503 or not health.headers.get("Retry-After", "").isdigit():
        wrong["GET /health"] = f"{health.status_code} {health.headers.get('Retry-After')!r}"

    page = app.test_client()
    page.set_cookie(session.SESSION_COOKIE, token)
    csrf = session.csrf_token(token)
    for method, path in _page_requests(app):
        response = page.open(path, method=method, data={"csrf": csrf})
        if path in ("/signin", "/favicon.ico"):  # need no database (the form's POST below)
            continue
        if verdict := _is_unavailable(response, problem_json=False):
            wrong[f"page {method} {path}"] = verdict
    signing_in = app.test_client()
    signing_in.set_cookie(session.SIGNIN_COOKIE, "nonce")
    response = signing_in.post(
        "/signin", data={"token": token, "csrf": session.csrf_token("nonce")}
    )
    if verdict := _is_unavailable(response, problem_json=False):
        wrong["page POST /signin (the form)"] = verdict
    assert wrong == {}

    for path in (url("/openapi.json"), url(f"/{SWAGGER_ASSETS}/swagger-ui.css"), "/metrics"):
        assert client.get(path).status_code == 200, path

    outage.start()
    assert client.get(url("/overview"), headers=bearer(token)).status_code == 200
    assert client.get(url("/health")).status_code == 200
    assert page.get("/").status_code == 200


def test_an_outage_is_logged_as_one_line_per_request(outage: Outage, caplog):
    """The log says the database is away and why, without a traceback per request."""
    ctx = outage.ctx
    client = create_app(ctx.settings, ctx=ctx).test_client()
    token = issue_token(ctx, create_user(ctx, "ada", role="admin").id)
    outage.stop()
    try:
        with caplog.at_level("WARNING"):
            response = client.get(url("/bindings"), headers=bearer(token))
    finally:
        outage.start()
    assert response.status_code == 503
    records = [r for r in caplog.records if r.name.startswith("reposync")]
    assert [r.getMessage().split(":")[0] for r in records] == ["the database is unavailable"]
    assert all(r.exc_info is None for r in records)
    assert "127.0.0.1" not in response.json["detail"]
    assert str(ctx.settings.data_dir) not in response.json["detail"]
