"""The web host: Git smart HTTP, the wiki, Git LFS and attachment downloads.

As Forgejo serves them (routers/web/repo/githttp.go, services/lfs/server.go,
routers/web/repo/attachment.go in Forgejo's source):

* ``/{owner}/{name}.git`` and ``/{owner}/{name}.wiki.git``: HTTP Basic with the token as
  password (any user name), or ``Authorization: token``; anonymous reads of public
  repositories; a push needs write access and ``write:repository``, a read of a private
  repository ``read:repository`` (403 "token does not have at least one of required
  scope(s)"). Forgejo has no push size limit by default (``max_push_bytes`` sets one).
  The wiki: 403 "repository wiki is disabled" when off, "not found" until the first
  push creates it (its branch ``main``).
* LFS: the Batch API at ``/{owner}/{name}.git/info/lfs/objects/batch`` (basic transfer);
  each action's ``href`` is on this host (``.../info/lfs/objects/{oid}`` to download,
  ``.../objects/{oid}/{size}`` to upload, ``.../info/lfs/verify``) and its ``header``
  is the client's own ``Authorization``, as Forgejo's ``buildObjectResponse`` does; an
  object already stored gets no upload action; a missing one on download is error 404;
  an OID stored with another size than asked is error 422 "Object <oid> is not <size>
  bytes", either way.
* ``/attachments/{uuid}``: an attachment's bytes with ``ETag: "<uuid>"``, and 304 for a
  matching ``If-None-Match`` (``httpcache.HandleGenericETagCache``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote

from werkzeug.wsgi import get_input_stream

from tests.fakes.forge_server.git_http import (
    GIT_PATH,
    answer_served,
    asks_push,
    moved,
    serve_git,
)
from tests.fakes.forgejo import render, webhooks
from tests.fakes.forgejo.app import token_from
from tests.fakes.forgejo.models import Repo, Token
from tests.fakes.gitserver import bare_repos, lfs_store
from tests.fakes.gitserver.smart_http import (
    PushCommands,
    Refusal,
    file_chunks,
)
from tests.fakes.gitserver.wsgi import raw_target

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from tests.fakes.forgejo.server import ForgejoFake

LFS_PATH = re.compile(
    r"^/(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/info/lfs/"
    r"(?P<what>objects/batch|verify|objects/(?P<oid>[0-9a-f]{64})(?:/(?P<size>\d+))?)$"
)
ATTACHMENT_PATH = re.compile(r"^/attachments/(?P<uuid>[0-9a-f-]{36})$")
CHALLENGE = [("WWW-Authenticate", 'Basic realm="Gitea"')]


class GitHttpApp:
    def __init__(self, fake: ForgejoFake) -> None:
        self.fake = fake

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path, query = raw_target(environ)
        method = environ["REQUEST_METHOD"].upper()
        fault = self.fake.faults.pick("git", method, path)

        def log(status: int) -> None:
            self.fake.git_requests.append((method, path, status))

        if fault is not None and fault.kind == "latency":
            time.sleep(fault.seconds)
        try:
            if fault is not None and fault.kind == "error":
                raise Refusal(f"{fault.status} Error", "injected fault\n", fault.answer_headers())
            attachment = ATTACHMENT_PATH.match(path)
            if attachment is not None and method in ("GET", "HEAD"):
                return self._attachment(environ, start_response, attachment["uuid"])
            lfs = LFS_PATH.match(path)
            if lfs is not None:
                return self._lfs_answered(fault, environ, start_response, lfs.groupdict(), log)
            found = GIT_PATH.match(path)
            if found is None:
                raise Refusal("404 Not Found", "Not found.\n")
            push = asks_push(found["rest"], query)
            owner, name = unquote(found["owner"]), unquote(found["name"])
            wiki = name.casefold().endswith(".wiki")
            repo, token = self._authorize(
                environ, owner, name.removesuffix(".wiki") if wiki else name, push
            )
            git_dir = self._wiki_dir(repo, push) if wiki else repo.git_dir
        except Refusal as refusal:
            log(int(refusal.status.split()[0]))
            start_response(
                refusal.status, [("Content-Type", "text/plain; charset=utf-8"), *refusal.headers]
            )
            return [refusal.message.encode()]
        rest = found["rest"]
        pushed = push and method == "POST" and not wiki
        status, headers, output = serve_git(
            self.fake,
            environ,
            git_dir,
            repo.full_name + (".wiki" if wiki else ""),
            rest,
            query,
            pushed=pushed,
            remote_user=token.user.login if token is not None else "",
            max_push_bytes=self.fake.max_push_bytes or 0,
            after_push=lambda commands: self._after_push(repo, commands, token),
        )
        return answer_served(fault, (status, headers, output), start_response, environ, log)

    # -- who may -----------------------------------------------------------------------

    def _authorize(
        self, environ: WSGIEnvironment, owner: str, name: str, push: bool
    ) -> tuple[Repo, Token | None]:
        state = self.fake.state
        secret = token_from(environ.get("HTTP_AUTHORIZATION"))
        token = state.token(secret) if secret else None
        if secret is not None and token is None:
            raise Refusal("401 Unauthorized", "invalid credentials\n", CHALLENGE)
        repo = state.find_repo(owner, name)
        user = token.user if token is not None else None
        if repo is None or not state.can_read(user, repo):
            if token is None:  # Forgejo asks for credentials before it says "not found"
                raise Refusal("401 Unauthorized", "Unauthorized\n", CHALLENGE)
            raise Refusal("404 Not Found", "Not found.\n")
        if push and token is None:
            raise Refusal("401 Unauthorized", "Unauthorized\n", CHALLENGE)
        if token is not None and not token.allows("repository", push):
            needed = f"{'write' if push else 'read'}:repository"
            raise Refusal(
                "403 Forbidden",
                f"token does not have at least one of required scope(s): [{needed}]\n",
            )
        if push and (user is None or not state.can_write(user, repo)):
            raise Refusal("403 Forbidden", "User permission denied\n")
        return repo, token

    def _wiki_dir(self, repo: Repo, push: bool) -> Any:
        with self.fake.state.lock:
            if not repo.has_wiki:
                raise Refusal("403 Forbidden", "repository wiki is disabled\n")
            if not (repo.wiki_dir / "HEAD").exists():
                if not push:
                    raise Refusal("404 Not Found", "Not found.\n")
                bare_repos.init_wiki(repo.wiki_dir)
                bare_repos.set_head(repo.wiki_dir, "main")
        return repo.wiki_dir

    def _after_push(self, repo: Repo, commands: PushCommands | None, token: Token | None) -> None:
        state = self.fake.state
        with state.lock:
            repo.updated = state.now()
            if commands is None or token is None:
                return
            self.fake.receive_pack_requests.append(list(commands.updates))
            webhooks.pushed(self.fake, repo, moved(repo.git_dir, commands.updates), token.user)
            for issue in state.sync_pull_heads(repo):
                self._synchronized(repo, issue, token)

    def _synchronized(self, repo: Repo, issue: Any, token: Token) -> None:
        urls, state = self.fake.urls, self.fake.state

        def build() -> dict[str, Any]:
            return {
                "action": "synchronized",
                "number": issue.index,
                "pull_request": render.pull(urls, state, repo, issue, None),
                "requested_reviewer": None,
                "repository": render.repository(urls, state, repo, None),
                "sender": render.user(urls, token.user),
                "commit_id": "",
                "review": None,
            }

        self.fake.webhooks.send(repo, "pull_request_sync", build)

    # -- attachments ----------------------------------------------------------------------

    def _attachment(
        self, environ: WSGIEnvironment, start_response: StartResponse, key: str
    ) -> Iterable[bytes]:
        state = self.fake.state
        with state.lock:
            found = None
            for repo in state.repos.values():
                for attachment in repo.attachments.values():
                    if attachment.uuid == key:
                        found = (repo, attachment)
            if found is None:
                raise Refusal("404 Not Found", "Not found.\n")
            repo, attachment = found
            secret = token_from(environ.get("HTTP_AUTHORIZATION"))
            token = state.token(secret) if secret else None
            release = repo.releases.get(attachment.release_id)
            user = token.user if token is not None else None
            hidden = not state.can_read(user, repo) or (
                release is not None
                and release.draft
                and (user is None or not state.can_write(user, repo))
            )
            if hidden:
                raise Refusal("404 Not Found", "Not found.\n")
            etag = f'"{attachment.uuid}"'
            wanted = environ.get("HTTP_IF_NONE_MATCH", "")
            if any(part.strip().removeprefix("W/") == etag for part in wanted.split(",") if part):
                start_response("304 Not Modified", [("ETag", etag)])
                return [b""]
            attachment.download_count += 1
        start_response(
            "200 OK",
            [
                ("Content-Type", "application/octet-stream"),
                ("Content-Length", str(attachment.size)),
                ("ETag", etag),
                ("Content-Disposition", f'attachment; filename="{attachment.name}"'),
            ],
        )
        return file_chunks(attachment.path.open("rb"))

    # -- LFS ------------------------------------------------------------------------------

    def _lfs_answered(
        self,
        fault: Any,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        parts: dict[str, Any],
        log: Callable[[int], None],
    ) -> Iterable[bytes]:
        """An LFS request served and logged, its answer lost or late under a fault that
        strikes after the work (an object stored, then the connection closed)."""
        answered: list[Any] = []

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answered[:] = [status, headers]

        output = self._lfs(environ, cast("StartResponse", keep), parts)
        status, headers = answered
        return answer_served(fault, (status, headers, output), start_response, environ, log)

    def _lfs(
        self, environ: WSGIEnvironment, start_response: StartResponse, parts: dict[str, Any]
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"].upper()
        what = parts["what"]
        try:
            if what == "objects/batch":
                if method != "POST":
                    return self._lfs_answer(start_response, 405, {"message": "Method not allowed"})
                raw = get_input_stream(environ).read()
                try:
                    operation, objects = lfs_store.parse_batch(
                        environ.get("HTTP_ACCEPT", ""), environ.get("CONTENT_TYPE", ""), raw
                    )
                except lfs_store.BatchRefusal as refused:
                    return self._lfs_answer(
                        start_response, refused.status, {"message": refused.message}
                    )
                repo, _ = self._lfs_authorize(environ, parts, operation == "upload")
                answer = [self._lfs_object(environ, repo, operation, obj) for obj in objects]
                return self._lfs_answer(
                    start_response, 200, {"transfer": "basic", "objects": answer}
                )
            repo, _ = self._lfs_authorize(environ, parts, method in ("PUT", "POST"))
            if what == "verify" and method == "POST":
                body = json.loads(get_input_stream(environ).read() or b"null")
                pointer = lfs_store.valid_pointer(body)
                if pointer is None or not lfs_store.object_path(repo.git_dir, pointer[0]).is_file():
                    return self._lfs_answer(start_response, 404, {"message": "Not Found"})
                ok = lfs_store.is_stored(repo.git_dir, *pointer)
                return self._lfs_answer(
                    start_response,
                    200 if ok else 422,
                    {} if ok else {"message": "Unprocessable Entity"},
                )
            oid = parts["oid"]
            if method == "GET" and oid and not parts["size"]:
                path = lfs_store.object_path(repo.git_dir, oid)
                if not path.is_file():
                    return self._lfs_answer(start_response, 404, {"message": "Not Found"})
                start_response(
                    "200 OK",
                    [
                        ("Content-Type", "application/octet-stream"),
                        ("Content-Length", str(path.stat().st_size)),
                    ],
                )
                return lfs_store.chunks(path)
            if method == "PUT" and oid and parts["size"]:
                ok, _ = lfs_store.store(
                    repo.git_dir, oid, int(parts["size"]), get_input_stream(environ)
                )
                return self._lfs_answer(
                    start_response,
                    200 if ok else 422,
                    {} if ok else {"message": "Unprocessable Entity"},
                )
            return self._lfs_answer(start_response, 405, {"message": "Method not allowed"})
        except Refusal as refusal:
            status = int(refusal.status.split()[0])
            headers = [("LFS-Authenticate", 'Basic realm="gitea-lfs"')] if status == 401 else []
            message = "Credentials needed" if status == 401 else refusal.message.strip()
            return self._lfs_answer(start_response, status, {"message": message}, headers)

    def _lfs_authorize(
        self, environ: WSGIEnvironment, parts: dict[str, Any], write: bool
    ) -> tuple[Repo, Token | None]:
        return self._authorize(environ, unquote(parts["owner"]), unquote(parts["name"]), write)

    def _lfs_object(
        self, environ: WSGIEnvironment, repo: Repo, operation: str, obj: Any
    ) -> dict[str, Any]:
        pointer = lfs_store.valid_pointer(obj)
        if pointer is None:
            oid = obj.get("oid") if isinstance(obj, dict) else None
            return {
                "oid": str(oid),
                "size": 0,
                "error": {"code": 422, "message": "Unprocessable Entity"},
            }
        oid, size = pointer
        answer: dict[str, Any] = {"oid": oid, "size": size}
        base = f"{self.fake.root_url}/{repo.full_name}.git/info/lfs"
        header = (
            {"Authorization": environ["HTTP_AUTHORIZATION"]}
            if environ.get("HTTP_AUTHORIZATION")
            else {}
        )
        stored = lfs_store.is_stored(repo.git_dir, oid, size)
        if not stored and lfs_store.is_stored(repo.git_dir, oid):
            # Known under this OID with another size (services/lfs/server.go BatchHandler).
            answer["error"] = {"code": 422, "message": f"Object {oid} is not {size} bytes"}
            return answer
        if operation == "download":
            if not stored:
                answer["error"] = {"code": 404, "message": "Not Found"}
                return answer
            answer["actions"] = {"download": {"href": f"{base}/objects/{oid}", "header": header}}
            return answer
        max_size = self.fake.lfs_max_file_size
        if max_size and size > max_size and not stored:
            answer["error"] = {
                "code": 422,
                "message": f"Size must be less than or equal to {max_size}",
            }
            return answer
        if not stored:
            answer["actions"] = {
                "upload": {"href": f"{base}/objects/{oid}/{size}", "header": header},
                "verify": {"href": f"{base}/verify", "header": header},
            }
        return answer

    @staticmethod
    def _lfs_answer(
        start_response: StartResponse,
        status: int,
        body: dict[str, Any],
        headers: list[tuple[str, str]] | None = None,
    ) -> Iterable[bytes]:
        start_response(
            lfs_store.status_line(status),
            [("Content-Type", lfs_store.MEDIA_TYPE), *(headers or [])],
        )
        return [json.dumps(body).encode()]
