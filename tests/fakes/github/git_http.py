"""The web host: Git smart HTTP through ``git http-backend`` (CGI), and asset downloads.

``{git_url}/{owner}/{name}.git`` is served from the repository's bare directory. HTTP
Basic auth: user ``x-access-token`` and an installation token, or any user and a personal
token. Reading needs access (anonymous reads only for public repositories), pushing needs
write access ("contents: write" for installations). Each bare repository hides
``refs/pull`` from receive-pack, so pushing there fails with "deny updating a hidden ref".
A push whose pack is larger than ``GitHubFake.max_push_bytes`` (GitHub: 2 GiB) is refused
as GitHub refuses it: "fatal: pack exceeds maximum allowed size", no ref moves (git's own
``receive.maxInputSize``, the limit GitHub's receive-pack passes to index-pack).
A push asking for more ref updates than ``GitHubFake.max_ref_updates_per_push`` is
refused before any Git runs, as GitHub's spokes refuses it (its
``receive.refupdatecommandlimit``): "maximum ref updates exceeded: N commands sent but
max allowed is M", an HTTP 500 to the client (what users of github.com report: git says
"RPC failed; HTTP 500"), no object or ref lands. The commands are read from the body
before the backend starts and handed on with the rest of it (``_read_commands``).
Request and response bodies are streamed between the client and the CGI process.

A repository's wiki is served at ``{git_url}/{owner}/{name}.wiki.git`` with the same
credentials and rights, from a bare repository of its own. It exists only once pushed to:
until then reading it is "Repository not found", and the first push (the receive-pack
advertisement) creates it while the repository's ``has_wiki`` is on. With ``has_wiki``
off the wiki is not served at all, pushes included (404), whether it exists or not.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import parse_qsl, unquote

from werkzeug.wsgi import get_input_stream

from tests.fakes.forge_server.git_http import (
    GIT_PATH,
    answer_served,
    asks_push,
    moved,
    serve_git,
)
from tests.fakes.github import auth, signed_urls, webhook_events
from tests.fakes.github.models import Repo, Token
from tests.fakes.github.requests_log import RequestRecord
from tests.fakes.gitserver import bare_repos
from tests.fakes.gitserver.smart_http import (
    PushCommands,
    Refusal,
    _gzipped,
    basic_credentials,
    file_chunks,
)
from tests.fakes.gitserver.wsgi import raw_target

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from tests.fakes.github.server import GitHubFake
    from tests.fakes.github.state import State

DOWNLOAD_PATH = re.compile(
    r"^/(?P<owner>[^/]+)/(?P<name>[^/]+)/releases/download/(?P<tag>[^/]+)/(?P<asset>[^/]+)$"
)
CHUNK = 1 << 16
GIT_BACKEND = shutil.which("git") or "git"


class GitHttpApp:
    def __init__(self, fake: GitHubFake) -> None:
        self.fake = fake

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path, query = raw_target(environ)
        method = environ["REQUEST_METHOD"].upper()
        arrived = self.fake.state.now()
        fault = self.fake.faults.pick("git", method, path)
        owner: list[str | None] = [None]
        quota: list[str | None] = [None]

        def log(status: int) -> None:
            self.fake.requests_log.add(
                RequestRecord(
                    at=arrived,
                    host="git",
                    method=method,
                    path=path,
                    query=dict(parse_qsl(query, keep_blank_values=True)),
                    status=status,
                    token_owner=owner[0],
                    counted_primary=False,
                    not_modified=False,
                    content_creating=False,
                    secondary_limited=False,
                    primary_limited=False,
                    fault=fault.kind if fault is not None else None,
                    quota=quota[0],
                )
            )

        if fault is not None and fault.kind == "latency":
            time.sleep(fault.seconds)
        try:
            if fault is not None and fault.kind == "error":
                raise Refusal(f"{fault.status} Error", "injected fault\n", fault.answer_headers())
            if self.fake.oauth.matches(path):  # the OAuth web flow (oauth.py)
                return self.fake.oauth.handle(environ, start_response, path, log)
            if self.fake.lfs.matches(path):
                return self.fake.lfs.handle(
                    environ, start_response, path, fault, self._authorize, log
                )
            download = DOWNLOAD_PATH.match(path)
            if download is not None and method == "GET":
                return self._download(download.groupdict(), start_response, log, environ, query)
            found = GIT_PATH.match(path)
            if found is None:
                raise Refusal("404 Not Found", "Not Found\n")
            push = asks_push(found["rest"], query)
            repo, token, git_dir = self._authorize_git(
                environ, unquote(found["owner"]), unquote(found["name"]), push
            )
            owner[0] = token.user.login if token is not None else None
            quota[0] = token.rate_key if token is not None else None
            limit = self.fake.max_ref_updates_per_push
            if push and method == "POST" and found["rest"] == "git-receive-pack" and limit:
                sent, body = _read_commands(environ)
                if sent > limit:
                    _drain(body)
                    raise Refusal(
                        "500 Internal Server Error",
                        f"maximum ref updates exceeded: {sent} commands sent but max "
                        f"allowed is {limit}\n",
                    )
        except Refusal as refusal:
            log(int(refusal.status.split()[0]))
            start_response(
                refusal.status,
                [("content-type", "text/plain; charset=utf-8"), *refusal.headers],
            )
            return [refusal.message.encode()]
        rest = found["rest"]
        wiki = git_dir != repo.git_dir  # a wiki's push is no push of the repository
        served = repo.full_name + (".wiki" if wiki else "")
        pushed = push and method == "POST" and not wiki
        status, headers, output = serve_git(
            self.fake,
            environ,
            git_dir,
            served,
            rest,
            query,
            pushed=pushed,
            remote_user=token.user.login if token is not None else "",
            max_push_bytes=self.fake.max_push_bytes,
            after_push=lambda commands: self._after_push(repo, commands, token),
        )
        return answer_served(fault, (status, headers, output), start_response, environ, log)

    def _authorize_git(
        self, environ: WSGIEnvironment, owner: str, name: str, push: bool
    ) -> tuple[Repo, Token | None, Path]:
        """The repository, the caller's token and the Git directory to serve (the
        repository's, or its wiki's: see ``_wiki_dir``)."""
        repo, token = self._authorize(environ, owner, name, push, wiki=True)
        if repo.name.casefold() != name.casefold() and name.casefold().endswith(".wiki"):
            return repo, token, self._wiki_dir(repo, push)
        return repo, token, repo.git_dir

    def _wiki_dir(self, repo: Repo, push: bool) -> Path:
        """The wiki served for ``<name>.wiki.git``: created by the first push while the
        wiki is enabled (unless ``wiki_created_by_push`` is off: then only a first page
        creates it, ``State.create_wiki_page``), "not found" before that and whenever
        the wiki is disabled."""
        state = self.fake.state
        with state.lock:
            if not repo.has_wiki:
                raise Refusal("404 Not Found", "Repository not found.\n")
            if not (repo.wiki_dir / "HEAD").exists():
                if not push or not self.fake.wiki_created_by_push:
                    raise Refusal("404 Not Found", "Repository not found.\n")
                bare_repos.init_wiki(repo.wiki_dir)
        return repo.wiki_dir

    def _authorize(
        self, environ: WSGIEnvironment, owner: str, name: str, push: bool, *, wiki: bool = False
    ) -> tuple[Repo, Token | None]:
        """The repository ``name`` names (with ``wiki``, ``<name>.wiki`` names it too) and
        the caller's token, once the caller may read it (or push, with ``push``)."""
        state = self.fake.state
        challenge = [("www-authenticate", 'Basic realm="GitHub"')]
        repo, _ = state.find_repo(owner, name)
        if repo is None and wiki and name.casefold().endswith(".wiki"):
            repo, _ = state.find_repo(owner, name[: -len(".wiki")])
        credentials = basic_credentials(environ.get("HTTP_AUTHORIZATION"))
        token = None
        if credentials is not None:
            user, password = credentials
            token = state.token(password)
            expired = (
                token is not None
                and token.expires_at is not None
                and state.now() >= token.expires_at
            )
            if (
                token is None
                or expired
                or (token.kind == "installation" and user != "x-access-token")
            ):
                raise Refusal("401 Unauthorized", "Invalid username or token.\n", challenge)
        if repo is None or not state.served_to_git(repo):
            raise Refusal("404 Not Found", "Repository not found.\n")
        if token is None:
            if repo.private or push:
                raise Refusal("401 Unauthorized", "Authentication required.\n", challenge)
            return repo, None
        reached = auth.reaches(state, token, repo)
        if not reached and repo.private:
            raise Refusal("404 Not Found", "Repository not found.\n")
        if push and not (reached and auth.can(token, ("contents",), True)):
            raise Refusal(
                "403 Forbidden",
                f"Permission to {repo.full_name}.git denied to {token.user.login}.\n",
            )
        if reached and not auth.can(token, ("contents",), False):
            raise Refusal("403 Forbidden", "Read access to repository not granted.\n")
        return repo, token

    def _after_push(self, repo: Repo, commands: PushCommands | None, token: Token | None) -> None:
        state = self.fake.state
        with state.lock:
            repo.pushed_at = state.now()
        state.sync_pull_heads(repo)
        if commands is None or token is None:
            return
        with state.lock:
            self.fake.receive_pack_requests.append(list(commands.updates))
            webhook_events.ref_updates(
                self.fake.webhooks,
                self.fake.urls,
                state,
                repo,
                moved(repo.git_dir, commands.updates),
                token.user,
            )

    def _download(
        self,
        parts: dict[str, str],
        start_response: StartResponse,
        log: Callable[[int], None],
        environ: WSGIEnvironment,
        query: str,
    ) -> Iterable[bytes]:
        """An asset's bytes. A published asset of a public repository is anyone's; a
        draft release's asset, or a private repository's, needs credentials that reach
        the repository (a draft's: push access, as seeing a draft does), or the signed
        query of the API's redirect (signed_urls.py), and is a 404 without
        them, as GitHub hides what a caller may not see."""
        state = self.fake.state
        with state.lock:
            repo, _ = state.find_repo(unquote(parts["owner"]), unquote(parts["name"]))
            tag, name = unquote(parts["tag"]), unquote(parts["asset"])
            asset = None
            hidden = draft = False
            if repo is not None:
                for release in repo.releases.values():
                    if release.tag_name == tag:
                        asset = next(
                            (repo.assets[i] for i in release.assets if repo.assets[i].name == name),
                            None,
                        )
                        if asset is not None:
                            hidden = release.draft or repo.private
                            draft = release.draft
                            break
            signed = asset is not None and signed_urls.valid(
                state.signing_key, asset.id, query, state.now().timestamp()
            )
            if asset is not None and hidden and not signed:
                token = _download_token(state, environ.get("HTTP_AUTHORIZATION"))
                assert repo is not None
                if (
                    token is None
                    or not auth.reaches(state, token, repo)
                    or not auth.can(token, ("contents",), draft)
                ):
                    asset = None
            if asset is None:
                raise Refusal("404 Not Found", "Not Found\n")
            asset.download_count += 1
        log(200)
        start_response(
            "200 OK",
            [("content-type", asset.content_type), ("content-length", str(asset.size))],
        )
        return file_chunks(asset.path.open("rb"))


