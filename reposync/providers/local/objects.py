"""Forge objects as a local forge stores them: the rules of its rows, and rows as canonical objects.

Objects are always built through ``reposync.sync.objects.BUILDERS``, on write (to
validate and to compute keys and hashes), and stored payloads are their builders' own, so
what this forge returns is the same canonical object any other provider would build from
the same data. Which types have numbers, parents and replies, and which payload fields a
builder derives, is read from the one description, ``reposync.sync.fields``.

Also here: ``Refused``, the one way any write path says no to a single write, and the
checks that produce it without touching the database.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reposync.errors import ProviderError
from reposync.sync.canonical import CanonicalObject, ObjectRef, canonical_json
from reposync.sync.fields import SHAPES
from reposync.sync.objects import BUILDERS, MalformedObject
from reposync.sync.vocabulary import ObjectType

#: Every type this store holds (Git refs stay in Git).
FORGE_TYPES: frozenset[ObjectType] = frozenset(SHAPES)

#: Issues and pull requests: one shared number sequence, ``#N`` unique keys.
NUMBERED: frozenset[ObjectType] = frozenset(t for t, shape in SHAPES.items() if shape.numbered)

#: The parent types each nested type accepts.
PARENT_TYPES: dict[ObjectType, tuple[ObjectType, ...]] = {
    t: shape.parents for t, shape in SHAPES.items() if shape.parents
}

#: Where a unique key must be unique. Top-level keys are unique per type (issues and pull
#: requests share the ``#N`` space); asset names, reviewers and reactions are unique
#: within their parent, as on every forge. Comments, reviews and review comments have
#: content-derived keys (two identical "+1" comments are legitimate) and are not enforced.
GLOBAL_SCOPES: dict[ObjectType, str] = {
    ObjectType.LABEL: "label",
    ObjectType.MILESTONE: "milestone",
    ObjectType.RELEASE: "release",
    ObjectType.ISSUE: "number",
    ObjectType.PULL_REQUEST: "number",
}
PARENT_SCOPED: frozenset[ObjectType] = frozenset(
    {ObjectType.RELEASE_ASSET, ObjectType.REVIEW_REQUEST, ObjectType.REACTION}
)
#: What a reply answers when its comment was deleted before it was ever synced; never an
#: identity, since identities here are integers.
GONE_COMMENT = "deleted"

#: The columns ``Row.from_sql`` reads, in its order.
ROW_COLUMNS = (
    "object_type, id, number, unique_key, unique_scope, parent_type, parent_id, parent_key, "
    "in_reply_to, payload, content_hash, revision, marker, asset_sha256, object_key, order_key"
)


class Refused(Exception):
    """One write the store refuses; becomes a ``REFUSED`` result, never escapes."""

    def __init__(self, code: str, message: str, *, missing: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        #: (object type, marker) of an unresolved reference: a later create of the same
        #: batch may still provide it.
        self.missing = missing


@dataclass(frozen=True, slots=True)
class Row:
    """A stored object as the write path needs it."""

    object_type: ObjectType
    identity: str
    number: int | None
    unique_key: str | None
    unique_scope: str | None
    parent_type: ObjectType | None
    parent_id: str | None
    parent_key: str | None
    in_reply_to: str | None
    payload: str
    content_hash: str
    revision: int
    marker: str | None
    asset_sha256: str | None
    object_key: str
    order_key: str

    @classmethod
    def from_sql(cls, row: Sequence[Any]) -> Row:
        return cls(
            ObjectType(row[0]),
            row[1],
            row[2],
            row[3],
            row[4],
            None if row[5] is None else ObjectType(row[5]),
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
            row[11],
            row[12],
            row[13],
            row[14],
            row[15],
        )

    @property
    def parent(self) -> ObjectRef | None:
        if self.parent_type is None or self.parent_id is None:
            return None
        return ObjectRef(self.parent_type, self.parent_id)

    def fields(self) -> dict[str, Any]:
        """The stored payload as builder arguments."""
        return builder_fields(self.object_type, json.loads(self.payload))


@dataclass(frozen=True, slots=True)
class Parent:
    """What a child row keeps of its parent: the reference and the key its own embeds."""

    object_type: ObjectType
    identity: str
    unique_key: str | None


@dataclass(frozen=True, slots=True)
class Stored:
    """What a row keeps of a payload, from one serialization: the canonical JSON, its
    hash (exactly ``canonical.content_hash``: the SHA-256 of these bytes) and its size."""

    raw: bytes
    json: str
    content_hash: str
    size: int

    @classmethod
    def of(cls, obj: CanonicalObject) -> Stored:
        raw = canonical_json(obj.payload)
        return cls(raw, raw.decode("utf-8"), "sha256:" + hashlib.sha256(raw).hexdigest(), len(raw))


#: The payload fields each type's builder derives (looked up once, not per write).
_DERIVED: dict[ObjectType, tuple[str, ...]] = {
    t: tuple(field.name for field in shape.fields if field.derived) for t, shape in SHAPES.items()
}


def builder_fields(object_type: ObjectType, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A canonical payload as keyword arguments of its builder (derived fields dropped)."""
    fields = dict(payload)
    for name in _DERIVED[object_type]:
        fields.pop(name, None)
    return fields


