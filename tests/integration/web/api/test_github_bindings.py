"""A Binding side opened through a Connect GitHub connection, end to end over real HTTP.

People connect GitHub through the OAuth web flow (as in ``test_github_connect.py``), pick a
repository from ``GET /github/repositories`` and bind it with the ``connection_id`` listed
for it; a Run then carries that installation's token on every GitHub request (the test
server records whose quota each request spent: ``installation:<id>``). Every exchange
reposync makes with GitHub is checked against GitHub's API description.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select

from reposync.lifecycle import Stage
from reposync.models import Binding, RepositoryGrant, Run
from reposync.models.db import Database
from reposync.providers.base import ProviderEnvironment
from reposync.service.accounts.budgets import DatabaseWriteBudget
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext, Step
from reposync.service.embedded import execute
from reposync.web.app import create_app
from tests.fakes.contract import RecordingValidator
from tests.fakes.github import GitHubFake, generate_key_pair
from tests.fakes.github.models import App, Installation
from tests.fakes.github.state import DEFAULT_APP_PERMISSIONS
from tests.github_env import checked_sessions, github_settings
from tests.gitrepo import refs
from tests.integration.web.accounts.test_github_connect import CALLBACK, SLUG, Person
from tests.integration.web.conftest import TEST_SECRET_KEY, assert_problem, bearer, url
from tests.integration.web.pages.test_pages import csrf_of, sign_in

#: The Overview's picker: ``<option value="<connection id> <locator>">name (connection id)``.
PICK = re.compile(r'<option value="(github:installation:[^"]+)">([^<]+)</option>')


@pytest.fixture
def fake() -> Iterator[GitHubFake]:
    with GitHubFake() as started:
        yield started
        started.assert_clean(requests_too=True)


class World:
    """The App (its private key in a file), its installations, reposync wired to them."""

    def __init__(self, fake: GitHubFake, tmp_path: Path, db: Database) -> None:
        keys = generate_key_pair()
        self.app: App = fake.state.register_app(
            keys.public_pem,
            slug=SLUG,
            # A new standby's default branch is set through the repository's settings.
            permissions={**DEFAULT_APP_PERMISSIONS, "administration": "write"},
        )
        fake.oauth.register(self.app, CALLBACK)
        key = tmp_path / "app-key.pem"
        key.write_bytes(keys.private_pem)
        for name in ("alice/app", "ops/infra", "bob/tool"):
            fake.state.create_repo(name, auto_init=True)
        for name in ("alice/mirror", "ops/infra-mirror", "bob/tool-mirror"):
            fake.state.create_repo(name)
        self.alice: Installation = fake.state.install_app(self.app, "alice")
        self.bob: Installation = fake.state.install_app(self.app, "bob")
        #: The configured installation: what a side without a connection uses.
        self.ops: Installation = fake.state.install_app(self.app, "ops")
        settings = github_settings(
            fake,
            tmp_path / "data",
            "",
            secret_key=TEST_SECRET_KEY,
            webhook_allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),),
            github_app_id=str(self.app.id),
            github_app_private_key_path=str(key),
            github_installation_id=str(self.ops.id),
            github_oauth_url=fake.git_url,
            github_client_id=self.app.client_id,
            github_client_secret=self.app.client_secret,
            github_app_slug=SLUG,
            github_callback_url=CALLBACK,
            github_connect_wait=3.0,
        )
        self.recorder = RecordingValidator(fake.contract)
        env = ProviderEnvironment(
            settings=settings,
            budget=DatabaseWriteBudget(db),
            http_session=checked_sessions(self.recorder),
        )
        self.ctx = ServiceContext(settings=settings, db=db, environment=env)
        self.fake = fake
        self.client = create_app(settings, ctx=self.ctx).test_client()
        self.admin = bearer(issue_token(self.ctx, create_user(self.ctx, "ada", role="admin").id))

    def person(self, login: str, github: str) -> Person:
        return Person(self.ctx, self.client.application.test_client, self.fake, login, github)

    def bind(self, headers, source: str, target: str, source_conn=None, target_conn=None):
        body = {"source": source, "target": target}
        if source_conn is not None:
            body["source_connection_id"] = source_conn
        if target_conn is not None:
            body["target_connection_id"] = target_conn
        return self.client.post(url("/bindings"), headers=headers, json=body)

    def run(self, headers, binding_id: int) -> dict:
        """Queue a Run through the API, carry it out in this process; the Run's requests."""
        before = len(self.fake.requests_log)
        response = self.client.post(url(f"/bindings/{binding_id}/runs"), headers=headers, json={})
        assert response.status_code == 202, response.get_data(as_text=True)
        run_id = response.json["id"]
        execute(self.ctx, Step(run_id, Stage.CHECKING_ACCESS, None), None)
        shown = self.client.get(url(f"/runs/{run_id}"), headers=headers)
        assert shown.status_code == 200
        assert shown.json["status"] == "completed", shown.json
        return {"run": shown.json, "requests": list(self.fake.requests_log)[before:]}

    def bindings(self) -> int:
        with self.ctx.db.session() as session:
            return session.execute(select(func.count(Binding.id))).scalar_one()

    def exchanges(self, installation: Installation) -> int:
        return len(
            self.fake.requests_log.matching(
                "POST", rf"^/app/installations/{installation.id}/access_tokens$", status=201
            )
        )


