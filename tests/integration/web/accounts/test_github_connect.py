"""Connect GitHub end to end: the API under a test client, GitHub's test server over real
HTTP (its OAuth web flow on the web host, /user and /user/installations on the API host),
a "browser" per person signed in to GitHub.

A flow: ``POST /github/*/start`` (the test client keeps the flow cookie), the browser
opens GitHub's URL, GitHub redirects to the callback URL, which the test client then
opens. Every GitHub exchange reposync makes is checked against GitHub's description.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import inspect, select, text

from reposync.config import Settings
from reposync.models import (
    GitHubAccount,
    GitHubConnectState,
    GitHubGrantRepository,
    GitHubInstallationGrant,
)
from reposync.models.db import Database
from reposync.providers.base import ProviderEnvironment
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from reposync.web.app import API_PREFIX, create_app
from reposync.web.endpoints.github import FLOW_COOKIE
from tests.fakes.github import GitHubFake, generate_key_pair
from tests.fakes.github.models import App
from tests.integration.web.conftest import TEST_SECRET_KEY, assert_problem, bearer, url

CALLBACK = f"https://reposync.example{API_PREFIX}/github/install/callback"
SLUG = "reposync-connect"


@pytest.fixture
def fake() -> Iterator[GitHubFake]:
    with GitHubFake() as started:
        yield started


@pytest.fixture
def github_app(fake: GitHubFake) -> App:
    app = fake.state.register_app(generate_key_pair().public_pem, slug=SLUG)
    fake.oauth.register(app, CALLBACK)
    return app


@pytest.fixture
def settings(tmp_path, fake: GitHubFake, github_app: App) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        lease_ttl=30.0,
        secret_key=TEST_SECRET_KEY,
        webhook_allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),),
        github_api_url=fake.api_url,
        github_oauth_url=fake.git_url,
        github_client_id=github_app.client_id,
        github_client_secret=github_app.client_secret,
        github_app_slug=SLUG,
        github_callback_url=CALLBACK,
        github_connect_wait=3.0,
    )


@pytest.fixture
def ctx(settings: Settings, sqlite_db: Database, fake: GitHubFake) -> ServiceContext:
    env = ProviderEnvironment(settings=settings, http_session=fake.session)
    return ServiceContext(settings=settings, db=sqlite_db, environment=env)


@pytest.fixture
def client(ctx: ServiceContext):
    return create_app(ctx.settings, ctx=ctx).test_client()


class Person:
    """A reposync user with a test client (its cookies) and a browser signed in to GitHub."""

    def __init__(self, ctx, client_factory, fake: GitHubFake, login: str, github: str):
        user = create_user(ctx, login)
        self.id = user.id
        self.headers = bearer(issue_token(ctx, user.id))
        self.client = client_factory()
        self.github = github
        self.browser = fake.oauth.browser(github)

    def start(self, flow: str) -> str:
        response = self.client.post(url(f"/github/{flow}/start"), headers=self.headers)
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.json["url"]

    def visit_github(self, github_url: str) -> str:
        """The browser opens GitHub's page; where GitHub sends it back."""
        response = self.browser.get(github_url, allow_redirects=False)
        assert response.status_code == 302, response.text
        return response.headers["Location"]

    def callback(self, location: str, client=None):
        parts = urlsplit(location)
        assert f"{parts.scheme}://{parts.netloc}{parts.path}" == CALLBACK
        return (client or self.client).get(f"{parts.path}?{parts.query}")

    def connect_raw(self, flow: str = "authorize"):
        return self.callback(self.visit_github(self.start(flow)))

    def connect(self, flow: str = "authorize"):
        response = self.connect_raw(flow)
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.json

    def installations(self):
        response = self.client.get(url("/github/installations"), headers=self.headers)
        assert response.status_code == 200
        return response.json

    def repositories(self):
        response = self.client.get(url("/github/repositories"), headers=self.headers)
        assert response.status_code == 200
        return response.json["items"]


@pytest.fixture
def people(ctx, client, fake):
    app = client.application

    def person(login: str, github: str) -> Person:
        return Person(ctx, app.test_client, fake, login, github)

    return person


def _ids(listing) -> set[str]:
    return {i["installation_id"] for i in listing["installations"]}


