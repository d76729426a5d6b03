"""Validated creates, updates and deletes of rows: what every write path of a local forge shares.

The engine's batch writer (``writes``) and the authoring API (``authoring``) both write
through ``RowMutations``, so a row is validated, keyed and hashed the same way whoever
writes it. Every method runs inside a transaction its caller opened and either writes
what it was asked or raises ``Refused`` having written nothing more.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from reposync.providers.local.assets import AssetStore
from reposync.providers.local.objects import (
    NUMBERED,
    PARENT_TYPES,
    ROW_COLUMNS,
    Parent,
    Refused,
    Row,
    Stored,
    build,
    require_canonical,
    timestamp,
    unique_scope,
)
from reposync.sync.canonical import CanonicalObject, ObjectRef
from reposync.sync.vocabulary import ObjectType


class Sequences:
    """The id and number sequences within one transaction, kept in memory, written once.

    A create takes its id only once its row is inserted, so a refused create consumes
    nothing and, having written nothing, needs no savepoint of its own. ``flush`` stores
    the high-water marks right before COMMIT (never lowering them).
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._values: dict[str, int] = {}
        self._dirty: set[str] = set()

    def _current(self, name: str) -> int:
        if name not in self._values:
            row = self._conn.execute(
                "SELECT value FROM sequences WHERE name = ?", (name,)
            ).fetchone()
            self._values[name] = 0 if row is None else int(row[0])
        return self._values[name]

    def peek(self, name: str) -> int:
        """The next value, not yet taken."""
        return self._current(name) + 1

    def take(self, name: str, value: int) -> None:
        """Record that ``value`` is used (ids and explicit numbers alike)."""
        if value > self._current(name):
            self._values[name] = value
            self._dirty.add(name)

    def flush(self) -> None:
        for name in self._dirty:
            self._conn.execute(
                "INSERT INTO sequences (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
                (name, self._values[name]),
            )
        self._dirty.clear()


def find_row(conn: sqlite3.Connection, object_type: ObjectType, identity: str) -> Row | None:
    """One stored row, or ``None``."""
    sql_row = conn.execute(
        f"SELECT {ROW_COLUMNS} FROM objects WHERE object_type = ? AND id = ?",
        (object_type.value, identity),
    ).fetchone()
    return None if sql_row is None else Row.from_sql(sql_row)


