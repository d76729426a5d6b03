"""A Git LFS server as git-lfs's API documents describe it, beside ``git http-backend``.

* ``POST <repo>/info/lfs/objects/batch`` (``docs/api/batch.md``): ``Accept`` and
  ``Content-Type`` must be ``application/vnd.git-lfs+json`` (else 406 / 415); ``upload``
  needs write access (403). The answer's ``transfer`` is ``basic``; each object gets
  ``actions`` (``download``, by OID whatever size was asked, the client checks it;
  ``upload`` + ``verify``, none when the object is stored with that size) or a
  per-object ``error`` (404: not stored; 422: not an object id or size).
* Transfers (``docs/api/basic-transfers.md``): ``GET``/``PUT <repo>/info/lfs/objects/<oid>``
  and ``POST <repo>/info/lfs/verify``, authorized by the header the Batch answer put in
  the action. A PUT is stored only when its bytes hash to the OID (422 otherwise), into
  ``<repo>/lfs/objects/<aa>/<bb>/<oid>``, git-lfs's own layout.

Who may do what is the server's (``GitHttpServer.authorize``): HTTP Basic users, or the
token ``git-lfs-authenticate`` hands out over SSH (``sshd.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from werkzeug.wsgi import get_input_stream

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

MEDIA_TYPE = "application/vnd.git-lfs+json"
LFS_PATH = re.compile(r"^/(?P<repo>.+?)/info/lfs/(?P<rest>objects/batch|objects/[^/]+|verify)$")
OID = re.compile(r"^[0-9a-f]{64}$")

Respond = Callable[[str, list[tuple[str, str]], bytes], Iterable[bytes]]


def object_path(git_dir: Path, oid: str) -> Path:
    return git_dir / "lfs" / "objects" / oid[0:2] / oid[2:4] / oid


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
            return _plain(start_response, "404 Not Found", "Not Found\n")
        authorization = environ.get("HTTP_AUTHORIZATION", "")
        if rest == "objects/batch" and method == "POST":
            return self._batch(environ, start_response, repo, git_dir, can_write, authorization)
        if rest == "verify" and method == "POST":
            return self._verify(environ, start_response, git_dir)
        oid = rest.removeprefix("objects/")
        if not OID.match(oid):
            return _plain(start_response, "404 Not Found", "Not Found\n")
        path = object_path(git_dir, oid)
        if method == "GET":
            if not path.is_file():
                return _plain(start_response, "404 Not Found", "Object does not exist\n")
            data = path.read_bytes()
            start_response(
                "200 OK",
                [("content-type", "application/octet-stream"), ("content-length", str(len(data)))],
            )
            return [data]
        if method == "PUT":
            if not can_write:
                return _json(start_response, "403 Forbidden", {"message": "write access needed"})
            body = get_input_stream(environ).read()
            if hashlib.sha256(body).hexdigest() != oid:
                return _json(
                    start_response,
                    "422 Unprocessable Entity",
                    {"message": f"the bytes do not hash to {oid}"},
                )
            _store(path, body)
            if self.drop_next_upload_answer:
                self.drop_next_upload_answer = False
                drop(environ)
            start_response("200 OK", [("content-length", "0")])
            return [b""]
        return _plain(start_response, "405 Method Not Allowed", "Method Not Allowed\n")

    def _batch(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        repo: str,
        git_dir: Path,
        can_write: bool,
        authorization: str,
    ) -> Iterable[bytes]:
        if not environ.get("HTTP_ACCEPT", "").startswith(MEDIA_TYPE):
            return _json(start_response, "406 Not Acceptable", {"message": "Accept " + MEDIA_TYPE})
        if not environ.get("CONTENT_TYPE", "").startswith(MEDIA_TYPE):
            return _json(
                start_response,
                "415 Unsupported Media Type",
                {"message": "Content-Type " + MEDIA_TYPE},
            )
        try:
            request = json.loads(get_input_stream(environ).read() or b"{}")
        except ValueError:
            return _json(start_response, "422 Unprocessable Entity", {"message": "not JSON"})
        operation = request.get("operation") if isinstance(request, dict) else None
        if operation not in ("download", "upload"):
            return _json(start_response, "422 Unprocessable Entity", {"message": "operation"})
        if operation == "upload" and not can_write:
            return _json(start_response, "403 Forbidden", {"message": "write access needed"})
        base = f"{self._base_url()}/{repo}/info/lfs"
        header = {"Authorization": authorization} if authorization else {}
        answers = [
            _object_answer(obj, operation, git_dir, base, header)
            for obj in request.get("objects") or []
        ]
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
        oid, size = request.get("oid"), request.get("size")
        path = object_path(git_dir, str(oid)) if isinstance(oid, str) and OID.match(oid) else None
        if path is None or not path.is_file() or path.stat().st_size != size:
            return _json(start_response, "404 Not Found", {"message": "Object does not exist"})
        return _json(start_response, "200 OK", {}, content_type=MEDIA_TYPE)


def _object_answer(
    obj: Any, operation: str, git_dir: Path, base: str, header: dict[str, str]
) -> dict[str, Any]:
    oid = obj.get("oid") if isinstance(obj, dict) else None
    size = obj.get("size") if isinstance(obj, dict) else None
    if not isinstance(oid, str) or not OID.match(oid) or not isinstance(size, int) or size < 0:
        return {
            "oid": str(oid),
            "size": size,
            "error": {"code": 422, "message": "invalid object"},
        }
    path = object_path(git_dir, oid)
    stored = path.is_file() and path.stat().st_size == size
    answer: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
    href = f"{base}/objects/{oid}"
    if operation == "download":
        if not path.is_file():  # served by OID, as GitHub serves it: the client checks the size
            answer["error"] = {"code": 404, "message": "Object does not exist"}
        else:
            answer["actions"] = {"download": {"href": href, "header": header, "expires_in": 3600}}
    elif not stored:
        answer["actions"] = {
            "upload": {"href": href, "header": header, "expires_in": 3600},
            "verify": {"href": f"{base}/verify", "header": header, "expires_in": 3600},
        }
    return answer


def _store(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as out:
        out.write(body)
    os.replace(temporary, path)


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


def _plain(start_response: StartResponse, status: str, text: str) -> Iterable[bytes]:
    data = text.encode()
    start_response(
        status, [("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(data)))]
    )
    return [data]
