"""Connect GitHub from the web page in a real browser: headless chromium against
``reposync api`` (gunicorn) and a real ``celery worker`` on PostgreSQL and Redis, with
GitHub's test server over real HTTP as github.com (its sign-in form and Authorize page).

What a member does: sign in to reposync, open GitHub, click Connect GitHub, sign in to
GitHub and authorize the App on GitHub's pages, come back to the page and see their
installation and its repositories; then pick two of them on the Overview, create the
Binding and sync it through that installation. Every wait is an explicit Selenium wait on
what a page shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait
from sqlalchemy import select

from reposync.models import Binding, Run
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from reposync.web.app import API_PREFIX
from tests.fakes.github import GitHubFake, generate_key_pair
from tests.fakes.github.oauth import TEST_PASSWORD
from tests.fakes.github.state import DEFAULT_APP_PERMISSIONS
from tests.gitrepo import refs
from tests.integration.web.conftest import TEST_SECRET_KEY
from tests.servers import free_port
from tests.workers import start_api, start_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

SLUG = "reposync-connect"


@pytest.fixture
def fake() -> Iterator[GitHubFake]:
    with GitHubFake() as started:
        yield started


class Site:
    """reposync's API (and a worker) wired to GitHub's test server as github.com, with
    the App (its private key in a file) and its callback on the API's port."""

    def __init__(self, tmp_path: Path, env: dict[str, str], fake: GitHubFake) -> None:
        port = free_port()
        self.base = base = f"http://127.0.0.1:{port}"
        keys = generate_key_pair()
        self.app = app = fake.state.register_app(
            keys.public_pem,
            slug=SLUG,
            permissions={**DEFAULT_APP_PERMISSIONS, "administration": "write"},
        )
        callback = f"{base}{API_PREFIX}/github/install/callback"
        fake.oauth.register(app, callback)
        key = tmp_path / "app-key.pem"
        key.write_bytes(keys.private_pem)
        #: The configured installation: what a side without a connection uses.
        self.ops = fake.state.install_app(app, "ops")
        self.port = port
        self.env = env | {
            "REPOSYNC_SECRET_KEY": TEST_SECRET_KEY,
            "REPOSYNC_GITHUB_API_URL": fake.api_url,
            "REPOSYNC_GITHUB_UPLOADS_URL": fake.uploads_url,
            "REPOSYNC_GITHUB_GIT_URL": fake.git_url,
            "REPOSYNC_GITHUB_APP_ID": str(app.id),
            "REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH": str(key),
            "REPOSYNC_GITHUB_INSTALLATION_ID": str(self.ops.id),
            "REPOSYNC_GITHUB_OAUTH_URL": fake.git_url,
            "REPOSYNC_GITHUB_CLIENT_ID": app.client_id,
            "REPOSYNC_GITHUB_CLIENT_SECRET": app.client_secret,
            "REPOSYNC_GITHUB_APP_SLUG": SLUG,
            "REPOSYNC_GITHUB_CALLBACK_URL": callback,
            "REPOSYNC_GITHUB_CONNECT_WAIT": "3",
            "REPOSYNC_GITHUB_WRITE_INTERVAL": "0",
            "REPOSYNC_HTTP_TIMEOUT": "10",
        }


def sign_in(browser: WebDriver, site: Site, dctx: ServiceContext, login: str) -> None:
    """Sign in to reposync as a new member: nothing to bind yet, the Overview points to
    GitHub; then the GitHub page, not connected."""
    member = create_user(dctx, login)
    wait = WebDriverWait(browser, 60)
    browser.get(site.base + "/signin")
    browser.find_element(By.ID, "token").send_keys(issue_token(dctx, member.id))
    browser.find_element(By.ID, "signin").click()
    wait.until(ec.presence_of_element_located((By.ID, "connect-hint")))
    assert not browser.find_elements(By.ID, "create-binding")
    browser.find_element(By.CSS_SELECTOR, "#connect-hint a").click()
    wait.until(ec.presence_of_element_located((By.ID, "not-connected")))


def sign_in_to_github(browser: WebDriver, fake: GitHubFake, login: str) -> None:
    """GitHub's sign-in form, where a browser without a GitHub session lands."""
    WebDriverWait(browser, 60).until(ec.presence_of_element_located((By.ID, "login_field")))
    assert browser.current_url.startswith(fake.git_url + "/login?")
    browser.find_element(By.ID, "login_field").send_keys(login)
    browser.find_element(By.ID, "password").send_keys(TEST_PASSWORD)
    browser.find_element(By.ID, "sign-in").click()


