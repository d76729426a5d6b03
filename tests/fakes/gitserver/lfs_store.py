"""Git LFS objects as forges keep them, and the Batch API request both test servers
check the same way (git-lfs's ``docs/api/batch.md``).

Objects live in ``<bare repo>/lfs/objects/<aa>/<bb>/<oid>``, git-lfs's own layout; an
object is stored only if its bytes hash to its OID and have its size. An upload in
progress is written in ``<bare repo>/lfs/tmp/`` and moved in whole, as Forgejo's local
storage does (its ``TEMPORARY_PATH``): the store holds whole objects only, whenever one
looks, even while the server has not yet noticed a client gone mid-body.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from werkzeug.exceptions import ClientDisconnected

MEDIA_TYPE = "application/vnd.git-lfs+json"
OID = re.compile(r"^[0-9a-f]{64}$")
CHUNK = 1 << 16
#: The reason phrases of the statuses the test servers' LFS APIs answer.
REASONS = {
    200: "OK",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
}


def status_line(status: int, unknown: str = "Error") -> str:
    """``<status> <reason>``, ``unknown`` the reason of a status ``REASONS`` lacks."""
    return f"{status} {REASONS.get(status, unknown)}"


class BatchRefusal(Exception):
    """A Batch API request refused before any object is looked at."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def object_path(git_dir: Path, oid: str) -> Path:
    return git_dir / "lfs" / "objects" / oid[0:2] / oid[2:4] / oid


def uploads_dir(git_dir: Path) -> Path:
    """Where uploads in progress are written, beside the store and never in it."""
    return git_dir / "lfs" / "tmp"


def stored_objects(git_dir: Path) -> dict[str, bytes]:
    """Every stored object of a repository, OID -> bytes."""
    root = git_dir / "lfs" / "objects"
    return {p.name: p.read_bytes() for p in root.glob("*/*/*") if p.is_file()}


def is_stored(git_dir: Path, oid: str, size: int | None = None) -> bool:
    path = object_path(git_dir, oid)
    return path.is_file() and (size is None or path.stat().st_size == size)


def store(git_dir: Path, oid: str, size: int, stream: IO[bytes]) -> tuple[bool, int]:
    """Store ``stream`` as object ``oid`` if it is that object (its hash and ``size``);
    whether it was, and how many bytes arrived. A client that goes away mid-body (an
    upload stopped by its sender) leaves nothing behind, not even the partial file."""
    final = object_path(git_dir, oid)
    final.parent.mkdir(parents=True, exist_ok=True)
    uploads_dir(git_dir).mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    received = 0
    gone = False
    with tempfile.NamedTemporaryFile(dir=uploads_dir(git_dir), delete=False) as out:
        try:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                received += len(chunk)
                out.write(chunk)
        except ClientDisconnected:
            gone = True
    if gone or received != size or digest.hexdigest() != oid:
        os.unlink(out.name)
        return False, received
    os.replace(out.name, final)
    return True, received


def chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def parse_batch(accept: str, content_type: str, raw: bytes) -> tuple[str, list[Any]]:
    """The operation and objects of a Batch API request; ``BatchRefusal`` for a request
    that is not one (wrong media types, no ``basic`` transfer, not sha256)."""
    if MEDIA_TYPE not in accept:
        raise BatchRefusal(406, f"Accept must be {MEDIA_TYPE}")
    if not content_type.startswith(MEDIA_TYPE):
        raise BatchRefusal(422, f"Content-Type must be {MEDIA_TYPE}")
    try:
        request = json.loads(raw or b"null")
    except ValueError:
        raise BatchRefusal(422, "Invalid JSON") from None
    if not isinstance(request, dict) or request.get("operation") not in ("download", "upload"):
        raise BatchRefusal(422, "operation must be download or upload")
    transfers = request.get("transfers", ["basic"])
    if not isinstance(transfers, list) or "basic" not in transfers:
        raise BatchRefusal(422, "only the basic transfer adapter is supported")
    if request.get("hash_algo", "sha256") != "sha256":
        raise BatchRefusal(409, "only sha256 is supported")
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise BatchRefusal(422, "objects must be a list")
    return str(request["operation"]), objects


def valid_pointer(obj: Any) -> tuple[str, int] | None:
    oid = obj.get("oid") if isinstance(obj, dict) else None
    size = obj.get("size") if isinstance(obj, dict) else None
    if not isinstance(oid, str) or not OID.match(oid) or not isinstance(size, int) or size < 0:
        return None
    return oid, size
