"""The attribution header carries a write's fields the forge cannot set, and reads
give the header's values back in place of the forge's."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from reposync.errors import WriteRefused
from reposync.providers.base import TargetRef, TargetWrite
from reposync.providers.forge.attribution import (
    ATTRIBUTED_FIELDS,
    BatchReferences,
    attributed_body,
    header_value,
)
from reposync.providers.forge.bodies import parse
from reposync.sync.vocabulary import Action, ObjectType

ISSUE = {
    "title": "Crash",
    "body": "it breaks",
    "author": "ann",
    "created_at": "2026-01-02T03:04:05Z",
    "closed_at": None,
    "assignees": ["zed"],
    "state_reason": None,
    "labels": ["bug"],
}


def write(payload: dict[str, object], marker: str = "src-1") -> TargetWrite:
    return TargetWrite(1, Action.CREATE, ObjectType.ISSUE, None, payload, marker)


def test_the_header_holds_the_fields_and_the_body_and_marker_follow() -> None:
    """Exactly the named fields go into the header; the text and marker are the write's."""
    parsed = parse(
        attributed_body(write(ISSUE), ATTRIBUTED_FIELDS[ObjectType.ISSUE], source_label="src")
    )
    assert parsed.attribution == {
        key: ISSUE[key]
        for key in ("author", "created_at", "closed_at", "assignees", "state_reason")
    }
    assert (parsed.body, parsed.marker) == ("it breaks", "src-1")


def test_a_field_the_payload_lacks_is_written_as_null_and_read_as_null() -> None:
    """A missing field is kept as null, and null wins over what the forge reports."""
    parsed = parse(attributed_body(write({"body": ""}), ("closed_at",), source_label=None))
    assert parsed.attribution == {"closed_at": None}
    assert header_value(parsed, "closed_at", "2026-01-01T00:00:00Z") is None


def test_extra_fields_win_over_the_payloads() -> None:
    """What the provider adds (a carried type, a placement) overrides a payload field."""
    parsed = parse(
        attributed_body(write(ISSUE), ("author",), source_label=None, extra={"author": "bob"})
    )
    assert parsed.attribution == {"author": "bob"}


def test_no_fields_write_no_header() -> None:
    """A write whose forge sets every field gets its text and marker only."""
    text = attributed_body(write(ISSUE), (), source_label="src")
    assert text == "it breaks\n\n<!-- reposync:marker src-1 -->"


def test_the_forges_value_stands_where_the_header_has_none() -> None:
    """Without a header, or without the key in it, reads keep what the forge reports."""
    assert header_value(parse("plain"), "author", "octo") == "octo"
    with_header = parse(attributed_body(write(ISSUE), ("author",), source_label=None))
    assert header_value(with_header, "created_at", "now") == "now"
    assert header_value(with_header, "author", "octo") == "ann"


def test_an_upload_waits_for_its_release_and_its_bytes():
    """An asset whose release is not on the forge, or that has no bytes, is
    dependency_missing; with both, the upload names the release and opens the bytes."""
    refs = BatchReferences("o/r", "Forgejo")
    release = TargetRef(ObjectType.RELEASE, "12", "src-rel")
    bytes_ = io.BytesIO(b"zip")
    asset = TargetWrite(
        2, Action.CREATE, ObjectType.RELEASE_ASSET, None, {}, "src-a", refs={"parent": release}
    )
    for missing in (asset, replace(asset, refs={}, content=lambda: bytes_)):
        with pytest.raises(WriteRefused) as refused:
            refs.upload(missing)
        assert refused.value.refusal == "dependency_missing"
    name, content = refs.upload(replace(asset, content=lambda: bytes_))
    assert name == "12"
    assert content().read() == b"zip"
