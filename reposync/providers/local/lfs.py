"""A local forge's LFS objects, exactly where git-lfs keeps them.

``<git dir>/lfs/objects/<oid[0:2]>/<oid[2:4]>/<oid>`` is the layout of git-lfs's own
local store (``git lfs push`` to a ``file://`` remote writes there too), so a local
forge served by any Git/LFS server, or cloned by git-lfs over ``file://``, has its
objects. Writes go to ``lfs/tmp`` first and are renamed into place only once their
SHA-256 and size match the OID: a reader never sees a partial or corrupt object.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from reposync.errors import LfsObjectCorrupt, LfsObjectMissing
from reposync.providers.base import ItemError, LfsOperation, LfsTransfer
from reposync.sync.lfs import LfsPointer

_CHUNK = 1 << 20


class LocalLfsStore:
    def __init__(self, git_dir: Path) -> None:
        self.root = git_dir / "lfs"

    def path(self, oid: str) -> Path:
        return self.root / "objects" / oid[0:2] / oid[2:4] / oid

    def batch(self, operation: LfsOperation, pointers: Sequence[LfsPointer]) -> list[LfsTransfer]:
        """Presence by file and size: a file of another size is not the object (a
        download reports it corrupt; an upload replaces it)."""
        answers = []
        for pointer in pointers:
            size = _size(self.path(pointer.oid))
            if operation is LfsOperation.UPLOAD:
                answers.append(LfsTransfer(pointer, present=size == pointer.size))
            elif size is None:
                answers.append(
                    LfsTransfer(
                        pointer,
                        ItemError(
                            LfsObjectMissing.code,
                            f"LFS object {pointer.oid} is not in {self.root / 'objects'}",
                        ),
                    )
                )
            elif size != pointer.size:
                answers.append(
                    LfsTransfer(
                        pointer,
                        ItemError(
                            LfsObjectCorrupt.code,
                            f"LFS object {pointer.oid} has {size} bytes, its pointer says "
                            f"{pointer.size}",
                        ),
                    )
                )
            else:
                answers.append(LfsTransfer(pointer))
        return answers

    def download(self, transfer: LfsTransfer) -> BinaryIO:
        try:
            return self.path(transfer.pointer.oid).open("rb")
        except FileNotFoundError:
            raise LfsObjectMissing(f"LFS object {transfer.pointer.oid} disappeared") from None

    def upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        pointer = transfer.pointer
        tmp_dir = self.root / "tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        with tempfile.NamedTemporaryFile(dir=tmp_dir, prefix=pointer.oid[:12], delete=False) as out:
            try:
                while chunk := content.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            except BaseException:
                os.unlink(out.name)
                raise
        if digest.hexdigest() != pointer.oid or size != pointer.size:
            os.unlink(out.name)
            raise LfsObjectCorrupt(
                f"LFS object {pointer.oid}: received {size} bytes hashing to "
                f"{digest.hexdigest()}; refused"
            )
        final = self.path(pointer.oid)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(out.name, 0o644)  # as git-lfs leaves its objects: readable by a server
        os.replace(out.name, final)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None
