"""GitHub's Git LFS endpoints on the web host, as git-lfs's Batch API describes them.

* ``POST /{owner}/{name}.git/info/lfs/objects/batch`` (``Accept`` and ``Content-Type``
  ``application/vnd.git-lfs+json``, else 406/422), authenticated like Git over HTTPS
  (Basic, ``x-access-token`` + token; ``upload`` needs push access). The answer's
  ``transfer`` is ``basic``; each object gets ``actions`` (``download``; ``upload`` +
  ``verify``, none when the object is already stored) with ``href``, ``header`` and
  ``expires_in``, or a per-object ``error``: 404 for a missing object on download, 422
  for an invalid one or one larger than ``max_object_size`` (GitHub's limit: 2 GiB on
  Free and Pro). More than ``max_batch`` objects: 413.
* Actions point at ``/_lfs/{repo id}/{oid}`` (GET, PUT) and ``.../verify`` (POST) on
  the same host (github.com sends them to its media hosts), authorized only by the
  action's own ``Authorization: RemoteAuth <secret>`` header until it expires. A PUT
  stores the object only if its bytes hash to the OID and have the announced size (422
  otherwise); a verify answers 200 when the object is stored with that size, else 404.

Objects live in ``<bare repo>/lfs/objects/<aa>/<bb>/<oid>``, git-lfs's own layout, kept
and the Batch API's request checked by ``tests/fakes/gitserver/lfs_store.py``, which the
Forgejo test server shares.
Faults of ``fake.faults`` (host ``git``) apply: ``commit_then_drop`` stores, then
loses the answer.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from werkzeug.wsgi import get_input_stream

from tests.fakes.forge_server.git_http import answer_lost
from tests.fakes.github.faults import FaultRule
from tests.fakes.github.models import Repo, Token
from tests.fakes.gitserver import lfs_store
from tests.fakes.gitserver.lfs_store import MEDIA_TYPE, status_line
from tests.fakes.gitserver.smart_http import Refusal

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from tests.fakes.github.server import GitHubFake

BATCH_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/info/lfs/objects/batch$")
TRANSFER_PATH = re.compile(r"^/_lfs/(?P<repo>\d+)/(?P<oid>[0-9a-f]{64})(?P<verify>/verify)?$")

Authorize = Callable[["WSGIEnvironment", str, str, bool], tuple[Repo, Token | None]]
Log = Callable[[int], None]


class LfsRefusal(Exception):
    def __init__(self, status: int, message: str, headers: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


@dataclass
class _Grant:
    repo_id: int
    oid: str
    size: int
    operation: str
    expires_at: datetime


class LfsServer:
    """The fake's LFS store and its endpoints (``fake.lfs``)."""

    def __init__(self, fake: GitHubFake) -> None:
        self.fake = fake
        #: Largest object accepted (GitHub Free/Pro: 2 GiB).
        self.max_object_size = 2 * 1024**3
        #: Most objects in one batch request.
        self.max_batch = 100
        #: Lifetime of an action's href and header.
        self.expires_in = 3600
        self._grants: dict[str, _Grant] = {}

    # -- for tests ----------------------------------------------------------------------

    def path(self, repo: Repo, oid: str) -> Path:
        return lfs_store.object_path(repo.git_dir, oid)

    def objects(self, full_name: str) -> dict[str, bytes]:
        """Every stored object of a repository, OID -> bytes."""
        return lfs_store.stored_objects(self.fake.state.repo(full_name).git_dir)

    def expire_actions(self) -> None:
        """End every action handed out so far before the ``expires_in`` it announced (a
        token rotated or revoked): using one is then answered 401."""
        now = self.fake.state.now()
        for grant in self._grants.values():
            grant.expires_at = min(grant.expires_at, now)

    # -- routing ------------------------------------------------------------------------

    def matches(self, path: str) -> bool:
        return bool(BATCH_PATH.match(path) or TRANSFER_PATH.match(path))

    def handle(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        path: str,
        fault: FaultRule | None,
        authorize: Authorize,
        log: Log,
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"].upper()
        try:
            batch = BATCH_PATH.match(path)
            if batch is not None:
                if method != "POST":
                    raise LfsRefusal(405, "Method not allowed")
                status, body = self._batch(environ, batch["owner"], batch["name"], authorize)
                return self._answer(environ, start_response, fault, log, status, body)
            transfer = TRANSFER_PATH.match(path)
            assert transfer is not None
            grant = self._grant(environ, int(transfer["repo"]), transfer["oid"])
            if transfer["verify"]:
                if method != "POST":
                    raise LfsRefusal(405, "Method not allowed")
                status, body = self._verify(environ, grant)
                return self._answer(environ, start_response, fault, log, status, body)
            if method == "GET" and grant.operation == "download":
                return self._download(start_response, grant, log)
            if method == "PUT" and grant.operation == "upload":
                status, body = self._upload(environ, grant)
                return self._answer(environ, start_response, fault, log, status, body)
            raise LfsRefusal(405, "Method not allowed")
        except LfsRefusal as refusal:
            log(refusal.status)
            start_response(
                status_line(refusal.status),
                [("content-type", MEDIA_TYPE), *refusal.headers],
            )
            return [json.dumps({"message": refusal.message, "documentation_url": DOCS}).encode()]

    def _answer(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        fault: FaultRule | None,
        log: Log,
        status: int,
        body: dict[str, Any],
    ) -> Iterable[bytes]:
        if fault is not None and fault.kind == "commit_then_drop":  # the work is done
            return answer_lost(fault, start_response, environ, log)
        log(status)
        start_response(status_line(status, "OK"), [("content-type", MEDIA_TYPE)])
        return [json.dumps(body).encode()]

    # -- the Batch API ------------------------------------------------------------------

    def _batch(
        self, environ: WSGIEnvironment, owner: str, name: str, authorize: Authorize
    ) -> tuple[int, dict[str, Any]]:
        try:
            operation, objects = lfs_store.parse_batch(
                environ.get("HTTP_ACCEPT", ""),
                environ.get("CONTENT_TYPE", ""),
                get_input_stream(environ).read(),
            )
        except lfs_store.BatchRefusal as refused:
            raise LfsRefusal(refused.status, refused.message) from None
        if len(objects) > self.max_batch:
            raise LfsRefusal(413, f"at most {self.max_batch} objects per batch")
        try:
            repo, _ = authorize(environ, owner, name, operation == "upload")
        except Refusal as refused:  # the Git host's answer, in the Batch API's shape
            status = int(refused.status.split()[0])
            headers = [("LFS-Authenticate", 'Basic realm="GitHub"')] if status == 401 else []
            raise LfsRefusal(status, refused.message.strip(), headers) from None
        return 200, {
            "transfer": "basic",
            "objects": [self._object(repo, operation, obj) for obj in objects],
            "hash_algo": "sha256",
        }

    def _object(self, repo: Repo, operation: str, obj: Any) -> dict[str, Any]:
        pointer = lfs_store.valid_pointer(obj)
        if pointer is None:
            oid = obj.get("oid") if isinstance(obj, dict) else None
            size = obj.get("size") if isinstance(obj, dict) else None
            return {
                "oid": str(oid),
                "size": size if isinstance(size, int) else 0,
                "error": {"code": 422, "message": "Invalid object: oid or size"},
            }
        oid, size = pointer
        answer: dict[str, Any] = {"oid": oid, "size": size}
        stored = self.path(repo, oid)
        if operation == "download":
            if not stored.is_file():
                answer["error"] = {"code": 404, "message": "Object does not exist"}
                return answer
            answer["authenticated"] = True
            answer["actions"] = {"download": self._action(repo, oid, size, "download")}
            return answer
        if size > self.max_object_size:
            answer["error"] = {
                "code": 422,
                "message": f"Size must be less than or equal to {self.max_object_size}",
            }
            return answer
        if stored.is_file() and stored.stat().st_size == size:
            return answer  # already there: no actions
        answer["authenticated"] = True
        answer["actions"] = {
            "upload": self._action(repo, oid, size, "upload"),
            "verify": self._action(repo, oid, size, "upload", verify=True),
        }
        return answer

    def _action(
        self, repo: Repo, oid: str, size: int, operation: str, *, verify: bool = False
    ) -> dict[str, Any]:
        secret = secrets.token_urlsafe(24)
        expires = self.fake.state.now() + timedelta(seconds=self.expires_in)
        self._grants[secret] = _Grant(repo.id, oid, size, operation, expires)
        href = f"{self.fake.git_url}/_lfs/{repo.id}/{oid}" + ("/verify" if verify else "")
        return {
            "href": href,
            "header": {"Authorization": f"RemoteAuth {secret}"},
            "expires_in": self.expires_in,
        }

    # -- transfers ----------------------------------------------------------------------

    def _grant(self, environ: WSGIEnvironment, repo_id: int, oid: str) -> _Grant:
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, secret = header.partition(" ")
        grant = self._grants.get(secret.strip()) if scheme == "RemoteAuth" else None
        if grant is None or grant.repo_id != repo_id or grant.oid != oid:
            raise LfsRefusal(401, "Bad credentials for this object")
        if self.fake.state.now() >= grant.expires_at:
            raise LfsRefusal(401, "The action expired; ask the Batch API again")
        return grant

    def _repo(self, grant: _Grant) -> Repo:
        with self.fake.state.lock:
            repo = self.fake.state.repos.get(grant.repo_id)
        if repo is None:
            raise LfsRefusal(404, "Repository not found")
        return repo

    def _download(self, start_response: StartResponse, grant: _Grant, log: Log) -> Iterable[bytes]:
        stored = self.path(self._repo(grant), grant.oid)
        if not stored.is_file():
            raise LfsRefusal(404, "Object does not exist")
        log(200)
        start_response(
            "200 OK",
            [
                ("content-type", "application/octet-stream"),
                ("content-length", str(stored.stat().st_size)),
            ],
        )
        return lfs_store.chunks(stored)

    def _upload(self, environ: WSGIEnvironment, grant: _Grant) -> tuple[int, dict[str, Any]]:
        repo = self._repo(grant)
        declared = environ.get("CONTENT_LENGTH")
        if declared is not None and declared != "" and int(declared) != grant.size:
            raise LfsRefusal(
                422, f"Content-Length {declared} is not the object's size {grant.size}"
            )
        stored, size = lfs_store.store(
            repo.git_dir, grant.oid, grant.size, get_input_stream(environ)
        )
        if not stored:
            raise LfsRefusal(422, f"Object {grant.oid} does not match its bytes ({size} received)")
        return 200, {}

    def _verify(self, environ: WSGIEnvironment, grant: _Grant) -> tuple[int, dict[str, Any]]:
        try:
            body = json.loads(get_input_stream(environ).read() or b"null")
        except ValueError:
            raise LfsRefusal(422, "Invalid JSON") from None
        if not isinstance(body, dict) or body.get("oid") != grant.oid:
            raise LfsRefusal(422, "verify names another object")
        stored = self.path(self._repo(grant), grant.oid)
        if not stored.is_file() or stored.stat().st_size != body.get("size"):
            raise LfsRefusal(404, "Object does not exist")
        return 200, {"message": "ok"}


DOCS = "https://docs.github.com/repositories/working-with-files/managing-large-files"