@pytest.fixture
def world(fake, tmp_path, sqlite_db) -> Iterator[World]:
    built = World(fake, tmp_path, sqlite_db)
    yield built
    assert built.recorder.violations == []


def quotas(requests) -> set[str | None]:
    """Whose credentials the requests carried (GitHub's API and Git over HTTP). The test
    server answers a wiki that does not exist yet before it reads the credentials (the
    404 records no quota): those probes are left out."""
    return {
        r.quota
        for r in requests
        if r.host in ("api", "git") and not (r.status == 404 and ".wiki.git/" in r.path)
    }


def test_a_member_binds_and_runs_through_their_connection(world, fake):
    alice = world.person("al", "alice")
    alice.connect("authorize")
    picked = {r["full_name"]: r for r in alice.repositories()}
    connection = picked["alice/app"]["connection_id"]
    assert connection == f"github:installation:{world.alice.id}"
    assert picked["alice/mirror"]["connection_id"] == connection

    response = world.bind(
        alice.headers,
        picked["alice/app"]["locator"],
        picked["alice/mirror"]["locator"],
        connection,
        connection,
    )

    assert response.status_code == 201, response.get_data(as_text=True)
    binding = response.json
    assert binding["a"]["connection_id"] == connection
    assert binding["b"]["connection_id"] == connection
    assert binding["a"]["repository_id"] == picked["alice/app"]["repository_id"]
    shown = world.client.get(url(f"/bindings/{binding['id']}"), headers=alice.headers)
    assert shown.status_code == 200  # the member sees what they bound

    ran = world.run(alice.headers, binding["id"])

    assert quotas(ran["requests"]) == {f"installation:{world.alice.id}"}
    pushes = [r for r in ran["requests"] if r.path.endswith("/git-receive-pack")]
    assert pushes
    assert {r.quota for r in pushes} == {f"installation:{world.alice.id}"}
    assert refs(Path(fake.state.git_dir("alice/mirror"))) == refs(
        Path(fake.state.git_dir("alice/app"))
    )
    # One token exchange served the binding's checks and every stage of the Run.
    assert world.exchanges(world.alice) == 1
    assert world.exchanges(world.ops) == 0


def test_a_member_cannot_use_another_members_connection(world):
    world.person("al", "alice").connect("authorize")
    bob = world.person("bo", "bob")
    bob.connect("authorize")
    alices = f"github:installation:{world.alice.id}"
    bobs = f"github:installation:{world.bob.id}"
    before = world.bindings()

    refused = world.bind(bob.headers, "github:alice/app", "github:alice/mirror", alices, alices)
    assert_problem(refused, 404, "connection_not_granted")
    # Their own connection does not reach alice's repositories either.
    reached = world.bind(bob.headers, "github:alice/app", "github:bob/tool-mirror", bobs, bobs)
    assert_problem(reached, 404, "connection_not_granted")
    # A side without a connection is an admin's to bind, as before connections.
    bare = world.bind(bob.headers, "github:bob/tool", "github:bob/tool-mirror", bobs, None)
    assert_problem(bare, 403, "forbidden")
    malformed = world.bind(bob.headers, "github:bob/tool", "github:bob/tool-mirror", bobs, "x")
    assert_problem(malformed, 400, "invalid_connection")

    assert world.bindings() == before
    with world.ctx.db.session() as session:
        assert session.execute(select(func.count(RepositoryGrant.id))).scalar_one() == 0
    # Refused before any GitHub request: no installation token was even asked for.
    assert world.exchanges(world.alice) == world.exchanges(world.bob) == 0


def test_a_member_without_connect_github_is_refused(world):
    carol = world.person("ca", "carol")  # never connected GitHub
    alices = f"github:installation:{world.alice.id}"
    response = world.bind(carol.headers, "github:alice/app", "github:alice/mirror", alices, alices)
    assert_problem(response, 404, "connection_not_granted")
    assert world.bindings() == 0


def test_an_admin_may_name_any_installation(world):
    bobs = f"github:installation:{world.bob.id}"  # granted to nobody through Connect GitHub

    response = world.bind(world.admin, "github:bob/tool", "github:bob/tool-mirror", bobs, bobs)

    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.json["a"]["connection_id"] == bobs
    ran = world.run(world.admin, response.json["id"])
    assert quotas(ran["requests"]) == {f"installation:{world.bob.id}"}


