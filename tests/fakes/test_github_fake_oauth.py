"""The GitHub test server's OAuth web flow, ``GET /user`` and the lag after an install:
the parts outside the extracted API description, checked against GitHub's documentation
(tests/fakes/github/oauth.py cites the pages)."""

from __future__ import annotations

import html
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.fakes.github import GitHubFake, ManualClock, generate_key_pair
from tests.fakes.github.models import App
from tests.fakes.github.oauth import SESSION_COOKIE, TEST_PASSWORD

CALLBACK = "https://reposync.example/cb"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock) -> Iterator[GitHubFake]:
    with GitHubFake(clock=clock) as started:
        yield started


@pytest.fixture
def app(fake) -> App:
    found = fake.state.register_app(generate_key_pair().public_pem, slug="connect")
    fake.oauth.register(found, CALLBACK)
    return found


def _query(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def _authorize(fake, app, login: str, **params) -> str:
    browser = fake.oauth.browser(login)
    query = {"client_id": app.client_id, "state": "st", **params}
    response = browser.get(
        f"{fake.git_url}/login/oauth/authorize", params=query, allow_redirects=False
    )
    assert response.status_code == 302
    return response.headers["Location"]


def _exchange(fake, app, code: str, *, secret: str | None = None, json: bool = True):
    headers = {"Accept": "application/json"} if json else {}
    data = {
        "client_id": app.client_id,
        "client_secret": app.client_secret if secret is None else secret,
        "code": code,
    }
    response = fake.session().post(
        f"{fake.git_url}/login/oauth/access_token", data=data, headers=headers
    )
    assert response.status_code == 200  # GitHub answers refusals with 200 too
    return response


def test_authorize_needs_a_signed_in_browser(fake, app):
    import requests

    response = requests.get(
        f"{fake.git_url}/login/oauth/authorize",
        params={"client_id": app.client_id},
        allow_redirects=False,
    )
    assert response.status_code == 302
    assert urlsplit(response.headers["Location"]).path == "/login"
    unknown = fake.oauth.browser("alice").get(
        f"{fake.git_url}/login/oauth/authorize", params={"client_id": "Iv1.nope"}
    )
    assert unknown.status_code == 404


def test_authorize_redirects_with_code_and_state(fake, app):
    location = _authorize(fake, app, "alice", redirect_uri=CALLBACK + "/sub")
    assert location.startswith(CALLBACK + "/sub?")
    query = _query(location)
    assert query["state"] == "st"
    assert len(query["code"]) == 20


def test_foreign_redirect_uri_goes_to_the_registered_one_with_an_error(fake, app):
    location = _authorize(fake, app, "alice", redirect_uri="https://evil.example/cb")
    assert location.startswith(CALLBACK + "?")
    assert _query(location)["error"] == "redirect_uri_mismatch"
    assert "code" not in _query(location)


def test_a_declining_user_comes_back_with_access_denied(fake, app):
    fake.oauth.decline("alice")
    query = _query(_authorize(fake, app, "alice"))
    assert query["error"] == "access_denied"
    assert query["state"] == "st"


def test_exchange_gives_an_expiring_user_token_once(fake, app):
    code = _query(_authorize(fake, app, "alice"))["code"]
    body = _exchange(fake, app, code).json()
    assert body["token_type"] == "bearer"
    assert body["access_token"].startswith("ghu_")
    assert body["refresh_token"].startswith("ghr_")
    assert body["expires_in"] == 8 * 3600
    me = fake.session(body["access_token"]).get(f"{fake.api_url}/user")
    assert me.status_code == 200
    assert me.json()["login"] == "alice"
    again = _exchange(fake, app, code).json()
    assert again["error"] == "bad_verification_code"
    fake.assert_clean()


def test_exchange_refusals(fake, app, clock):
    code = _query(_authorize(fake, app, "alice"))["code"]
    assert _exchange(fake, app, code, secret="wrong").json()["error"] == (
        "incorrect_client_credentials"
    )
    clock.advance(11 * 60)  # codes live ten minutes
    assert _exchange(fake, app, code).json()["error"] == "bad_verification_code"
    assert fake.oauth.exchanges == ["incorrect_client_credentials", "bad_verification_code"]


def test_exchange_answers_form_encoded_unless_asked_for_json(fake, app):
    code = _query(_authorize(fake, app, "alice"))["code"]
    response = _exchange(fake, app, code, json=False)
    assert response.headers["content-type"].startswith("application/x-www-form-urlencoded")
    assert parse_qs(response.text)["access_token"][0].startswith("ghu_")


def test_user_tokens_list_their_apps_installations_only(fake, app):
    fake.state.create_repo("alice/app")
    mine = fake.state.install_app(app, "alice")
    other = fake.install_app("alice", slug="someone-else")
    code = _query(_authorize(fake, app, "alice"))["code"]
    session = fake.session(_exchange(fake, app, code).json()["access_token"])
    listed = session.get(f"{fake.api_url}/user/installations").json()
    assert [i["id"] for i in listed["installations"]] == [mine.id]
    repos = session.get(f"{fake.api_url}/user/installations/{other.installation.id}/repositories")
    assert repos.status_code == 404
    installation = fake.session(fake.installation_token(other))
    assert installation.get(f"{fake.api_url}/user").status_code == 403
    fake.assert_clean()


def test_install_comes_back_with_installation_and_code_then_lags(fake, app, clock):
    fake.state.user("acme", type="Organization")
    fake.state.create_repo("acme/site")
    fake.state.add_collaborator("acme/site", "alice")
    browser = fake.oauth.browser("alice")
    page = browser.get(f"{fake.git_url}/apps/connect/installations/new", params={"state": "s"})
    assert page.status_code == 200  # no choice made: GitHub's page waits for one
    fake.oauth.choose_install("alice", "acme", lag_seconds=30, lag_listings=1)
    response = browser.get(
        f"{fake.git_url}/apps/connect/installations/new",
        params={"state": "s"},
        allow_redirects=False,
    )
    query = _query(response.headers["Location"])
    assert query["setup_action"] == "install"
    assert query["state"] == "s"
    inst = fake.state.installations[int(query["installation_id"])]
    assert inst.account.login == "acme"
    session = fake.session(_exchange(fake, app, query["code"]).json()["access_token"])

    def listed() -> list[int]:
        body = session.get(f"{fake.api_url}/user/installations").json()
        return [i["id"] for i in body["installations"]]

    assert listed() == []  # within the 30 seconds
    clock.advance(31)
    assert listed() == []  # one more listing without it
    assert listed() == [inst.id]
    assert (
        session.get(f"{fake.api_url}/user/installations")
        .json()["installations"][0]["html_url"]
        .endswith(f"/organizations/acme/settings/installations/{inst.id}")
    )
    fake.assert_clean()


def _signed_in_by_form(fake, login: str, password: str, return_to: str):
    """A browser without a session signs in on GitHub's form (``requests`` as the browser)."""
    browser = requests.Session()
    form = browser.get(f"{fake.git_url}/login", params={"return_to": return_to})
    assert form.status_code == 200
    assert 'name="password"' in form.text
    assert f'name="return_to" value="{html.escape(return_to)}"' in form.text
    answer = browser.post(
        f"{fake.git_url}/session",
        data={"login": login, "password": password, "return_to": return_to},
        allow_redirects=False,
    )
    return browser, answer


def test_the_sign_in_form_signs_in_and_returns(fake, app):
    authorize = "/login/oauth/authorize?" + urlencode({"client_id": app.client_id, "state": "st"})
    anonymous = requests.get(f"{fake.git_url}{authorize}", allow_redirects=False)
    to_login = anonymous.headers["Location"]
    assert _query(to_login)["return_to"] == authorize

    refused_browser, refused = _signed_in_by_form(fake, "alice", "wrong", authorize)
    assert refused.status_code == 200
    assert "Incorrect username or password." in refused.text
    assert SESSION_COOKIE not in refused_browser.cookies

    browser, answer = _signed_in_by_form(fake, "alice", TEST_PASSWORD, authorize)
    assert answer.status_code == 302
    assert answer.headers["Location"] == f"{fake.git_url}{authorize}"
    assert browser.cookies.get(SESSION_COOKIE)
    # First authorization: GitHub's Authorize page, not a redirect yet.
    page = browser.get(answer.headers["Location"], allow_redirects=False)
    assert page.status_code == 200
    assert f"Authorize {app.name}" in page.text
    assert "Signed in as alice" in page.text

    # Another site as return_to: GitHub stays on its own pages.
    _, away = _signed_in_by_form(fake, "alice", TEST_PASSWORD, "//evil.example/x")
    assert away.headers["Location"] == f"{fake.git_url}/"


def test_the_authorize_page_authorizes_once_or_declines(fake, app):
    browser, _ = _signed_in_by_form(fake, "alice", TEST_PASSWORD, "/")
    params = {"client_id": app.client_id, "state": "st", "redirect_uri": CALLBACK + "/x"}
    authorize = f"{fake.git_url}/login/oauth/authorize"

    cancelled = browser.post(authorize, data={**params, "authorize": "0"}, allow_redirects=False)
    assert cancelled.status_code == 302
    assert _query(cancelled.headers["Location"])["error"] == "access_denied"
    assert _query(cancelled.headers["Location"])["state"] == "st"
    assert browser.get(authorize, params=params, allow_redirects=False).status_code == 200

    accepted = browser.post(authorize, data={**params, "authorize": "1"}, allow_redirects=False)
    assert accepted.status_code == 302
    back = accepted.headers["Location"]
    assert back.startswith(CALLBACK + "/x?")
    assert _query(back)["state"] == "st"
    assert _exchange(fake, app, _query(back)["code"]).json()["access_token"].startswith("ghu_")
    # Authorized once: the next authorization goes straight back with a code.
    again = browser.get(authorize, params=params, allow_redirects=False)
    assert again.status_code == 302
    assert "code" in _query(again.headers["Location"])
    # A form post without a GitHub session is refused.
    assert requests.post(authorize, data={**params, "authorize": "1"}).status_code == 422


def test_the_install_page_installs_on_the_users_account(fake, app):
    browser = fake.oauth.browser("alice")
    install = f"{fake.git_url}/apps/{app.slug}/installations/new"
    page = browser.get(install, params={"state": "st"}, allow_redirects=False)
    assert page.status_code == 200
    assert f"Install {app.name}" in page.text
    assert 'name="state" value="st"' in page.text
    assert not fake.state.installations  # nothing installed by looking

    other = browser.post(install, data={"account": "bob", "state": "st"}, allow_redirects=False)
    assert other.status_code == 422  # only her own account is offered
    done = browser.post(install, data={"account": "alice", "state": "st"}, allow_redirects=False)
    assert done.status_code == 302
    back = _query(done.headers["Location"])
    assert back["setup_action"] == "install"
    assert back["state"] == "st"
    [installed] = fake.state.installations.values()
    assert back["installation_id"] == str(installed.id)
    assert installed.account.login == "alice"
    assert _exchange(fake, app, back["code"]).json()["access_token"].startswith("ghu_")