def build(
    object_type: ObjectType,
    identity: str,
    revision: str,
    fields: Mapping[str, Any],
    *,
    number: int | None = None,
    parent: ObjectRef | None = None,
    parent_key: str | None = None,
    in_reply_to: str | None = None,
) -> CanonicalObject:
    """The canonical object of stored fields: the one way rows become objects.

    Raises ``MalformedObject`` for anything the builder refuses, including fields its
    type does not have (``reposync.sync.fields``) or required fields that are missing.
    """
    shape = SHAPES[object_type]
    extra: dict[str, Any] = {}
    if shape.numbered:
        extra["number"] = number
    if shape.parents:
        if parent is None:
            raise MalformedObject(f"a {object_type} needs a parent")
        extra["parent"] = parent
        extra["parent_key"] = parent_key
    if shape.replies:
        extra["in_reply_to"] = (
            None if in_reply_to is None else ObjectRef(ObjectType.REVIEW_COMMENT, in_reply_to)
        )
    clash = extra.keys() & fields.keys()
    if clash:
        raise MalformedObject(f"{', '.join(sorted(clash))} cannot be payload fields")
    try:
        return BUILDERS[object_type](identity, revision, **fields, **extra)
    except TypeError as exc:  # a value of the wrong shape (labels that are no list, ...)
        raise MalformedObject(f"fields do not form a {object_type}: {exc}") from exc


#: The columns ``stored_object`` reads, in its order: what a read returns, no more.
OBJECT_COLUMNS = (
    "id, number, unique_key, parent_type, parent_id, in_reply_to, payload, content_hash, "
    "revision, object_key, order_key"
)


def stored_object(object_type: ObjectType, row: Sequence[Any], db_path: Path) -> CanonicalObject:
    """An object from a row of ``OBJECT_COLUMNS``. Rows are validated when written;
    reading them back trusts the stored form (no builder), and reads of many objects at
    once (an applying stage's source reads) build nothing but the object itself."""
    (
        identity,
        number,
        unique_key,
        parent_type,
        parent_id,
        in_reply_to,
        payload,
        content_hash,
        revision,
        object_key,
        order_key,
    ) = row
    try:
        loaded = json.loads(payload)
        if not isinstance(loaded, dict):
            raise ValueError(f"the payload is a {type(loaded).__name__}, not an object")
    except ValueError as exc:
        raise ProviderError(
            f"local forge {db_path}: stored {object_type} {identity} is corrupt: {exc}"
        ) from exc
    refs: dict[str, ObjectRef] = {}
    if parent_type is not None and parent_id is not None:
        refs["parent"] = ObjectRef(ObjectType(parent_type), parent_id)
    if in_reply_to is not None:
        refs["in_reply_to"] = ObjectRef(ObjectType.REVIEW_COMMENT, in_reply_to)
    return CanonicalObject(
        object_type=object_type,
        identity=identity,
        object_key=object_key,
        unique_key=unique_key,
        revision=str(revision),
        payload=loaded,
        number=number,
        refs=refs,
        order_key=order_key,
        known_hash=content_hash,
    )


def timestamp() -> str:
    """The time written on rows (``created_at``, ``updated_at``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def unique_scope(object_type: ObjectType, parent: Parent | None) -> str | None:
    """Where this type's unique key must be unique (``None``: not enforced)."""
    if object_type in GLOBAL_SCOPES:
        return GLOBAL_SCOPES[object_type]
    if object_type in PARENT_SCOPED and parent is not None:
        return f"{object_type}@{parent.object_type}/{parent.identity}"
    return None


def integrity_refusal(exc: sqlite3.IntegrityError) -> Refused:
    """A constraint of the schema as the refusal a check before the write would have made."""
    text = str(exc)
    if "FOREIGN KEY" in text:
        return Refused("dependency_missing", f"a referenced object is missing: {text}")
    if "UNIQUE" in text:
        return Refused("conflict", f"a unique key or number is taken: {text}")
    return Refused("invalid", f"the store refused the object: {text}")


def require_canonical(obj: CanonicalObject, expected: Mapping[str, Any], built: bytes) -> None:
    """Refuse a payload the builder would store differently.

    The engine verifies a write by reading it back and comparing hashes; accepting a
    payload that reads back different would make that verification fail forever.
    """
    try:
        given = canonical_json(dict(expected))
    except (TypeError, ValueError) as exc:
        raise Refused("invalid", f"the payload is not JSON: {exc}") from exc
    if built != given:
        differing = sorted(
            key
            for key in set(obj.payload) | set(expected)
            if canonical_json(obj.payload.get(key)) != canonical_json(expected.get(key))
            or (key in obj.payload) != (key in expected)
        )
        raise Refused(
            "invalid",
            f"the payload is not canonical for a {obj.object_type}: "
            + ", ".join(
                f"{key}={expected.get(key)!r} would be stored as {obj.payload.get(key)!r}"
                for key in differing
            ),
        )