def test_authorize_records_identity_installations_and_repositories(ctx, fake, github_app, people):
    fake.state.create_repo("alice/app", private=True)
    fake.state.create_repo("alice/lib")
    fake.state.create_repo("acme/site")
    fake.state.add_collaborator("acme/site", "alice")
    own = fake.state.install_app(github_app, "alice")
    org = fake.state.install_app(github_app, "acme", repositories=["acme/site"])
    fake.state.user("acme").type = "Organization"
    fake.state.create_repo("acme/hidden")  # the org's, not in the installation
    alice = people("al", "alice")

    connected = alice.connect("authorize")

    assert connected["status"] == "connected"
    assert connected["account"]["login"] == "alice"
    assert connected["account"]["github_user_id"] == str(fake.state.user("alice").id)
    assert set(connected["new_installation_ids"]) == {str(own.id), str(org.id)}
    listing = alice.installations()
    assert _ids(listing) == {str(own.id), str(org.id)}
    manage = {i["installation_id"]: i["manage_url"] for i in listing["installations"]}
    assert manage[str(org.id)].endswith(f"/organizations/acme/settings/installations/{org.id}")
    assert manage[str(own.id)].endswith(f"/settings/installations/{own.id}")
    repos = alice.repositories()
    assert [r["full_name"] for r in repos] == ["acme/site", "alice/app", "alice/lib"]
    site = repos[0]
    assert site["connection_id"] == f"github:installation:{org.id}"
    assert site["locator"] == "github:acme/site"
    assert site["repository_id"] == str(fake.state.repo("acme/site").id)
    assert repos[1]["private"] is True
    assert fake.oauth.exchanges == ["ok"]
    fake.assert_clean()


def test_the_user_token_is_never_stored(ctx, fake, github_app, people, sqlite_db):
    fake.state.create_repo("alice/app")
    fake.state.install_app(github_app, "alice")
    people("al", "alice").connect()
    [token] = fake.oauth.issued
    assert fake.state.token(token) is not None  # GitHub still knows it; reposync forgot it
    with sqlite_db.engine.connect() as conn:
        tables = inspect(conn).get_table_names()
        for table in tables:
            for row in conn.execute(text(f'SELECT * FROM "{table}"')):
                assert token not in repr(tuple(row)), table
                assert "ghr_" not in repr(tuple(row)), table
    columns = {
        c["name"]
        for t in tables
        if t.startswith("github_")
        for c in inspect(sqlite_db.engine).get_columns(t)
    }
    assert not {c for c in columns if "token" in c}


def test_install_waits_for_the_lagging_installation(ctx, fake, github_app, people):
    fake.state.user("acme", type="Organization")
    fake.state.create_repo("acme/site")
    fake.state.add_collaborator("acme/site", "alice")
    alice = people("al", "alice")
    fake.oauth.choose_install("alice", "acme", lag_listings=3)

    connected = alice.connect("install")

    assert connected["status"] == "connected"
    [new] = connected["new_installation_ids"]
    assert fake.state.installations[int(new)].account.login == "acme"
    assert connected["waited_seconds"] > 0
    listings = [r for r in fake.requests_log.records if r.path == "/user/installations"]
    assert len(listings) >= 4  # three without it, then the one with it
    assert [r["full_name"] for r in alice.repositories()] == ["acme/site"]
    fake.assert_clean()


def test_install_reports_a_lag_beyond_the_bound(ctx, fake, github_app, people, sqlite_db):
    fake.state.user("acme", type="Organization")
    fake.state.create_repo("acme/site")
    fake.state.add_collaborator("acme/site", "alice")
    alice = people("al", "alice")
    fake.oauth.choose_install("alice", "acme", lag_seconds=3600)

    connected = alice.connect("install")

    assert connected["status"] == "installation_pending"
    assert connected["new_installation_ids"] == []
    assert 2.0 <= connected["waited_seconds"] < 10
    assert alice.installations()["account"]["login"] == "alice"  # the identity is kept
    with sqlite_db.session() as session:
        assert session.execute(select(GitHubInstallationGrant)).first() is None


