"""A plain Git server over HTTP: ``git http-backend`` (CGI, ``smart_http.start_backend``)
behind HTTP Basic auth, and an LFS server beside it (``plain_lfs.py``), on 127.0.0.1.

What any self-hosted Git server does, and nothing a forge adds: repositories are bare
directories under ``root`` (``<root>/acme/app.git`` is ``<url>/acme/app.git``); every
request needs a user (401 with a ``WWW-Authenticate: Basic`` challenge, so git asks its
credential helper); a push, an LFS upload, needs one with write access (403 otherwise).
``git http-backend`` serves Git's smart protocol, version 2 included (the ``Git-Protocol``
header is handed on), exactly as Apache or nginx would run it.

``requests`` records each request (method, path, service, user, status), so a test can
count pushes and reads.
"""

from __future__ import annotations

import functools
import re
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from werkzeug.serving import make_server

from tests.fakes.forge_server.serving import QuietHandler
from tests.fakes.gitserver.plain_lfs import LFS_PATH, LfsEndpoints
from tests.fakes.gitserver.smart_http import CHUNK, basic_credentials, start_backend
from tests.fakes.gitserver.wsgi import drop_connection

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

GIT_PATH = re.compile(
    r"^/(?P<repo>.+?)/(?P<rest>info/refs|git-upload-pack|git-receive-pack|HEAD|objects/.+)$"
)
#: No pack-size limit of its own (``receive.maxInputSize``): a plain server's default.
NO_LIMIT = 1 << 40


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    #: ``git-upload-pack``/``git-receive-pack`` for Git requests, ``lfs`` for LFS ones.
    service: str
    user: str | None
    status: int


@dataclass
class User:
    password: str
    write: bool = True


@dataclass
class GitHttpServer:
    root: Path
    users: dict[str, User] = field(default_factory=dict)
    #: The token ``git-lfs-authenticate`` hands out over SSH (``sshd.py``): LFS only.
    lfs_token: str = "ssh-lfs-token"
    requests: list[Request] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self.lfs = LfsEndpoints(lambda: self.base_url)
        self._lock = threading.Lock()
        self._server = make_server(
            "127.0.0.1", 0, self._app, threaded=True, request_handler=QuietHandler
        )
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=functools.partial(self._server.serve_forever, poll_interval=0.05),
            daemon=True,
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, name: str, user: str | None = None) -> str:
        """The repository's URL, with ``user`` named in it when given (never a password)."""
        where = f"{user}@127.0.0.1:{self.port}" if user else f"127.0.0.1:{self.port}"
        return f"http://{where}/{name}"

    def add_user(self, name: str, password: str, *, write: bool = True) -> None:
        self.users[name] = User(password, write)

    def repository(self, name: str) -> Path:
        return self.root / name

    def pushes(self) -> list[Request]:
        """The receive-pack requests that carried a push (not the ref advertisements)."""
        return [r for r in self.requests if r.service == "git-receive-pack" and r.method == "POST"]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the WSGI application ----------------------------------------------------------

    def _app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ["REQUEST_METHOD"].upper()
        query = environ.get("QUERY_STRING", "")
        statuses: list[int] = []

        def respond(status: str, headers: list[tuple[str, str]], exc_info: object = None) -> None:
            statuses.append(int(status.split()[0]))
            start_response(status, headers)

        user, lfs_only = self._user(environ)
        lfs = LFS_PATH.match(path)
        git = GIT_PATH.match(path) if lfs is None else None
        service = "lfs" if lfs else _service(git["rest"] if git else "", query)
        try:
            if lfs is None and git is None:
                return _text(respond, "404 Not Found", "Not Found\n")
            if user is None or (lfs_only and lfs is None):
                return _text(
                    respond,
                    "401 Unauthorized",
                    "Authentication required\n",
                    [("www-authenticate", 'Basic realm="git"')],
                )
            can_write = lfs_only or self.users[user].write
            if lfs is not None:
                repo = lfs["repo"]
                return self.lfs.handle(
                    environ,
                    respond,
                    repo,
                    self._git_dir(repo),
                    lfs["rest"],
                    can_write,
                    drop_connection,
                )
            assert git is not None
            if self._git_dir(git["repo"]) != self.root / git["repo"]:
                return _text(respond, "404 Not Found", "Repository not found\n")
            if service == "git-receive-pack" and not can_write:
                return _text(respond, "403 Forbidden", f"{user} may not push here\n")
            return self._backend(environ, respond, user, git["repo"], git["rest"])
        finally:
            with self._lock:
                self.requests.append(
                    Request(method, path, service, user, statuses[0] if statuses else 0)
                )

    def _user(self, environ: WSGIEnvironment) -> tuple[str | None, bool]:
        """The request's user, and whether it came with the SSH-issued LFS token."""
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, value = header.partition(" ")
        if scheme == "RemoteAuth" and value == self.lfs_token:
            return "ssh", True
        credentials = basic_credentials(header)
        if credentials is None:
            return None, False
        name, password = credentials
        known = self.users.get(name)
        return (name, False) if known is not None and known.password == password else (None, False)

    def _git_dir(self, repo: str) -> Path | None:
        """The bare repository an LFS path names (``app`` or ``app.git``)."""
        for name in (repo, repo + ".git"):
            candidate = self.root / name
            if ".." not in Path(name).parts and (candidate / "HEAD").is_file():
                return candidate
        return None

    def _backend(
        self, environ: WSGIEnvironment, respond: StartResponse, user: str, repo: str, rest: str
    ) -> Iterable[bytes]:
        """``git http-backend`` for the repository, its answer streamed back."""
        process, status, headers = start_backend(
            environ,
            self.root / repo,
            rest,
            environ.get("QUERY_STRING", ""),
            remote_user=user,
            home=self.root,
            max_push_bytes=NO_LIMIT,
        )
        respond(status, headers)
        return _output(process)


def _output(process: subprocess.Popen[bytes]) -> Iterator[bytes]:
    assert process.stdout is not None
    try:
        while chunk := process.stdout.read1(CHUNK):
            yield chunk
    finally:
        process.stdout.close()
        process.wait()


def _service(rest: str, query: str) -> str:
    if rest in ("git-upload-pack", "git-receive-pack"):
        return rest
    if rest == "info/refs":
        return (parse_qs(query).get("service") or ["dumb"])[0]
    return "dumb" if rest else ""


def _text(
    respond: StartResponse, status: str, text: str, extra: list[tuple[str, str]] | None = None
) -> Iterable[bytes]:
    data = text.encode()
    respond(
        status,
        [("content-type", "text/plain"), ("content-length", str(len(data))), *(extra or [])],
    )
    return [data]
