"""ForgejoFake: one HTTP server on 127.0.0.1 serving a Forgejo instance's single host, the
REST API under ``/api/v1`` (app.py) and the web host at the root: Git, the wiki, LFS and
attachments (git_http.py), over one state."""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
import requests
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from tests.fakes.contract_base import (
    ContractViolation,
    RecordingValidator,
    attach,
    check_exchange,
)
from tests.fakes.contract_forgejo import ForgejoContract
from tests.fakes.forgejo.app import API_PREFIX, ApiApp, RequestRecord
from tests.fakes.forgejo.git_http import GitHttpApp
from tests.fakes.forgejo.models import Repo
from tests.fakes.forgejo.render import Urls
from tests.fakes.forgejo.routing import DEFAULT_PAGING_NUM, MAX_RESPONSE_ITEMS
from tests.fakes.forgejo.state import RepoRef, State
from tests.fakes.forgejo.webhooks import ForgejoHook, ForgejoWebhooks
from tests.fakes.github.clock import Clock, system_clock
from tests.fakes.github.webhooks import WebhookDelivery
from tests.fakes.gitserver.smart_http import UploadPackRequest

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment


class _QuietHandler(WSGIRequestHandler):
    def log(self, type: str, message: str, *args: Any) -> None:
        pass


class _Host:
    """``/api/v1`` to the API, everything else to the web host."""

    def __init__(self, api: ApiApp, web: GitHttpApp) -> None:
        self.api, self.web = api, web

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
            return self.api(environ, start_response)
        return self.web(environ, start_response)


class ForgejoFake:
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
        self._own_root = root is None
        self.root = root or Path(tempfile.mkdtemp(prefix="forgejo-fake-"))
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
        self.violations: list[ContractViolation] = []
        self.request_violations: list[ContractViolation] = []
        self.server_errors: list[str] = []
        #: Described operations the fake has no route for (answered 404 and recorded).
        self.unmodelled: list[str] = []
        self.requests: list[RequestRecord] = []
        self.upload_pack_requests: list[UploadPackRequest] = []
        self.receive_pack_requests: list[list[tuple[str, str, str]]] = []
        self.root_url = ""
        self.urls = Urls("")
        self.contract = ForgejoContract()
        self.client_recorder = RecordingValidator(self.contract)
        self.webhooks = ForgejoWebhooks(self)
        self._server: tuple[BaseWSGIServer, threading.Thread] | None = None

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> ForgejoFake:
        app = _Host(ApiApp(self), GitHttpApp(self))
        server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
        server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        thread = threading.Thread(
            target=functools.partial(server.serve_forever, poll_interval=0.05),
            name="forgejo-fake",
            daemon=True,
        )
        self._server = (server, thread)
        self.root_url = f"http://127.0.0.1:{server.server_port}"
        self.urls = Urls(self.root_url)
        self.contract = ForgejoContract(base_url=self.root_url)
        self.client_recorder = RecordingValidator(self.contract)
        thread.start()
        self.webhooks.start()
        return self

    def stop(self) -> None:
        self.webhooks.stop()
        if self._server is not None:
            server, thread = self._server
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
            self._server = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ForgejoFake:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

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

    @property
    def webhook_deliveries(self) -> list[WebhookDelivery]:
        return self.webhooks.deliveries_of()

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

    # -- what went wrong -----------------------------------------------------------------

    def problems(self, *, requests_too: bool = True) -> list[str]:
        found = [str(v) for v in self.violations]
        found += [
            str(v) for v in self.client_recorder.violations if requests_too or not v.is_request
        ]
        found += self.server_errors + self.unmodelled + self.webhooks.violations
        if requests_too:
            found += [str(v) for v in self.request_violations]
        return found

    def assert_clean(self, *, requests_too: bool = True) -> None:
        """No contract violation, server error or unmodelled operation so far."""
        problems = self.problems(requests_too=requests_too)
        assert not problems, "\n".join(problems)
