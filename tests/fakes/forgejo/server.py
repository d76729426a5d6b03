"""ForgejoFake: one HTTP server on 127.0.0.1 serving a Forgejo instance's single host, the
REST API under ``/api/v1`` (app.py) and the web host at the root: Git, the wiki, LFS and
attachments (git_http.py), over one state."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC
from email.utils import format_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import requests

from tests.fakes.contract_base import (
    RecordingValidator,
    attach,
    check_exchange,
)
from tests.fakes.contract_forgejo import ForgejoContract
from tests.fakes.forge_server.clock import Clock, system_clock
from tests.fakes.forge_server.serving import FakeServer, QuietHandler, base_url, serve
from tests.fakes.forgejo.app import API_PREFIX, ApiApp, RequestRecord
from tests.fakes.forgejo.git_http import GitHttpApp
from tests.fakes.forgejo.models import Repo
from tests.fakes.forgejo.render import Urls
from tests.fakes.forgejo.routing import DEFAULT_PAGING_NUM, MAX_RESPONSE_ITEMS
from tests.fakes.forgejo.state import RepoRef, State
from tests.fakes.forgejo.webhooks import ForgejoHook, ForgejoWebhooks
from tests.fakes.github.faults import Faults
from tests.fakes.gitserver.smart_http import UploadPackRequest

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment


class _DatedHandler(QuietHandler):
    #: The server's clock: what its ``Date`` header says (a server's Date is its own time,
    #: the time its records are stamped with; clients narrow ``since`` windows by it).
    clock: Clock = staticmethod(system_clock)  # type: ignore[assignment]

    def date_time_string(self, timestamp: float | None = None) -> str:
        if timestamp is not None:
            return super().date_time_string(timestamp)
        return format_datetime(type(self).clock().astimezone(UTC), usegmt=True)


class _Host:
    """``/api/v1`` to the API, everything else to the web host."""

    def __init__(self, api: ApiApp, web: GitHttpApp) -> None:
        self.api, self.web = api, web

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
            return self.api(environ, start_response)
        return self.web(environ, start_response)


class ForgejoFake(FakeServer):
    """A Forgejo-faithful server for tests (see tests/fakes/forgejo/__init__.py)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        root: Path | None = None,
        validate_responses: bool = True,
        validate_requests: bool = True,
        max_response_items: int = MAX_RESPONSE_ITEMS,
        default_paging_num: int = DEFAULT_PAGING_NUM,
        max_push_bytes: int | None = None,
        lfs_max_file_size: int = 0,
    ) -> None:
        self.clock: Clock = clock or system_clock
        self.root = self._init_server(root, "forgejo-fake-")
        self.state = State(self.root, self.clock)
        #: ``[api] MAX_RESPONSE_ITEMS`` and ``DEFAULT_PAGING_NUM`` (Forgejo: 50 and 30).
        self.max_response_items = max_response_items
        self.default_paging_num = default_paging_num
        #: Largest pack one push may carry; None: no limit, Forgejo's default.
        self.max_push_bytes = max_push_bytes
        #: ``[server] LFS_MAX_FILE_SIZE`` (0: no limit, Forgejo's default).
        self.lfs_max_file_size = lfs_max_file_size
        self.validate_responses = validate_responses
        self.validate_requests = validate_requests
        self.requests: list[RequestRecord] = []
        self.upload_pack_requests: list[UploadPackRequest] = []
        self.receive_pack_requests: list[list[tuple[str, str, str]]] = []
        #: The Git host's requests as answered: (method, path, status; 0: none, the
        #: connection closed), the refused ones too.
        self.git_requests: list[tuple[str, str, int]] = []
        self.root_url = ""
        self.urls = Urls("")
        self.contract = ForgejoContract()
        self.client_recorder = RecordingValidator(self.contract)
        self.webhooks = ForgejoWebhooks(self)
        #: Injected failures (``tests/fakes/github/faults.py``'s kinds) of the REST API
        #: (host ``"api"``) and of Git smart HTTP (host ``"git"``).
        self.faults = Faults()

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> ForgejoFake:
        app = _Host(ApiApp(self), GitHttpApp(self))
        handler = type("Handler", (_DatedHandler,), {"clock": staticmethod(self.clock)})
        server, thread = serve(app, "forgejo-fake", handler)
        self._servers.append((server, thread))
        self.root_url = base_url(server)
        self.urls = Urls(self.root_url)
        self._run(ForgejoContract(base_url=self.root_url))
        return self

    # -- what clients are given ---------------------------------------------------------

    @property
    def api_url(self) -> str:
        """The API base, ``<root>/api/v1``."""
        return self.root_url + API_PREFIX

    @property
    def git_url(self) -> str:
        """Where repositories are cloned from (``<git_url>/<owner>/<name>.git``)."""
        return self.root_url

    @property
    def swagger_url(self) -> str:
        """What Forgejo's error answers name as ``url`` (``setting.API.SwaggerURL``)."""
        return f"{self.root_url}/api/swagger"

    def git_remote(self, full_name: str, token: str | None = None, *, wiki: bool = False) -> str:
        """The clone URL, with ``<login>:<token>@`` when a token is given."""
        host = self.root_url.removeprefix("http://")
        found = self.state.token(token) if token else None
        credentials = f"{found.user.login if found else 'x'}:{token}@" if token else ""
        return f"http://{credentials}{host}/{full_name}{'.wiki' if wiki else ''}.git"

    def add_token(
        self, login: str, *, scopes: Sequence[str] = ("all",), admin: bool | None = None
    ) -> str:
        """A personal access token of ``login`` (see State.add_token); its value."""
        return self.state.add_token(login, scopes=scopes, admin=admin).value

    def add_webhook(
        self,
        repo: RepoRef,
        url: str,
        secret: str | None = None,
        events: Sequence[str] = ("push",),
        *,
        content_type: str = "json",
        kind: str = "forgejo",
        active: bool = True,
        branch_filter: str = "*",
    ) -> ForgejoHook:
        """A repository's webhook, as Settings > Webhooks makes one (``*``: everything)."""
        found: Repo = self.state.repo(repo)
        return self.webhooks.add(
            url,
            repo=found,
            secret=secret,
            events=events,
            content_type=content_type,
            active=active,
            kind=kind,
            branch_filter=branch_filter,
        )

    def add_org_webhook(
        self, org: str, url: str, secret: str | None = None, events: Sequence[str] = ("*",)
    ) -> ForgejoHook:
        """An organization's webhook: the events of all its repositories, and
        ``repository`` ``created``."""
        return self.webhooks.add(
            url, org=self.state.user(org), secret=secret, events=events, active=True
        )

    def session(self, token: str | None = None) -> requests.Session:
        """A requests session as a Forgejo client sets one up, the contract attached."""
        session = requests.Session()
        session.headers["Accept"] = "application/json"
        if token:
            session.headers["Authorization"] = f"token {token}"
        attach(session, self.client_recorder)
        return session

    def httpx_client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client whose every exchange is checked against the contract (what
        generated clients such as pyforgejo are given)."""

        def check(response: httpx.Response) -> None:
            response.read()
            request = response.request
            check_exchange(
                self.client_recorder,
                request.method,
                str(request.url),
                request.headers.items(),
                request.content if not request.stream or request.content else None,
                response.status_code,
                response.headers,
                lambda: response.content,
            )

        return httpx.Client(event_hooks={"response": [check]}, **kwargs)