def test_install_merges_and_reauthorization_replaces(ctx, fake, github_app, people):
    fake.state.create_repo("alice/app")
    fake.state.create_repo("acme/site")
    fake.state.user("acme").type = "Organization"
    fake.state.add_collaborator("acme/site", "alice")
    own = fake.state.install_app(github_app, "alice")
    alice = people("al", "alice")
    alice.connect("authorize")
    assert _ids(alice.installations()) == {str(own.id)}

    fake.oauth.choose_install("alice", "acme")
    installed = alice.connect("install")
    [org] = installed["new_installation_ids"]
    assert _ids(alice.installations()) == {str(own.id), org}  # merged

    fake.uninstall_app(own)  # removed on GitHub: the next authorization drops its grant
    alice.connect("authorize")
    assert _ids(alice.installations()) == {org}
    assert [r["full_name"] for r in alice.repositories()] == ["acme/site"]


def test_two_users_never_see_each_others_installations(ctx, fake, github_app, people):
    fake.state.create_repo("alice/app")
    fake.state.create_repo("bob/tool")
    a = fake.state.install_app(github_app, "alice")
    b = fake.state.install_app(github_app, "bob")
    alice, bob = people("al", "alice"), people("bo", "bob")
    alice.connect()
    bob.connect()
    assert _ids(alice.installations()) == {str(a.id)}
    assert _ids(bob.installations()) == {str(b.id)}
    assert [r["full_name"] for r in alice.repositories()] == ["alice/app"]
    assert [r["full_name"] for r in bob.repositories()] == ["bob/tool"]
    carol = people("ca", "carol")  # connected nothing
    assert carol.installations() == {"account": None, "installations": []}
    assert carol.repositories() == []


def test_another_github_identity_replaces_the_grants(ctx, fake, github_app, people):
    """Reconnecting as someone else on GitHub keeps none of the first identity's grants."""
    fake.state.create_repo("alice/app")
    fake.state.install_app(github_app, "alice")
    fake.oauth.choose_install("bob", "bob")
    person = people("al", "alice")
    person.connect("authorize")
    person.browser = fake.oauth.browser("bob")
    done = person.connect("install")
    assert done["account"]["login"] == "bob"
    assert [i["account_login"] for i in person.installations()["installations"]] == ["bob"]
    assert person.repositories() == []


def test_state_is_one_use(ctx, fake, github_app, people, sqlite_db):
    fake.state.install_app(github_app, "alice")
    alice = people("al", "alice")
    location = alice.visit_github(alice.start("authorize"))
    assert alice.callback(location).status_code == 200
    # The same redirect again (a replay, or a reload): refused, nothing exchanged.
    assert_problem(alice.callback(location), 400, "github_state_invalid")
    assert fake.oauth.exchanges == ["ok"]
    with sqlite_db.session() as session:
        assert session.execute(select(GitHubConnectState)).first() is None


def test_expired_state_is_refused(ctx, fake, github_app, people, sqlite_db):
    fake.state.install_app(github_app, "alice")
    alice = people("al", "alice")
    location = alice.visit_github(alice.start("authorize"))
    with sqlite_db.engine.begin() as conn:
        conn.execute(text("UPDATE github_connect_states SET expires_at = '2000-01-01 00:00:00'"))
    assert_problem(alice.callback(location), 400, "github_state_invalid")
    assert fake.oauth.exchanges == []
    assert alice.installations()["account"] is None


def test_forged_or_foreign_state_is_refused(ctx, fake, github_app, people, client):
    """A made-up state, and a real state opened in another browser (login CSRF: the
    attacker's state with the victim's code) record nothing."""
    fake.state.install_app(github_app, "alice")
    fake.state.install_app(github_app, "mallory")
    alice, mallory = people("al", "alice"), people("ma", "mallory")
    location = alice.visit_github(alice.start("authorize"))
    forged = location.replace("state=", "state=x")
    assert_problem(alice.callback(forged), 400, "github_state_invalid")

    # Mallory starts a flow; Alice's browser is sent through it with Alice's GitHub.
    url_for_victim = mallory.start("authorize")
    victim_location = alice.visit_github(url_for_victim)
    assert_problem(
        mallory.callback(victim_location, client=alice.client), 400, "github_state_invalid"
    )
    assert mallory.installations()["account"] is None
    assert alice.installations()["account"] is None
    assert fake.oauth.exchanges == []


