"""The source's bytes of a release asset, as a target reads them during a write.

One asset whose bytes cannot be opened or read must fail its own item, not its batch:
every failure becomes ``ContentUnavailable``, which each target refuses for that one
write (``source_content_unavailable``); so does a stream that runs past
REPOSYNC_MAX_ASSET_BYTES (``AssetTooLarge``), although its announced size was under it.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any, BinaryIO, cast

from reposync.errors import AssetTooLarge, ContentUnavailable, ReposyncError
from reposync.providers.base import AssetSource


def asset_reader(
    source: AssetSource, identity: str, size: int, *, limit: int | None = None
) -> Callable[[], BinaryIO]:
    """Opens the source's bytes of one asset when the target reads them. Any failure to
    open or read them is ``ContentUnavailable``: the target refuses that one write and the
    rest of the batch goes on (it was the whole batch's ``provider_unavailable``). More
    than ``limit`` bytes are ``AssetTooLarge``, raised before the byte past it is given
    to the target."""

    def open_asset() -> BinaryIO:
        try:
            return cast(
                BinaryIO, _Guarded(source.open_asset(identity), identity, size, limit=limit)
            )
        except ContentUnavailable:
            raise
        except (ReposyncError, OSError) as exc:
            raise ContentUnavailable(f"the source's bytes of asset {identity}: {exc}") from exc

    return open_asset


class _Guarded(io.RawIOBase):
    """A source stream whose read errors (a dropped download) are ``ContentUnavailable``.

    It announces the payload's size (``len``, ``tell``) so that an HTTP upload sends a
    Content-Length instead of chunks.
    """

    def __init__(
        self, stream: BinaryIO, identity: str, size: int, *, limit: int | None = None
    ) -> None:
        self._stream = stream
        self._identity = identity
        self._size = size
        self._limit = limit
        self._position = 0

    def __len__(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._stream.read(size)
        except Exception as exc:  # any transport's error type: urllib3, OSError, ...
            raise ContentUnavailable(
                f"reading the source's bytes of asset {self._identity} failed: {exc}"
            ) from exc
        self._position += len(data)
        if self._limit is not None and self._position > self._limit:
            raise AssetTooLarge(
                f"the source's asset {self._identity} has more than REPOSYNC_MAX_ASSET_BYTES "
                f"({self._limit}) bytes, although it announced {self._size}"
            )
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stream.close()
        super().close()