def test_connect_github_pick_bind_and_sync_in_a_browser(
    tmp_path: Path, dctx: ServiceContext, env, processes, browser, fake: GitHubFake
):
    site = Site(tmp_path, env, fake)
    base, ops = site.base, site.ops
    fake.state.create_repo("alice/app", auto_init=True)
    fake.state.create_repo("alice/mirror")
    fake.state.create_repo("bob/tool", auto_init=True)
    alices = fake.state.install_app(site.app, "alice")
    bobs = fake.state.install_app(site.app, "bob")  # another user's: never shown to her
    processes.append(start_worker(site.env, tmp_path, "w1"))
    processes.append(start_api(site.env, tmp_path, site.port))
    wait = WebDriverWait(browser, 60)
    sign_in(browser, site, dctx, "mel")

    # Connect GitHub: GitHub's sign-in form, then its Authorize page, then back here.
    browser.find_element(By.ID, "connect-github").click()
    sign_in_to_github(browser, fake, "alice")
    authorize = wait.until(ec.element_to_be_clickable((By.ID, "js-oauth-authorize-btn")))
    assert browser.current_url.startswith(fake.git_url + "/login/oauth/authorize?")
    assert "Signed in as alice" in browser.find_element(By.ID, "signed-in-as").text
    authorize.click()
    wait.until(ec.url_to_be(f"{base}/github?outcome=connected"))
    outcome = wait.until(ec.presence_of_element_located((By.ID, "outcome")))
    assert outcome.get_attribute("data-outcome") == "connected"
    assert browser.find_element(By.ID, "github-login").text == "alice"
    connection = f"github:installation:{alices.id}"
    assert connection in browser.find_element(By.ID, f"installation-{alices.id}").text
    assert not browser.find_elements(By.ID, f"installation-{bobs.id}")
    listed = {
        e.text.split(" ·")[0]
        for e in browser.find_elements(By.CSS_SELECTOR, "#repositories li.repository")
    }
    assert listed == {"alice/app", "alice/mirror"}

    # The Overview: pick both repositories by name, create, see the Binding listed.
    browser.find_element(By.CSS_SELECTOR, "#repositories a[href$='#create-binding']").click()
    wait.until(ec.presence_of_element_located((By.ID, "create-binding")))
    source, target = (
        Select(browser.find_element(By.ID, "source-pick")),
        Select(browser.find_element(By.ID, "target-pick")),
    )
    labels = {o.text for o in source.options if o.get_attribute("value")}
    assert labels == {f"alice/app ({connection})", f"alice/mirror ({connection})"}
    source.select_by_visible_text(f"alice/app ({connection})")
    target.select_by_visible_text(f"alice/mirror ({connection})")
    browser.find_element(By.ID, "create").click()
    wait.until(ec.url_matches(r"/bindings/\d+$"))
    binding_id = int(browser.current_url.rsplit("/", 1)[1])
    assert "alice/app" in browser.find_element(By.ID, "authority").text
    with dctx.db.session() as session:
        stored = session.execute(select(Binding)).scalar_one()
        assert stored.id == binding_id
        assert (stored.a_connection_id, stored.b_connection_id) == (connection, connection)
    browser.get(base + "/")
    wait.until(ec.presence_of_element_located((By.ID, f"binding-{binding_id}")))

    # Sync now: the worker runs it through her installation; the page shows it completed.
    browser.get(f"{base}/bindings/{binding_id}")
    wait.until(ec.element_to_be_clickable((By.ID, "sync-now"))).click()
    wait.until(ec.url_matches(r"/runs/\d+$"))
    run_id = int(browser.current_url.rsplit("/", 1)[1])
    WebDriverWait(browser, 120).until(
        ec.text_to_be_present_in_element((By.ID, "run-status"), "completed")
    )
    with dctx.db.session() as session:
        assert session.get(Run, run_id).status == "completed"
    assert refs(Path(fake.state.git_dir("alice/mirror"))) == refs(
        Path(fake.state.git_dir("alice/app"))
    )
    spent = {r.quota for r in fake.requests_log.matching("POST", r"/git-receive-pack$")}
    assert spent == {f"installation:{alices.id}"}
    assert not fake.requests_log.matching(
        "POST", rf"^/app/installations/{ops.id}/access_tokens$", status=201
    )


def test_install_the_app_from_the_page_in_a_browser(
    tmp_path: Path, dctx: ServiceContext, env, processes, browser, fake: GitHubFake
):
    """Install the App: GitHub's install page (no separate Authorize page: installing
    authorizes), back to the GitHub page with the new installation and its repository."""
    site = Site(tmp_path, env, fake)
    fake.state.create_repo("carol/site", auto_init=True)
    processes.append(start_api(site.env, tmp_path, site.port))
    wait = WebDriverWait(browser, 60)
    sign_in(browser, site, dctx, "cal")

    browser.find_element(By.ID, "install-app").click()
    sign_in_to_github(browser, fake, "carol")
    install = wait.until(ec.element_to_be_clickable((By.ID, "install")))
    assert browser.current_url.startswith(f"{fake.git_url}/apps/{SLUG}/installations/new?")
    assert not [i for i in fake.state.installations.values() if i.account.login == "carol"]
    install.click()
    wait.until(ec.url_to_be(f"{site.base}/github?outcome=connected"))
    [installed] = [i for i in fake.state.installations.values() if i.account.login == "carol"]
    assert browser.find_element(By.ID, "github-login").text == "carol"
    assert browser.find_elements(By.ID, f"installation-{installed.id}")
    assert not browser.find_elements(By.ID, f"installation-{site.ops.id}")
    [repository] = browser.find_elements(By.CSS_SELECTOR, "#repositories li.repository")
    assert repository.text.startswith("carol/site")
    assert repository.get_attribute("data-connection") == f"github:installation:{installed.id}"
    browser.get(site.base + "/")
    picks = Select(wait.until(ec.presence_of_element_located((By.ID, "source-pick"))))
    assert [o.text for o in picks.options if o.get_attribute("value")] == [
        f"carol/site (github:installation:{installed.id})"
    ]
