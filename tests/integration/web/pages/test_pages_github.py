"""The web page's GitHub page with Flask's test client: Connect GitHub started from the
page (CSRF-protected forms, the session), GitHub's test server over real HTTP, and the
callback sending the browser back to the page rather than answering JSON."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from reposync.service.accounts.users import create_user, issue_token
from tests.integration.web.accounts import test_github_connect as connect
from tests.integration.web.accounts.test_github_connect import CALLBACK
from tests.integration.web.conftest import bearer, url
from tests.integration.web.pages.test_pages import csrf_of, sign_in

# Connect GitHub's fixtures: GitHub's test server, its App, the settings naming them.
fake, github_app, settings = connect.fake, connect.github_app, connect.settings
ctx, client = connect.ctx, connect.client


def _member(ctx, client, login: str) -> None:
    sign_in(client, issue_token(ctx, create_user(ctx, login).id))


def _start(client, flow: str = "authorize"):
    page = client.get("/github").get_data(as_text=True)
    return client.post("/github/start", data={"flow": flow, "csrf": csrf_of(page)})


def _back_from_github(client, fake, login: str, github_url: str):
    """GitHub's test server (a browser signed in as ``login``) answers GitHub's URL; the
    page's client follows GitHub's redirect to the callback."""
    answered = fake.oauth.browser(login).get(github_url, allow_redirects=False)
    assert answered.status_code == 302, answered.text
    location = urlsplit(answered.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == CALLBACK
    return client.get(f"{location.path}?{location.query}")


def test_connect_github_from_the_page_comes_back_to_it(ctx, fake, github_app, client):
    fake.state.create_repo("alice/app", private=True)
    fake.state.create_repo("bob/tool")
    own = fake.state.install_app(github_app, "alice")
    other = fake.state.install_app(github_app, "bob")
    _member(ctx, client, "al")

    started = _start(client)
    assert started.status_code == 303
    github_url = urlsplit(started.headers["Location"])
    assert f"{github_url.scheme}://{github_url.netloc}" == fake.git_url
    assert github_url.path == "/login/oauth/authorize"
    assert parse_qs(github_url.query)["client_id"] == [github_app.client_id]
    policy = client.get("/github").headers["Content-Security-Policy"]
    assert f"form-action 'self' {fake.git_url}" in policy  # the redirect may leave

    back = _back_from_github(client, fake, "alice", started.headers["Location"])
    assert back.status_code == 302, back.get_data(as_text=True)
    assert back.headers["Location"] == "/github?outcome=connected"
    page = client.get("/github").get_data(as_text=True)
    assert 'id="github-login"' in page
    assert ">alice</a>" in page
    assert f'id="installation-{own.id}"' in page
    assert f'id="installation-{other.id}"' not in page  # only the user's installations
    assert f"/settings/installations/{own.id}" in page  # GitHub's management URL
    assert "alice/app" in page
    assert "bob/tool" not in page
    overview = client.get("/").get_data(as_text=True)
    assert f'value="github:installation:{own.id} github:alice/app"' in overview  # the pick


def test_the_page_forms_need_their_csrf_token(ctx, fake, github_app, client):
    _member(ctx, client, "al")
    assert client.post("/github/start", data={"flow": "authorize"}).status_code == 400
    assert client.post("/github/disconnect").status_code == 400


def test_a_declined_authorization_comes_back_refused(ctx, fake, github_app, client):
    fake.state.install_app(github_app, "alice")
    fake.oauth.decline("alice")
    _member(ctx, client, "al")
    started = _start(client)
    back = _back_from_github(client, fake, "alice", started.headers["Location"])
    assert back.headers["Location"] == "/github?outcome=refused"
    page = client.get(back.headers["Location"]).get_data(as_text=True)
    assert 'data-outcome="refused"' in page
    assert 'id="not-connected"' in page


def test_an_api_client_still_gets_json_from_the_callback(ctx, fake, github_app, client):
    """The API's start records origin ``api``: the same callback answers JSON."""
    fake.state.install_app(github_app, "alice")
    headers = bearer(issue_token(ctx, create_user(ctx, "al").id))
    github_url = client.post(url("/github/authorize/start"), headers=headers).json["url"]
    back = _back_from_github(client, fake, "alice", github_url)
    assert back.status_code == 200
    assert back.json["status"] == "connected"


def test_disconnect_from_the_page(ctx, fake, github_app, client):
    own = fake.state.install_app(github_app, "alice")
    _member(ctx, client, "al")
    _back_from_github(client, fake, "alice", _start(client).headers["Location"])
    page = client.get("/github").get_data(as_text=True)
    assert f'id="installation-{own.id}"' in page
    gone = client.post("/github/disconnect", data={"csrf": csrf_of(page)})
    assert gone.headers["Location"] == "/github?outcome=disconnected"
    page = client.get("/github").get_data(as_text=True)
    assert 'id="not-connected"' in page
    assert f'id="installation-{own.id}"' not in page
