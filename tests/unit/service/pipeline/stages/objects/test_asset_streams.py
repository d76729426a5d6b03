"""The source's asset bytes as a target reads them: failures and the size cap per write."""

from __future__ import annotations

import io
from typing import BinaryIO

import pytest

from reposync.errors import AssetTooLarge, ContentUnavailable
from reposync.service.pipeline.stages.objects.asset_streams import asset_reader


class Source:
    """An ``AssetSource`` whose asset ``"7"`` is ``data``."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def open_asset(self, identity: str) -> BinaryIO:
        if identity != "7":
            raise ContentUnavailable(f"no asset {identity}")
        return io.BytesIO(self.data)


def test_a_stream_under_the_cap_reads_whole_and_announces_its_size():
    """Within REPOSYNC_MAX_ASSET_BYTES every byte arrives, and the size is announced."""
    with asset_reader(Source(b"x" * 40), "7", 40, limit=40)() as stream:
        assert len(stream) == 40  # type: ignore[arg-type]
        assert stream.read() == b"x" * 40


def test_a_stream_longer_than_the_cap_stops_before_the_byte_past_it():
    """A source that announced 10 bytes but streams 100: the read that would cross the
    cap raises asset_too_large, and what was given before stays within the cap."""
    given = b""
    with asset_reader(Source(b"y" * 100), "7", 10, limit=50)() as stream:
        given += stream.read(30)
        with pytest.raises(AssetTooLarge) as raised:
            given += stream.read(30)
    assert given == b"y" * 30
    assert raised.value.code == "asset_too_large"
    assert "REPOSYNC_MAX_ASSET_BYTES" in raised.value.suggested_action
    assert isinstance(raised.value, ContentUnavailable)  # the writers refuse that write only
