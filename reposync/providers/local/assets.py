"""Release asset bytes of a local forge: ``<git_dir>/reposync/assets/<sha256>``.

Content addressed, written to a temporary file and renamed into place before the row
that references them is committed; removed once no row references them. A crash between
the two leaves an unreferenced file, which ``collect_garbage`` reclaims.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO

from reposync.errors import ContentUnavailable, ObjectNotFound, ProviderUnavailable
from reposync.providers.local.objects import Refused
from reposync.providers.local.store import ForgeStore
from reposync.sync.vocabulary import ObjectType

#: Bytes read per asset chunk.
ASSET_CHUNK = 1 << 20


class AssetStore:
    """The asset files of one local forge, kept consistent with the rows under the store's
    write lock."""

    def __init__(self, store: ForgeStore) -> None:
        self._store = store

    def open_asset(self, identity: str) -> BinaryIO:
        """The bytes of a release asset. Raises ``ObjectNotFound``."""
        store = self._store
        with store.lock, store.guard("find a release asset"):
            conn = store.reader()
            row = None
            if conn is not None:
                row = conn.execute(
                    "SELECT asset_sha256 FROM objects WHERE object_type = ? AND id = ?",
                    (ObjectType.RELEASE_ASSET.value, identity),
                ).fetchone()
        if row is None:
            raise ObjectNotFound(f"release asset {identity} does not exist")
        try:
            return open(store.assets_dir / row[0], "rb")  # the caller closes it
        except FileNotFoundError as exc:
            raise ProviderUnavailable(
                f"local forge {store.root}: the bytes of release asset {identity} "
                f"({row[0]}) are missing"
            ) from exc
        except OSError as exc:
            raise ProviderUnavailable(
                f"local forge {store.root}: cannot open release asset {identity}: {exc}"
            ) from exc

    def put(self, content: Callable[[], BinaryIO] | None, payload: Mapping[str, Any]) -> str:
        """Stream asset bytes into ``assets/<sha256>``, verified against the payload.

        Runs inside the write transaction (under the database's write lock), so garbage
        collection, which takes the same lock, never removes a file a commit is about to
        reference. The bytes are durable (fsync, rename, fsync of the directory) before
        the row is committed.
        """
        if content is None:
            raise Refused("invalid", "a release asset needs its bytes (content)")
        assets_dir = self._store.assets_dir
        assets_dir.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=assets_dir, prefix=".incoming-")
        pending: str | None = temporary
        try:
            digest = hashlib.sha256()
            size = 0
            try:
                with os.fdopen(descriptor, "wb") as out, content() as stream:
                    while chunk := stream.read(ASSET_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
                    out.flush()
                    os.fsync(out.fileno())
            except ContentUnavailable as exc:  # the source's bytes: this write only
                raise Refused(exc.code, exc.message) from exc
            sha256 = digest.hexdigest()
            if sha256 != payload["sha256"] or size != payload["size"]:
                raise Refused(
                    "invalid",
                    f"asset bytes are {size} bytes with sha256 {sha256}, but the payload "
                    f"announces {payload['size']} bytes with sha256 {payload['sha256']}",
                )
            final = assets_dir / sha256
            if not final.exists():
                os.replace(temporary, final)
                pending = None
                _fsync_directory(assets_dir)
        finally:
            if pending is not None:
                with suppress(FileNotFoundError):
                    os.unlink(pending)
        return sha256

    def collect(self, candidates: Iterable[str]) -> None:
        """Remove asset files no row references any more (after a committed delete).

        Housekeeping only: a failure here leaves an orphan file (harmless, content
        addressed, reclaimed by ``collect_garbage``) and must not turn a committed batch
        into an error.
        """
        candidates = list(candidates)
        if not candidates:
            return
        store = self._store
        with suppress(sqlite3.Error, OSError), store.lock:
            conn = store.writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sha256 in candidates:
                    used = conn.execute(
                        "SELECT 1 FROM objects WHERE asset_sha256 = ? LIMIT 1", (sha256,)
                    ).fetchone()
                    if used is None:
                        with suppress(FileNotFoundError):
                            os.unlink(store.assets_dir / sha256)
            finally:
                conn.execute("COMMIT")

    def collect_garbage(self) -> int:
        """Remove every unreferenced asset file (left by crashes); returns how many.

        Holds the write lock, so no writer is between its rename and its commit.
        """
        store = self._store
        if not store.assets_dir.exists():
            return 0
        removed = 0
        with store.lock, store.guard("collect unreferenced asset files"):
            conn = store.writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                used = {
                    sha
                    for (sha,) in conn.execute(
                        "SELECT asset_sha256 FROM objects WHERE asset_sha256 IS NOT NULL"
                    )
                }
                for file in store.assets_dir.iterdir():
                    if file.name not in used:
                        file.unlink()
                        removed += 1
            finally:
                conn.execute("COMMIT")
        return removed


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