def test_a_binding_without_a_connection_uses_the_configured_credentials(world):
    response = world.bind(world.admin, "github:ops/infra", "github:ops/infra-mirror")

    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.json["a"]["connection_id"] is None
    assert response.json["b"]["connection_id"] is None
    ran = world.run(world.admin, response.json["id"])
    assert quotas(ran["requests"]) == {f"installation:{world.ops.id}"}
    # Binding the pair again with a connection does not move it to other credentials.
    ops = f"github:installation:{world.ops.id}"
    again = world.bind(world.admin, "github:ops/infra", "github:ops/infra-mirror", ops)
    assert_problem(again, 409, "connection_mismatch")
    same = world.bind(world.admin, "github:ops/infra", "github:ops/infra-mirror")
    assert same.status_code == 200


def test_disconnecting_keeps_existing_bindings_but_stops_new_ones(world, fake):
    alice = world.person("al", "alice")
    alice.connect("authorize")
    connection = f"github:installation:{world.alice.id}"
    created = world.bind(
        alice.headers, "github:alice/app", "github:alice/mirror", connection, connection
    )
    assert created.status_code == 201
    binding_id = created.json["id"]

    gone = alice.client.delete(url("/github/account"), headers=alice.headers)
    assert gone.status_code == 204

    # The installation still exists on GitHub: the Binding keeps its token, and the
    # member keeps the repository grants creating it gave them.
    ran = world.run(alice.headers, binding_id)
    assert quotas(ran["requests"]) == {f"installation:{world.alice.id}"}
    fake.state.create_repo("alice/other")
    again = world.bind(
        alice.headers, "github:alice/app", "github:alice/other", connection, connection
    )
    assert_problem(again, 404, "connection_not_granted")


def test_a_member_binds_a_pick_from_the_page_and_syncs_it(world, fake):
    """The web page end to end: Connect GitHub from the GitHub page, the Overview's picker
    of granted repositories, Create, Sync now; the Run opens both sides with the picked
    connection's installation token."""
    member = create_user(world.ctx, "al")
    client = world.client.application.test_client()
    sign_in(client, issue_token(world.ctx, member.id))
    page = client.get("/github").get_data(as_text=True)
    started = client.post("/github/start", data={"flow": "authorize", "csrf": csrf_of(page)})
    assert started.status_code == 303
    back = fake.oauth.browser("alice").get(started.headers["Location"], allow_redirects=False)
    assert back.status_code == 302, back.text
    returned = urlsplit(back.headers["Location"])
    assert client.get(f"{returned.path}?{returned.query}").headers["Location"] == (
        "/github?outcome=connected"
    )

    overview = client.get("/").get_data(as_text=True)
    connection = f"github:installation:{world.alice.id}"
    picks = dict(
        (label, value) for value, label in PICK.findall(overview) if value.startswith(connection)
    )
    assert set(picks) >= {f"alice/app ({connection})", f"alice/mirror ({connection})"}
    assert not any("bob/" in label for label in picks)  # only the member's grants
    created = client.post(
        "/bindings",
        data={
            "csrf": csrf_of(overview),
            "source_pick": picks[f"alice/app ({connection})"],
            "target_pick": picks[f"alice/mirror ({connection})"],
        },
    )
    assert created.status_code == 302, created.get_data(as_text=True)
    binding_id = int(created.headers["Location"].rsplit("/", 1)[1])
    with world.ctx.db.session() as session:
        stored = session.get(Binding, binding_id)
        assert stored is not None
        assert (stored.a_connection_id, stored.b_connection_id) == (connection, connection)
    assert f'id="binding-{binding_id}"' in client.get("/").get_data(as_text=True)

    binding_page = client.get(f"/bindings/{binding_id}").get_data(as_text=True)
    before = len(fake.requests_log)
    queued = client.post(
        f"/bindings/{binding_id}/runs", data={"action": "sync", "csrf": csrf_of(binding_page)}
    )
    assert queued.status_code == 302, queued.get_data(as_text=True)
    run_id = int(queued.headers["Location"].rsplit("/", 1)[1])
    execute(world.ctx, Step(run_id, Stage.CHECKING_ACCESS, None), None)
    with world.ctx.db.session() as session:
        assert session.get(Run, run_id).status == "completed"
    assert 's-completed">completed</span>' in client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert quotas(list(fake.requests_log)[before:]) == {f"installation:{world.alice.id}"}
    assert refs(Path(fake.state.git_dir("alice/mirror"))) == refs(
        Path(fake.state.git_dir("alice/app"))
    )
    assert world.exchanges(world.ops) == 0