def test_seeing_a_state_is_not_enough_to_end_its_flow(ctx, fake, github_app, people, client):
    """A callback with Alice's state but not her browser's flow cookie (a forged refusal,
    her redirect opened elsewhere, a guessed cookie) is refused and consumes nothing:
    her own callback still connects her afterwards."""
    fake.state.install_app(github_app, "alice")
    alice = people("al", "alice")
    location = alice.visit_github(alice.start("authorize"))
    state = parse_qs(urlsplit(location).query)["state"][0]
    stranger = client.application.test_client()
    refusal = url(f"/github/install/callback?state={state}&error=access_denied")

    assert_problem(stranger.get(refusal), 400, "github_state_invalid")
    assert_problem(alice.callback(location, client=stranger), 400, "github_state_invalid")
    stranger.set_cookie(FLOW_COOKIE, "a-guessed-flow-secret")
    assert_problem(stranger.get(refusal), 400, "github_state_invalid")
    assert_problem(alice.callback(location, client=stranger), 400, "github_state_invalid")
    assert fake.oauth.exchanges == []

    connected = alice.callback(location)
    assert connected.status_code == 200, connected.get_data(as_text=True)
    assert connected.json["account"]["login"] == "alice"
    assert fake.oauth.exchanges == ["ok"]


def test_a_refused_code_records_nothing(ctx, fake, github_app, people):
    fake.state.install_app(github_app, "alice")
    alice = people("al", "alice")
    location = alice.visit_github(alice.start("authorize"))
    code = parse_qs(urlsplit(location).query)["code"][0]
    fake.oauth.codes.pop(code)  # expired at GitHub
    assert_problem(alice.callback(location), 502, "github_code_refused")
    assert fake.oauth.exchanges == ["bad_verification_code"]
    assert alice.installations() == {"account": None, "installations": []}


def test_wrong_client_secret_is_a_refused_code(ctx, fake, github_app, people):
    fake.state.install_app(github_app, "alice")
    github_app.client_secret = "rotated-on-github"
    body = assert_problem(people("al", "alice").connect_raw(), 502, "github_code_refused")
    assert "incorrect_client_credentials" in body["detail"]


def test_delete_removes_identity_and_grants(ctx, fake, github_app, people, sqlite_db):
    fake.state.create_repo("alice/app")
    fake.state.create_repo("bob/tool")
    fake.state.install_app(github_app, "alice")
    fake.state.install_app(github_app, "bob")
    alice, bob = people("al", "alice"), people("bo", "bob")
    alice.connect()
    bob.connect()
    alice.start("install")  # a flow in progress goes too

    response = alice.client.delete(url("/github/account"), headers=alice.headers)
    assert response.status_code == 204
    with sqlite_db.session() as session:
        for model in (GitHubAccount, GitHubInstallationGrant, GitHubConnectState):
            owners = set(session.execute(select(model.user_id)).scalars())
            assert owners <= {bob.id}, model
        assert session.execute(select(GitHubGrantRepository.full_name)).scalars().all() == [
            "bob/tool"
        ]
    assert alice.installations() == {"account": None, "installations": []}
    assert [r["full_name"] for r in bob.repositories()] == ["bob/tool"]
    again = alice.client.delete(url("/github/account"), headers=alice.headers)
    assert_problem(again, 404, "record_not_found")


def test_start_sets_a_browser_bound_cookie_and_github_urls(ctx, fake, github_app, people):
    alice = people("al", "alice")
    response = alice.client.post(url("/github/install/start"), headers=alice.headers)
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie
    assert f"Path={API_PREFIX}/github/install/callback" in cookie
    install = urlsplit(response.json["url"])
    assert f"{install.scheme}://{install.netloc}" == fake.git_url
    assert install.path == f"/apps/{SLUG}/installations/new"
    authorize = urlsplit(alice.start("authorize"))
    query = parse_qs(authorize.query)
    assert authorize.path == "/login/oauth/authorize"
    assert query["client_id"] == [github_app.client_id]
    assert query["redirect_uri"] == [CALLBACK]
    assert len(query["state"][0]) >= 32


def test_unconfigured_connect_answers_503(tmp_path, sqlite_db):
    plain = ServiceContext(settings=Settings(data_dir=tmp_path / "data"), db=sqlite_db)
    client = create_app(plain.settings, ctx=plain).test_client()
    user = create_user(plain, "al")
    response = client.post(
        url("/github/authorize/start"), headers=bearer(issue_token(plain, user.id))
    )
    assert_problem(response, 503, "github_connect_unconfigured")