class RowMutations:
    """Create, update and delete rows of one forge, storing asset bytes as they go."""

    def __init__(self, assets: AssetStore) -> None:
        self._assets = assets
        #: The time written on rows by the current batch (``None`` outside of one: each
        #: write then takes the time it runs at).
        self.stamp: str | None = None

    def create(
        self,
        conn: sqlite3.Connection,
        sequences: Sequences,
        object_type: ObjectType,
        fields: Mapping[str, Any],
        *,
        number: int | None,
        parent: Parent | None,
        in_reply_to: str | None,
        marker: str | None,
        expect: Mapping[str, Any] | None,
        content: Callable[[], BinaryIO] | None = None,
        expect_hash: str | None = None,
        reply_checked: bool = False,
    ) -> str:
        """Validate, allocate and insert one object; returns its identity.

        Everything is checked before the one INSERT, which is the only statement that
        writes: a refusal at any point leaves the database as it was. ``reply_checked``:
        the caller resolved ``in_reply_to`` itself (or it answers a deleted comment), so
        it is not looked up a second time.
        """
        if number is not None and object_type not in NUMBERED:
            raise Refused("invalid", f"a {object_type} has no number")
        if parent is None and object_type in PARENT_TYPES:
            raise Refused("invalid", f"a {object_type} needs a parent reference")
        if parent is not None and object_type not in PARENT_TYPES:
            raise Refused("invalid", f"a {object_type} has no parent")
        if in_reply_to is not None and not reply_checked:
            replied = find_row(conn, ObjectType.REVIEW_COMMENT, in_reply_to)
            if replied is None:
                raise Refused("dependency_missing", f"review comment {in_reply_to} does not exist")
        identity = str(sequences.peek(object_type.value))
        explicit_number = number is not None
        if object_type in NUMBERED and number is None:
            number = sequences.peek("number")
        obj = build(
            object_type,
            identity,
            "1",
            fields,
            number=number,
            parent=None if parent is None else ObjectRef(parent.object_type, parent.identity),
            parent_key=None if parent is None else parent.unique_key,
            in_reply_to=in_reply_to,
        )
        stored = Stored.of(obj)
        if expect is not None and stored.content_hash != expect_hash:
            require_canonical(obj, expect, stored.raw)
        scope = unique_scope(object_type, parent)
        kept_number = number if explicit_number else None
        asset_sha256 = None
        if object_type is ObjectType.RELEASE_ASSET:  # refuse before the bytes are stored
            self.check_free(conn, obj, scope, kept_number)
            asset_sha256 = self._assets.put(content, obj.payload)
        stamp = self.stamp or timestamp()
        try:
            self._insert(
                conn,
                obj,
                identity,
                number,
                scope,
                parent,
                in_reply_to,
                stored,
                marker,
                asset_sha256,
                stamp,
            )
        except sqlite3.IntegrityError:
            # The unique indexes refused the row (the statement wrote nothing): name the
            # key that is taken, as a check before the insert would have. Checking after
            # the fact spares two queries per create on the common path.
            self.check_free(conn, obj, scope, kept_number)
            raise
        sequences.take(object_type.value, int(identity))
        if number is not None:
            sequences.take("number", number)
        return identity

    def check_free(
        self,
        conn: sqlite3.Connection,
        obj: CanonicalObject,
        scope: str | None,
        number: int | None,
    ) -> None:
        """Refuse a create whose explicit number or unique key another object holds."""
        if number is not None:
            taken = conn.execute(
                "SELECT object_type, id FROM objects WHERE number = ?", (number,)
            ).fetchone()
            if taken is not None:
                raise Refused("conflict", f"number #{number} is taken by {taken[0]} {taken[1]}")
        self.check_unique(conn, obj, scope, None)

    def _insert(
        self,
        conn: sqlite3.Connection,
        obj: CanonicalObject,
        identity: str,
        number: int | None,
        scope: str | None,
        parent: Parent | None,
        in_reply_to: str | None,
        stored: Stored,
        marker: str | None,
        asset_sha256: str | None,
        stamp: str,
    ) -> None:
        conn.execute(
            INSERT_OBJECT,
            object_values(
                obj,
                identity,
                number,
                scope,
                parent,
                in_reply_to,
                stored,
                stamp,
                marker=marker,
                asset_sha256=asset_sha256,
            ),
        )

    def update(
        self,
        conn: sqlite3.Connection,
        row: Row,
        fields: Mapping[str, Any],
        *,
        expect: Mapping[str, Any] | None,
        content: Callable[[], BinaryIO] | None,
        garbage: set[str],
        expect_hash: str | None = None,
    ) -> CanonicalObject:
        """Replace a payload and bump the revision; number, parent and marker stay."""
        obj = build(
            row.object_type,
            row.identity,
            str(row.revision + 1),
            fields,
            number=row.number,
            parent=row.parent,
            parent_key=row.parent_key,
            in_reply_to=row.in_reply_to,
        )
        stored = Stored.of(obj)
        if expect is not None and stored.content_hash != expect_hash:
            require_canonical(obj, expect, stored.raw)
        if obj.unique_key != row.unique_key:
            self.check_unique(conn, obj, row.unique_scope, row.identity)
        asset_sha256 = row.asset_sha256
        if row.object_type is ObjectType.RELEASE_ASSET and (
            obj.payload["sha256"] != asset_sha256
            or obj.payload["size"] != json.loads(row.payload)["size"]
        ):
            if content is None:
                raise Refused("invalid", "new asset bytes were announced but not provided")
            asset_sha256 = self._assets.put(content, obj.payload)
            if row.asset_sha256:
                garbage.add(row.asset_sha256)
        conn.execute(
            "UPDATE objects SET payload = ?, content_hash = ?, unique_key = ?, object_key = ?, "
            "order_key = ?, size = ?, asset_sha256 = ?, revision = revision + 1, "
            "updated_at = ? WHERE object_type = ? AND id = ?",
            (
                stored.json,
                stored.content_hash,
                obj.unique_key,
                obj.object_key,
                obj.order_key,
                stored.size,
                asset_sha256,
                self.stamp or timestamp(),
                row.object_type.value,
                row.identity,
            ),
        )
        if obj.unique_key != row.unique_key:
            self._propagate_key(conn, row.object_type, row.identity, obj.unique_key)
        return obj

    def _propagate_key(
        self, conn: sqlite3.Connection, object_type: ObjectType, identity: str, key: str | None
    ) -> None:
        """A parent's unique key changed (a release tag, a review's content): the keys of
        its descendants embed it, so they follow. Their content and revision stay."""
        children = conn.execute(
            f"SELECT {ROW_COLUMNS} FROM objects WHERE parent_type = ? AND parent_id = ?",
            (object_type.value, identity),
        ).fetchall()
        for sql_row in children:
            child = Row.from_sql(sql_row)
            obj = build(
                child.object_type,
                child.identity,
                str(child.revision),
                child.fields(),
                number=child.number,
                parent=child.parent,
                parent_key=key,
                in_reply_to=child.in_reply_to,
            )
            conn.execute(
                "UPDATE objects SET parent_key = ?, unique_key = ?, object_key = ? "
                "WHERE object_type = ? AND id = ?",
                (key, obj.unique_key, obj.object_key, child.object_type.value, child.identity),
            )
            if obj.unique_key != child.unique_key:
                self._propagate_key(conn, child.object_type, child.identity, obj.unique_key)

    def delete(self, conn: sqlite3.Connection, row: Row, garbage: set[str]) -> None:
        """Delete an object; its descendants go with it (``ON DELETE CASCADE``)."""
        if row.object_type is ObjectType.RELEASE:
            garbage.update(
                sha
                for (sha,) in conn.execute(
                    "SELECT asset_sha256 FROM objects WHERE parent_type = ? AND parent_id = ? "
                    "AND object_type = ?",
                    (row.object_type.value, row.identity, ObjectType.RELEASE_ASSET.value),
                )
            )
        elif row.asset_sha256:
            garbage.add(row.asset_sha256)
        conn.execute(
            "DELETE FROM objects WHERE object_type = ? AND id = ?",
            (row.object_type.value, row.identity),
        )

    def check_unique(
        self,
        conn: sqlite3.Connection,
        obj: CanonicalObject,
        scope: str | None,
        identity: str | None,
    ) -> None:
        """Refuse a unique key another object of the same scope holds."""
        if scope is None or obj.unique_key is None:
            return
        taken = conn.execute(
            "SELECT object_type, id FROM objects WHERE unique_scope = ? AND unique_key = ?",
            (scope, obj.unique_key),
        ).fetchone()
        if taken is not None and not (taken[0] == obj.object_type.value and taken[1] == identity):
            raise Refused(
                "conflict", f"{obj.object_key}: {taken[0]} {taken[1]} already uses this key"
            )


#: One new row of ``objects`` (revision 1), as ``object_values`` orders its columns.
INSERT_OBJECT = (
    "INSERT INTO objects (object_type, id, number, unique_key, unique_scope, "
    "object_key, parent_type, parent_id, parent_key, in_reply_to, payload, "
    "content_hash, revision, marker, order_key, size, asset_sha256, created_at, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)"
)


def object_values(
    obj: CanonicalObject,
    identity: str,
    number: int | None,
    scope: str | None,
    parent: Parent | None,
    in_reply_to: str | None,
    stored: Stored,
    stamp: str,
    *,
    marker: str | None = None,
    asset_sha256: str | None = None,
) -> tuple[object, ...]:
    """The values of ``INSERT_OBJECT`` for one object (the batch writer's creates and the
    authoring API's bulk creates write the same row)."""
    return (
        obj.object_type.value,
        identity,
        number,
        obj.unique_key,
        scope,
        obj.object_key,
        None if parent is None else parent.object_type.value,
        None if parent is None else parent.identity,
        None if parent is None else parent.unique_key,
        in_reply_to,
        stored.json,
        stored.content_hash,
        marker,
        obj.order_key,
        stored.size,
        asset_sha256,
        stamp,
        stamp,
    )
