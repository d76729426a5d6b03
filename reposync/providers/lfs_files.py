"""LFS objects in a repository on this machine, exactly where git-lfs keeps them: a local
forge's store, and a ``git:file://`` remote's (shared by both providers, so it is neither's).

``<git dir>/lfs/objects/<oid[0:2]>/<oid[2:4]>/<oid>`` is the layout of git-lfs's own
local store (``git lfs push`` to a ``file://`` remote writes there too), so a local
forge served by any Git/LFS server, or cloned by git-lfs over ``file://``, has its
objects. Writes go to ``lfs/tmp`` first and are renamed into place only once their
SHA-256 and size match the OID: a reader never sees a partial or corrupt object.

An object is its OID and its size: a file of another size is not the object. Nothing
below the git directory is reached through a symbolic link: every step (``lfs``,
``objects``, the two fan-out directories, the object's file, ``lfs/tmp``) is opened
relative to the one before with ``O_NOFOLLOW``, and an object must be a regular file.
Whoever can write into a repository's directory could otherwise make reposync read
any file the service can (a link to ``/etc/...`` or to a secret, sent to the target as
an object), hang on a pipe, or write where a linked directory leads. Such an entry is
``lfs_object_not_a_file`` for a read; for a write, a link where the object belongs is
replaced (the rename replaces the link itself), and a linked directory on the way is
refused.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from reposync.errors import (
    LfsObjectCorrupt,
    LfsObjectMissing,
    LfsObjectNotAFile,
    TargetRefusedPush,
)
from reposync.providers.base import ItemError, LfsOperation, LfsTransfer
from reposync.sync.lfs import LfsPointer

_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Non-blocking: opening a named pipe must not wait for a writer (it is refused after).
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: Write failures that are the target's own trouble, not the object's.
_TARGET_TROUBLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


class _Absent(Exception):
    """A step of the path does not exist (the object is missing)."""


class LocalLfsStore:
    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self.root = git_dir / "lfs"

    def batch(self, operation: LfsOperation, pointers: Sequence[LfsPointer]) -> list[LfsTransfer]:
        """Presence by a regular file of the pointer's size: a file of another size is
        not the object (a download reports it corrupt; an upload replaces it), nor is a
        link (a download reports it, an upload replaces it) or a path through a linked
        directory (refused both ways)."""
        return [self._answer(operation, pointer) for pointer in pointers]

    def download(self, transfer: LfsTransfer) -> BinaryIO:
        oid = transfer.pointer.oid
        try:
            with self._object_dir(oid, create=False) as directory:
                try:
                    fd = os.open(oid, _FILE_FLAGS, dir_fd=directory)
                except FileNotFoundError:
                    raise _Absent from None
                except OSError as error:
                    raise self._not_a_file(oid, error) from None
        except _Absent:
            raise LfsObjectMissing(f"LFS object {oid} disappeared") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # a pipe would hang, a device never end
            os.close(fd)
            raise LfsObjectNotAFile(f"{self._relative(oid)} is {_kind(mode)}, not a file")
        return os.fdopen(fd, "rb")

    def upload(self, transfer: LfsTransfer, content: BinaryIO) -> None:
        """Store the object (``LfsStore.lfs_upload``). A full disk or quota, or a
        read-only file system, is the target's refusal (``TargetRefusedPush``): the
        refs needing the object wait for a Run after it is fixed."""
        try:
            self._store(transfer.pointer, content)
        except OSError as error:
            if error.errno not in _TARGET_TROUBLE:
                raise
            raise TargetRefusedPush(
                f"the target could not store LFS object {transfer.pointer.oid} "
                f"({transfer.pointer.size} bytes) in {self.root}: {error.strerror}"
            ) from None

    def _store(self, pointer: LfsPointer, content: BinaryIO) -> None:
        digest = hashlib.sha256()
        size = 0
        with self._directory(["lfs", "tmp"], create=True) as tmp_dir:
            name = f"{pointer.oid[:12]}-{secrets.token_hex(8)}"
            fd = os.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=tmp_dir,
            )
            try:
                with os.fdopen(fd, "wb") as out:
                    while chunk := content.read(_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
                    out.flush()
                    os.fchmod(out.fileno(), 0o644)  # as git-lfs leaves its objects
                    os.fsync(out.fileno())
                if digest.hexdigest() != pointer.oid or size != pointer.size:
                    raise LfsObjectCorrupt(
                        f"LFS object {pointer.oid}: received {size} bytes hashing to "
                        f"{digest.hexdigest()}; refused"
                    )
                with self._object_dir(pointer.oid, create=True) as final_dir:
                    # A link where the object belongs is replaced, never written through.
                    try:
                        os.replace(name, pointer.oid, src_dir_fd=tmp_dir, dst_dir_fd=final_dir)
                    except IsADirectoryError:
                        raise LfsObjectNotAFile(
                            f"the target's {self._relative(pointer.oid)} is a directory"
                        ) from None
                    os.fsync(final_dir)
            except BaseException:
                with suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=tmp_dir)
                raise

    # -- internals ---------------------------------------------------------------------

    def _answer(self, operation: LfsOperation, pointer: LfsPointer) -> LfsTransfer:
        oid = pointer.oid
        try:
            with self._object_dir(oid, create=False) as directory:
                try:
                    mode_size = os.stat(oid, dir_fd=directory, follow_symlinks=False)
                except FileNotFoundError:
                    raise _Absent from None
        except _Absent:
            if operation is LfsOperation.UPLOAD:
                return LfsTransfer(pointer)
            return LfsTransfer(
                pointer,
                ItemError(
                    LfsObjectMissing.code, f"LFS object {oid} is not in {self.root / 'objects'}"
                ),
            )
        except LfsObjectNotAFile as error:  # a linked directory on the way: refused both ways
            return LfsTransfer(pointer, ItemError.of(error))
        mode, size = mode_size.st_mode, mode_size.st_size
        if operation is LfsOperation.UPLOAD:
            if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                return LfsTransfer(pointer, present=stat.S_ISREG(mode) and size == pointer.size)
            return LfsTransfer(
                pointer,
                ItemError(
                    LfsObjectNotAFile.code,
                    f"the target's {self._relative(oid)} is {_kind(mode)}, not a file",
                ),
            )
        if not stat.S_ISREG(mode):
            return LfsTransfer(
                pointer,
                ItemError(
                    LfsObjectNotAFile.code,
                    f"{self._relative(oid)} is {_kind(mode)}, not a file; "
                    "links in an LFS store are never followed",
                ),
            )
        if size != pointer.size:
            return LfsTransfer(
                pointer,
                ItemError(
                    LfsObjectCorrupt.code,
                    f"LFS object {oid} has {size} bytes, its pointer says {pointer.size}",
                ),
            )
        return LfsTransfer(pointer)

    @contextmanager
    def _object_dir(self, oid: str, *, create: bool) -> Iterator[int]:
        with self._directory(["lfs", "objects", oid[0:2], oid[2:4]], create=create) as fd:
            yield fd

    @contextmanager
    def _directory(self, parts: Sequence[str], *, create: bool) -> Iterator[int]:
        """A descriptor of ``<git dir>/<parts...>``, each step opened without following
        a link (``_Absent`` when a step is missing and not created; ``LfsObjectNotAFile``
        when one is a link or not a directory)."""
        fd = os.open(self.git_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for depth, part in enumerate(parts):
                try:
                    step = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise _Absent from None
                    with suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                    step = self._open_step(part, fd, parts[: depth + 1])
                except OSError as error:
                    raise self._link_on_the_way(parts[: depth + 1], error) from None
                os.close(fd)
                fd = step
            yield fd
        finally:
            os.close(fd)

    def _open_step(self, part: str, parent: int, path: Sequence[str]) -> int:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=parent)
        except OSError as error:  # replaced by a link since the mkdir
            raise self._link_on_the_way(path, error) from None

    def _link_on_the_way(self, path: Sequence[str], error: OSError) -> LfsObjectNotAFile:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise error
        return LfsObjectNotAFile(
            f"{'/'.join(path)} in {self.git_dir} is a symbolic link or not a directory; "
            "links in an LFS store are never followed"
        )

    def _not_a_file(self, oid: str, error: OSError) -> LfsObjectNotAFile:
        if error.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise error
        return LfsObjectNotAFile(
            f"{self._relative(oid)} is a symbolic link or not a file; links in an LFS store "
            "are never followed"
        )

    def _relative(self, oid: str) -> str:
        return f"lfs/objects/{oid[0:2]}/{oid[2:4]}/{oid} in {self.git_dir}"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
