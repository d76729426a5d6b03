"""GitHubFake: real HTTP servers on 127.0.0.1 sharing one state, in one of two layouts.

* ``github.com`` (the default): three hosts, as api.github.com, uploads.github.com and
  github.com: here three ports of 127.0.0.1, each serving from its root; and the same
  three by name (api.github.test, uploads.github.test, github.test) on a fourth port
  that a client uses as its HTTP proxy (hosts.py: what real clients need to follow
  GitHub's links from one host to another).
* ``ghes``: GitHub Enterprise Server's single host: the API under ``/api/v3``, uploads
  under ``/api/uploads``, the web and Git at the root (what standard clients expect
  when pointed at an Enterprise Server).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

from tests.fakes.contract import GitHubContract, RecordingValidator, attach
from tests.fakes.forge_server.clock import Clock, system_clock
from tests.fakes.forge_server.serving import FakeServer, base_url, serve
from tests.fakes.github import webhook_events
from tests.fakes.github.app import ApiApp
from tests.fakes.github.auth import KeyPair, generate_key_pair, make_app_jwt
from tests.fakes.github.faults import Faults
from tests.fakes.github.git_http import GitHttpApp
from tests.fakes.github.hosts import NAMED, ByHost, by_name
from tests.fakes.github.lfs import LfsServer
from tests.fakes.github.models import App, Installation
from tests.fakes.github.oauth import OAuthFlow
from tests.fakes.github.ratelimit import RateLimiter, SecondaryLimits
from tests.fakes.github.render import Urls
from tests.fakes.github.requests_log import RequestLog
from tests.fakes.github.state import RepoRef, State
from tests.fakes.github.webhooks import Webhook, WebhookHub
from tests.fakes.gitserver.smart_http import UploadPackRequest

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


@dataclass
class AppInstall:
    """A registered GitHub App, its key pair and one installation."""

    app: App
    installation: Installation
    keys: KeyPair
    fake: GitHubFake

    def jwt(
        self, *, issuer: str | int | None = None, iat_offset: int = -60, lifetime: int = 540
    ) -> str:
        """A JWT signed with the app's key, timed by the fake's clock."""
        return make_app_jwt(
            self.keys.private_pem,
            issuer if issuer is not None else self.app.client_id,
            now=self.fake.clock().timestamp(),
            iat_offset=iat_offset,
            lifetime=lifetime,
        )


#: Where GitHub Enterprise Server mounts the API and the uploads on its one host.
GHES_API_PREFIX = "/api/v3"
GHES_UPLOADS_PREFIX = "/api/uploads"
LAYOUTS = ("github.com", "ghes")


def _mounted(environ: WSGIEnvironment, prefix: str) -> WSGIEnvironment:
    """The request as the app under ``prefix`` sees it: paths (raw ones too) without it."""
    inner = dict(environ)
    inner["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
    inner["PATH_INFO"] = environ.get("PATH_INFO", "")[len(prefix) :] or "/"
    for key in ("RAW_URI", "REQUEST_URI"):
        raw = environ.get(key)
        if raw is None:
            continue
        if "://" in raw:  # absolute form: keep only the path and query
            raw = "/" + raw.split("://", 1)[1].partition("/")[2]
        inner[key] = raw[len(prefix) :] if raw.startswith(prefix) else raw
        if not inner[key].startswith("/"):
            inner[key] = "/" + inner[key]
    return inner


class SingleHost:
    """GitHub Enterprise Server's one host: ``/api/v3`` -> API, ``/api/uploads`` ->
    uploads, everything else -> web and Git."""

    def __init__(self, api: WSGIApplication, uploads: WSGIApplication, web: WSGIApplication):
        self.mounts = ((GHES_API_PREFIX, api), (GHES_UPLOADS_PREFIX, uploads))
        self.web = web

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        for prefix, app in self.mounts:
            if path == prefix or path.startswith(prefix + "/"):
                return app(_mounted(environ, prefix), start_response)
        return self.web(environ, start_response)


class GitHubFake(FakeServer):
    """A GitHub-faithful server for tests (see tests/fakes/github/__init__.py)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        root: Path | None = None,
        primary_limit: int = 5000,
        secondary: SecondaryLimits | None = None,
        validate_responses: bool = True,
        validate_requests: bool = True,
        layout: str = "github.com",
        max_push_bytes: int = 2 * 1024**3,
        max_ref_updates_per_push: int | None = 500,
        wiki_created_by_push: bool = True,
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
        self.layout = layout
        self.clock: Clock = clock or system_clock
        self.root = self._init_server(root, "github-fake-")
        self.state = State(self.root, self.clock)
        self.limiter = RateLimiter(self.clock, primary_limit, secondary or SecondaryLimits())
        self.faults = Faults()
        #: Git LFS: the Batch API and its transfers on the web host.
        self.lfs = LfsServer(self)
        #: The OAuth web flow of GitHub Apps on the web host (Connect GitHub).
        self.oauth = OAuthFlow(self)
        self.requests_log = RequestLog()
        self.validate_responses = validate_responses
        #: Largest pack one push may carry (GitHub's 2 GiB); tests lower it.
        self.max_push_bytes = max_push_bytes
        #: Most ref updates one push may ask for (None: any number). GitHub's own limit is
        #: not published (spokes' ``receive.refupdatecommandlimit``; users see pushes of
        #: thousands of refs fail); 500 is what reposync's GitHub provider declares it
        #: sends at most, so every test of a GitHub target holds it to that.
        self.max_ref_updates_per_push = max_ref_updates_per_push
        #: Whether the first push to an enabled wiki creates its repository; False is
        #: github.com's way ("Repository not found" until a first page is saved).
        self.wiki_created_by_push = wiki_created_by_push
        #: Every fetch request's command and wants, in arrival order.
        self.upload_pack_requests: list[UploadPackRequest] = []
        #: Every push to a repository (not a wiki), in arrival order: the ref updates it
        #: asked for, ``(before, after, ref)`` each.
        self.receive_pack_requests: list[list[tuple[str, str, str]]] = []
        self.validate_requests = validate_requests
        self.api_url = self.uploads_url = self.git_url = ""
        #: The github.com layout's port for the hosts by name (hosts.py); "" for ghes.
        self.proxy_url = ""
        self.urls = Urls("", "", "")
        self.contract = GitHubContract()
        self.client_recorder = RecordingValidator(self.contract)
        #: Webhooks: hooks, deliveries and their test controls (see webhooks.py).
        self.webhooks = WebhookHub(self)

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> GitHubFake:
        apps: dict[str, WSGIApplication] = {
            "api": ApiApp(self, "api"),
            "uploads": ApiApp(self, "uploads"),
            "git": GitHttpApp(self),
        }
        if self.layout == "ghes":
            host = self._serve("ghes", SingleHost(apps["api"], apps["uploads"], apps["git"]))
            urls = {
                "api": host + GHES_API_PREFIX,
                "uploads": host + GHES_UPLOADS_PREFIX,
                "git": host,
            }
        else:
            urls = {name: self._serve(name, app) for name, app in apps.items()}
            self.proxy_url = self._serve("names", ByHost(apps["api"], apps["uploads"], apps["git"]))
        self.api_url, self.uploads_url, self.git_url = urls["api"], urls["uploads"], urls["git"]
        self.urls = Urls(self.api_url, self.uploads_url, self.git_url)
        self._run(GitHubContract(api_url=self.api_url, uploads_url=self.uploads_url))
        return self

    def _serve(self, name: str, app: WSGIApplication) -> str:
        """A server for ``app`` on a free port (started by ``start``); its base URL."""
        server, thread = serve(app, f"github-fake-{name}")
        self._servers.append((server, thread))
        return base_url(server)

    # -- what real clients are given -----------------------------------------------------

    @property
    def client_api_url(self) -> str:
        """The API base to give a GitHub client: ``http://api.github.test`` in the
        github.com layout (through ``client_proxy_env()``), the API's path on the one
        host of GHES."""
        return NAMED.api if self.proxy_url else self.api_url

    def client_proxy_env(self) -> dict[str, str]:
        """The environment that sends a client's requests for GitHub's hosts by name to
        the fake (HTTP_PROXY) and every other request straight on (NO_PROXY); empty for
        GHES, whose one host needs no names."""
        if not self.proxy_url:
            return {}
        direct = "127.0.0.1,localhost"
        return {
            "HTTP_PROXY": self.proxy_url,
            "http_proxy": self.proxy_url,
            "NO_PROXY": direct,
            "no_proxy": direct,
        }

    def urls_for(self, environ: WSGIEnvironment) -> Urls:
        """The URLs to answer a request with: by name if it came by name."""
        return NAMED if by_name(environ) else self.urls

    # -- conveniences -------------------------------------------------------------------

    def add_token(self, login: str, **kwargs: Any) -> str:
        """A personal access token (see State.add_token)."""
        return self.state.add_token(login, **kwargs)

    def install_app(
        self,
        account: str,
        *,
        repositories: list[str] | None = None,
        permissions: dict[str, str] | None = None,
        slug: str = "reposync-test",
        keys: KeyPair | None = None,
    ) -> AppInstall:
        """Register a GitHub App (fresh RSA keys) and install it on ``account``."""
        keys = keys or generate_key_pair()
        app = self.state.register_app(keys.public_pem, slug=slug)
        installation = self.state.install_app(
            app, account, repositories=repositories, permissions=permissions
        )
        return AppInstall(app=app, installation=installation, keys=keys, fake=self)

    def add_installation(
        self,
        app: AppInstall | App,
        account: str,
        *,
        repositories: list[str] | None = None,
        permissions: dict[str, str] | None = None,
        sender: str | None = None,
    ) -> Installation:
        """Install an App already registered on another ``account`` (all its repositories,
        or only ``repositories``); the App's webhook gets ``installation`` ``created``."""
        found = app.app if isinstance(app, AppInstall) else app
        with self.state.lock:
            inst = self.state.install_app(
                found, account, repositories=repositories, permissions=permissions
            )
            who = self.state.user(sender or account)
            webhook_events.installation(self.webhooks, self.urls, self.state, inst, "created", who)
        return inst

    def change_installation_repositories(
        self,
        install: AppInstall | Installation,
        *,
        added: Sequence[str] = (),
        removed: Sequence[str] = (),
        sender: str | None = None,
    ) -> Installation:
        """Add repositories to an installation or take them away (it becomes "selected"
        repositories, as in its settings); the App's webhook gets
        ``installation_repositories`` ``added`` and/or ``removed``."""
        inst = install.installation if isinstance(install, AppInstall) else install
        with self.state.lock:
            ids = self.state.installation_repo_ids(inst)
            plus = [self.state.repo(r) for r in added]
            minus = [self.state.repo(r) for r in removed]
            inst.repository_selection = "selected"
            inst.repository_ids = (ids | {r.id for r in plus}) - {r.id for r in minus}
            who = self.state.user(sender or inst.account.login)
            for action, repos in (("added", plus), ("removed", minus)):
                if repos:
                    webhook_events.installation_repositories(
                        self.webhooks, self.urls, inst, action, repos, who
                    )
        return inst

    def uninstall_app(
        self, install: AppInstall | Installation, *, sender: str | None = None
    ) -> None:
        """Remove an installation (its tokens stop working); the App's webhook gets
        ``installation`` ``deleted``."""
        inst = install.installation if isinstance(install, AppInstall) else install
        with self.state.lock:
            who = self.state.user(sender or inst.account.login)
            webhook_events.installation(self.webhooks, self.urls, self.state, inst, "deleted", who)
            self.state.installations.pop(inst.id, None)
            for value, token in list(self.state.tokens.items()):
                if token.installation is not None and token.installation.id == inst.id:
                    del self.state.tokens[value]

    def installation_token(self, install: AppInstall | Installation) -> str:
        """An installation token without the HTTP exchange."""
        inst = install.installation if isinstance(install, AppInstall) else install
        return self.state.issue_installation_token(inst).value

    def add_webhook(
        self,
        repo: RepoRef,
        url: str,
        secret: str | None = None,
        events: Sequence[str] = ("push",),
        *,
        content_type: str = "json",
        active: bool = True,
        sender: str | None = None,
    ) -> Webhook:
        """A repository webhook (as Settings > Webhooks makes one: ``push`` only unless
        told, ``*`` for every event); GitHub pings it at once (a ``ping`` delivery)."""
        with self.state.lock:
            found = self.state.repo(repo)
            who = self.state.user(sender) if sender is not None else None
            return self.webhooks.add(
                url,
                secret=secret,
                events=events,
                content_type=content_type,
                active=active,
                repo=found,
                sender=who,
            )

    def set_app_webhook(
        self,
        install: AppInstall | App,
        url: str,
        secret: str | None = None,
        events: Sequence[str] = ("*",),
        *,
        content_type: str = "json",
    ) -> Webhook:
        """A GitHub App's webhook: the events of every repository the App is installed on
        (each payload with its ``installation``), and the App's own ``installation`` and
        ``installation_repositories`` events. Replaces the App's previous webhook."""
        app = install.app if isinstance(install, AppInstall) else install
        for hook in list(self.webhooks.hooks.values()):
            if hook.app_id == app.id:
                self.webhooks.remove(hook)
        return self.webhooks.add(
            url, secret=secret, events=events, content_type=content_type, active=True, app=app
        )

    def git_remote(self, full_name: str, token: str | None = None) -> str:
        """The clone URL, with ``x-access-token:<token>@`` when a token is given."""
        host = self.git_url.removeprefix("http://")
        credentials = f"x-access-token:{token}@" if token else ""
        return f"http://{credentials}{host}/{full_name}.git"

    def session(
        self, token: str | None = None, recorder: RecordingValidator | None = None
    ) -> requests.Session:
        """A requests session as a GitHub client sets one up, with the contract attached."""
        session = requests.Session()
        session.headers["Accept"] = "application/vnd.github+json"
        session.headers["X-GitHub-Api-Version"] = "2022-11-28"
        if token:
            session.headers["Authorization"] = f"Bearer {token}"
        attach(session, recorder or self.client_recorder)
        return session