def _read_commands(environ: WSGIEnvironment) -> tuple[int, IO[bytes]]:
    """How many ref updates a receive-pack request asks for, read before any Git runs,
    and the rest of its body.

    Only the body's first pkt-lines (the commands, before the pack) are read; what was
    read goes back in front of the rest, so the backend gets all of it. A push refused
    for its count has its pack read to the end and dropped (``_drain``): a client still
    sending gets the refusal, not a connection reset.
    """
    body = get_input_stream(environ)
    commands = PushCommands(_gzipped(environ))
    head: list[bytes] = []
    while not commands.complete and (chunk := body.read(CHUNK)):
        commands.feed(chunk)
        head.append(chunk)
    environ["wsgi.input"] = _Replay(b"".join(head), body)
    return len(commands.updates), body


class _Replay:
    """A request body read again: the bytes already read, then the rest of the stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._rest.read(size)


def _drain(body: IO[bytes]) -> None:
    while body.read(CHUNK):
        pass


def _download_token(state: State, header: str | None) -> Token | None:
    """The live token of a download's ``Authorization``: ``Bearer``/``token`` (what API
    clients send) or Basic with the token as password (what Git sends)."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    secret: str | None = value.strip()
    if scheme.lower() == "basic":
        credentials = basic_credentials(header)
        secret = credentials[1] if credentials is not None else None
    elif scheme.lower() not in ("bearer", "token"):
        secret = None
    token = state.token(secret) if secret else None
    if token is None or (token.expires_at is not None and state.now() >= token.expires_at):
        return None
    return token
