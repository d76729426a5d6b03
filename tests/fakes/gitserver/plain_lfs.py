"""A plain Git server's LFS API, beside ``git http-backend`` (``plain_http.py``).

* ``POST <repo>/info/lfs/objects/batch``: the request checked as every test server
  checks it (``lfs_store.parse_batch``: media types, ``basic``, ``sha256``); ``upload``
  needs write access (403). Each object gets ``actions`` (``download``, by OID whatever
  size was asked, the client checks it; ``upload`` + ``verify``, none when the object is
  stored with that size) or a per-object ``error`` (404: not stored; 422: not an object
  id or size).
* Transfers (``docs/api/basic-transfers.md``): ``GET``/``PUT <repo>/info/lfs/objects/<oid>``
  and ``POST <repo>/info/lfs/verify``, authorized by the header the Batch answer put in
  the action (the request's own, as Gitea and Forgejo answer). A PUT is stored only when
  its bytes are the object (``lfs_store.store``; 422 otherwise).

Who may do what is the server's (``GitHttpServer``): HTTP Basic users, or the token
``git-lfs-authenticate`` hands out over SSH (``sshd.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from werkzeug.wsgi import get_input_stream

from tests.fakes.gitserver import lfs_store
from tests.fakes.gitserver.lfs_store import MEDIA_TYPE, OID, BatchRefusal

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

LFS_PATH = re.compile(r"^/(?P<repo>.+?)/info/lfs/(?P<rest>objects/batch|objects/[^/]+|verify)$")


class LfsEndpoints:
    """The LFS part of one ``GitHttpServer`` (``server.lfs``)."""

    def __init__(self, base_url: Callable[[], str]) -> None:
        self._base_url = base_url
        #: Whether the server serves LFS at all (a bare ``git http-backend`` does not).
        self.enabled = True
        #: Store the next PUT, then close the connection without an answer.
        self.drop_next_upload_answer = False

    def handle(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        repo: str,
        git_dir: Path | None,
        rest: str,
        can_write: bool,
        drop: Callable[[WSGIEnvironment], None],
    ) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"].upper()
        if not self.enabled or git_dir is None:
            return _json(start_response, "404 Not Found", {"message": "Not Found"})
        authorization = environ.get("HTTP_AUTHORIZATION", "")
        if rest == "objects/batch" and method == "POST":
            return self._batch(environ, start_response, repo, git_dir, can_write, authorization)
        if rest == "verify" and method == "POST":
            return self._verify(environ, start_response, git_dir)
        oid = rest.removeprefix("objects/")
        if not OID.match(oid):
            return _json(start_response, "404 Not Found", {"message": "Not Found"})
        if method == "GET":
            if not lfs_store.is_stored(git_dir, oid):
                return _json(start_response, "404 Not Found", {"message": "Object does not exist"})
            path = lfs_store.object_path(git_dir, oid)
            start_response(
                "200 OK",
                [
                    ("content-type", "application/octet-stream"),
                    ("content-length", str(path.stat().st_size)),
                ],
            )
            return lfs_store.chunks(path)
        if method == "PUT":
            if not can_write:
                return _json(start_response, "403 Forbidden", {"message": "write access needed"})
            size = int(environ.get("CONTENT_LENGTH") or -1)
            stored, received = lfs_store.store(git_dir, oid, size, get_input_stream(environ))
            if not stored:
                return _json(
                    start_response,
                    "422 Unprocessable Entity",
                    {"message": f"{received} bytes are not object {oid} ({size} bytes)"},
                )
            if self.drop_next_upload_answer:
                self.drop_next_upload_answer = False
                drop(environ)
            start_response("200 OK", [("content-length", "0")])
            return [b""]
        return _json(start_response, "405 Method Not Allowed", {"message": "Method Not Allowed"})

    def _batch(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        repo: str,
        git_dir: Path,
        can_write: bool,
        authorization: str,
    ) -> Iterable[bytes]:
        try:
            operation, objects = lfs_store.parse_batch(
                environ.get("HTTP_ACCEPT", ""),
                environ.get("CONTENT_TYPE", ""),
                get_input_stream(environ).read(),
            )
        except BatchRefusal as refusal:
            return _json(start_response, f"{refusal.status} Refused", {"message": refusal.message})
        if operation == "upload" and not can_write:
            return _json(start_response, "403 Forbidden", {"message": "write access needed"})
        base = f"{self._base_url()}/{repo}/info/lfs"
        header = {"Authorization": authorization} if authorization else {}
        answers = [_object_answer(obj, operation, git_dir, base, header) for obj in objects]
        return _json(
            start_response,
            "200 OK",
            {"transfer": "basic", "objects": answers, "hash_algo": "sha256"},
            content_type=MEDIA_TYPE,
        )

    def _verify(
        self, environ: WSGIEnvironment, start_response: StartResponse, git_dir: Path
    ) -> Iterable[bytes]:
        try:
            request = json.loads(get_input_stream(environ).read() or b"{}")
        except ValueError:
            request = {}
        pointer = lfs_store.valid_pointer(request)
        if pointer is None or not lfs_store.is_stored(git_dir, *pointer):
            return _json(start_response, "404 Not Found", {"message": "Object does not exist"})
        return _json(start_response, "200 OK", {}, content_type=MEDIA_TYPE)


def _object_answer(
    obj: Any, operation: str, git_dir: Path, base: str, header: dict[str, str]
) -> dict[str, Any]:
    pointer = lfs_store.valid_pointer(obj)
    if pointer is None:
        oid = obj.get("oid") if isinstance(obj, dict) else None
        return {"oid": str(oid), "error": {"code": 422, "message": "invalid object"}}
    oid, size = pointer
    answer: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
    href = f"{base}/objects/{oid}"
    if operation == "download":
        if not lfs_store.is_stored(git_dir, oid):
            answer["error"] = {"code": 404, "message": "Object does not exist"}
        else:
            answer["actions"] = {"download": {"href": href, "header": header, "expires_in": 3600}}
    elif not lfs_store.is_stored(git_dir, oid, size):
        answer["actions"] = {
            "upload": {"href": href, "header": header, "expires_in": 3600},
            "verify": {"href": f"{base}/verify", "header": header, "expires_in": 3600},
        }
    return answer


def _json(
    start_response: StartResponse,
    status: str,
    body: Any,
    *,
    content_type: str = "application/json",
) -> Iterable[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("content-type", content_type), ("content-length", str(len(data)))])
    return [data]
