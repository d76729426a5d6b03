"""Forge objects of a local repository, stored beside its Git data.

A ``local:PATH`` repository is a bare Git repository; everything a forge adds on top of
Git (labels, milestones, issues, pull requests, reviews, releases and their assets,
reactions) lives in ``<git_dir>/reposync/``:

* ``forge.db``: one SQLite database (WAL, ``synchronous=FULL``), one table of objects
  keyed by (object type, id). Each row keeps the canonical payload as canonical JSON next
  to what the inventory index needs (keys, revision, hash, size, order), so listing an
  inventory never reads a payload and reading an object is one row plus its builder;
* ``assets/<sha256>``: release asset bytes, content addressed, written to a temporary
  file and renamed into place before the row that references them is committed.

Why SQLite: one batch of writes must be atomic (a worker killed mid-batch leaves every
object old or new, never torn) while each write of the batch may still be refused on its
own. One transaction per batch gives the first; the second comes from a savepoint per
update or delete, and from writing each create as one INSERT (atomic by itself) after
all its checks, its ids and numbers allocated in memory and stored right before COMMIT.
Measured, skipping the savepoint of a create halves the time of a batch of creates.

Objects are always built through ``reposync.sync.objects.BUILDERS``, on write (to
validate and to compute keys and hashes) and on read, so what this forge returns is the
same canonical object any other provider would build from the same data.

Nothing is created on disk until something is written: a read-only source without
metadata stays untouched, and reads of a missing store return nothing.

Not split yet: issue 11 (finding 1) splits it into store, reads, writes, assets and
authoring, with names that shadow nothing; it is the next issue in line.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from reposync import faults
from reposync.errors import (
    Conflict,
    ContentUnavailable,
    ObjectNotFound,
    PermissionDenied,
    ProviderError,
    ProviderUnavailable,
)
from reposync.files import private_dir, private_file
from reposync.providers.base import ApplyResult, TargetRef, TargetWrite, WriteStatus
from reposync.sync.canonical import (
    CanonicalObject,
    IndexEntry,
    ObjectRef,
    PullHead,
    canonical_json,
)
from reposync.sync.objects import BUILDERS, MalformedObject
from reposync.sync.vocabulary import Action, ObjectType

#: Bumped with every change of the schema below; stored in ``PRAGMA user_version``.
SCHEMA_VERSION = 1

#: Every type this store holds (Git refs stay in Git).
FORGE_TYPES: frozenset[ObjectType] = frozenset(BUILDERS)

#: Issues and pull requests: one shared number sequence, ``#N`` unique keys.
NUMBERED: frozenset[ObjectType] = frozenset({ObjectType.ISSUE, ObjectType.PULL_REQUEST})

#: The parent types each nested type accepts. The builders check these too, except for
#: reactions (their builder accepts any parent), so the store is the one place that does.
PARENT_TYPES: dict[ObjectType, tuple[ObjectType, ...]] = {
    ObjectType.ISSUE_COMMENT: (ObjectType.ISSUE, ObjectType.PULL_REQUEST),
    ObjectType.REVIEW: (ObjectType.PULL_REQUEST,),
    ObjectType.REVIEW_COMMENT: (ObjectType.REVIEW,),
    ObjectType.REVIEW_REQUEST: (ObjectType.PULL_REQUEST,),
    ObjectType.RELEASE_ASSET: (ObjectType.RELEASE,),
    ObjectType.REACTION: (
        ObjectType.ISSUE,
        ObjectType.PULL_REQUEST,
        ObjectType.ISSUE_COMMENT,
        ObjectType.REVIEW,
        ObjectType.REVIEW_COMMENT,
        ObjectType.RELEASE,
    ),
}

#: Payload fields a builder derives from its arguments (not arguments themselves).
DERIVED_FIELDS: dict[ObjectType, tuple[str, ...]] = {ObjectType.REVIEW_COMMENT: ("is_reply",)}

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

#: The field holding the creation time, filled with "now" by the Python API when omitted.
TIME_FIELDS: dict[ObjectType, str] = {
    ObjectType.ISSUE: "created_at",
    ObjectType.PULL_REQUEST: "created_at",
    ObjectType.RELEASE: "created_at",
    ObjectType.ISSUE_COMMENT: "created_at",
    ObjectType.REVIEW: "submitted_at",
    ObjectType.REVIEW_COMMENT: "created_at",
    ObjectType.REACTION: "created_at",
}

#: Rows fetched per index query: bounded memory, no long-lived cursor.
INDEX_CHUNK = 5000
#: Parameters per ``IN (...)`` query (well below SQLite's limit).
IN_CHUNK = 500
#: Bytes read per asset chunk.
ASSET_CHUNK = 1 << 20

_SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE objects (
        object_type   TEXT    COLLATE BINARY NOT NULL,
        id            TEXT    COLLATE BINARY NOT NULL,
        number        INTEGER,
        unique_key    TEXT,
        unique_scope  TEXT,
        object_key    TEXT    NOT NULL,
        parent_type   TEXT,
        parent_id     TEXT,
        parent_key    TEXT,
        in_reply_to   TEXT,
        payload       TEXT    NOT NULL,
        content_hash  TEXT    NOT NULL,
        revision      INTEGER NOT NULL,
        marker        TEXT,
        order_key     TEXT    NOT NULL,
        size          INTEGER NOT NULL,
        asset_sha256  TEXT,
        created_at    TEXT    NOT NULL,
        updated_at    TEXT    NOT NULL,
        PRIMARY KEY (object_type, id),
        FOREIGN KEY (parent_type, parent_id) REFERENCES objects (object_type, id)
            ON DELETE CASCADE,
        CHECK ((parent_type IS NULL) = (parent_id IS NULL)),
        CHECK ((number IS NOT NULL) = (object_type IN ('issue', 'pull_request'))),
        CHECK ((unique_scope IS NULL) OR (unique_key IS NOT NULL)),
        CHECK ((asset_sha256 IS NOT NULL) = (object_type = 'release_asset'))
    )
    """,
    # Issues and pull requests share one number space.
    "CREATE UNIQUE INDEX objects_number ON objects (number) WHERE number IS NOT NULL",
    "CREATE UNIQUE INDEX objects_unique_key ON objects (unique_scope, unique_key) "
    "WHERE unique_scope IS NOT NULL",
    "CREATE UNIQUE INDEX objects_marker ON objects (object_type, marker) WHERE marker IS NOT NULL",
    # Covering index of the inventory listing: the query never touches a table row.
    "CREATE INDEX objects_listing ON objects (object_type, id, object_key, unique_key, "
    "revision, content_hash, size, order_key)",
    # Children of a parent (and the ON DELETE CASCADE lookups).
    "CREATE INDEX objects_children ON objects (parent_type, parent_id)",
    "CREATE INDEX objects_assets ON objects (asset_sha256) WHERE asset_sha256 IS NOT NULL",
    # Per-type id sequences and the shared number sequence; never go backwards, so an id
    # or a number once given is never given to another object by the store itself.
    "CREATE TABLE sequences (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
)

_ROW_COLUMNS = (
    "object_type, id, number, unique_key, unique_scope, parent_type, parent_id, parent_key, "
    "in_reply_to, payload, content_hash, revision, marker, asset_sha256, object_key, order_key"
)
_INDEX_QUERY = (
    "SELECT id, object_key, unique_key, revision, content_hash, size, order_key "
    "FROM objects INDEXED BY objects_listing "
    "WHERE object_type = ? AND id > ? ORDER BY object_type, id LIMIT ?"
)


class _Refused(Exception):
    """One write the store refuses; becomes a ``REFUSED`` result, never escapes."""

    def __init__(self, code: str, message: str, *, missing: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        #: (object type, marker) of an unresolved reference: a later create of the same
        #: batch may still provide it.
        self.missing = missing


@dataclass(frozen=True, slots=True)
class _Row:
    """A stored object as the write path needs it."""

    object_type: ObjectType
    id: str
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
    def from_sql(cls, row: Sequence[Any]) -> _Row:
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

    def payload_dict(self) -> dict[str, Any]:
        return dict(json.loads(self.payload))

    def refs(self) -> dict[str, ObjectRef]:
        refs: dict[str, ObjectRef] = {}
        if self.parent is not None:
            refs["parent"] = self.parent
        if self.in_reply_to is not None:
            refs["in_reply_to"] = ObjectRef(ObjectType.REVIEW_COMMENT, self.in_reply_to)
        return refs


@dataclass(frozen=True, slots=True)
class _Parent:
    object_type: ObjectType
    id: str
    unique_key: str | None


class _Sequences:
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


@dataclass(slots=True)
class _Batch:
    """What one ``apply_batch`` transaction learns as it goes, to spare repeated queries.

    Only creates run while ``trusted``: they add rows but never change or remove one, so
    a marker or parent seen earlier is still valid. The first update or delete ends that
    (lookups then go to the database again).
    """

    sequences: _Sequences
    markers: dict[tuple[str, str], str]  # (type, marker) -> identity, for the creates
    parents: dict[tuple[str, str], _Parent]
    garbage: set[str]
    trusted: bool = True


def builder_fields(object_type: ObjectType, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A canonical payload as keyword arguments of its builder (derived fields dropped)."""
    fields = dict(payload)
    for name in DERIVED_FIELDS.get(object_type, ()):
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

    Raises ``MalformedObject`` for anything the builder refuses, including fields it
    does not know or required fields that are missing.
    """
    extra: dict[str, Any] = {}
    if object_type in NUMBERED:
        extra["number"] = number
    if object_type in PARENT_TYPES:
        if parent is None:
            raise MalformedObject(f"a {object_type} needs a parent")
        allowed = PARENT_TYPES[object_type]
        if parent.object_type not in allowed:
            raise MalformedObject(
                f"parent must reference one of {[t.value for t in allowed]}, not {parent!r}"
            )
        extra["parent"] = parent
        extra["parent_key"] = parent_key
    if object_type is ObjectType.REVIEW_COMMENT:
        extra["in_reply_to"] = (
            None if in_reply_to is None else ObjectRef(ObjectType.REVIEW_COMMENT, in_reply_to)
        )
    clash = set(fields) & set(extra)
    if clash:
        raise MalformedObject(f"{', '.join(sorted(clash))} cannot be payload fields")
    try:
        return BUILDERS[object_type](identity, revision, **fields, **extra)
    except TypeError as exc:  # unknown or missing fields
        raise MalformedObject(f"fields do not form a {object_type}: {exc}") from exc


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class _Stored:
    """What a row keeps of a payload, from one serialization: the canonical JSON, its
    hash (exactly ``canonical.content_hash``: the SHA-256 of these bytes) and its size."""

    raw: bytes
    json: str
    content_hash: str
    size: int

    @classmethod
    def of(cls, obj: CanonicalObject) -> _Stored:
        raw = canonical_json(obj.payload)
        return cls(raw, raw.decode("utf-8"), "sha256:" + hashlib.sha256(raw).hexdigest(), len(raw))


def _unique_scope(object_type: ObjectType, parent: _Parent | None) -> str | None:
    if object_type in GLOBAL_SCOPES:
        return GLOBAL_SCOPES[object_type]
    if object_type in PARENT_SCOPED and parent is not None:
        return f"{object_type}@{parent.object_type}/{parent.id}"
    return None


class LocalForge:
    """The forge objects of one local repository (see the module docstring).

    One SQLite connection per instance, used under a lock, so a provider may be shared by
    threads. Every public write is one transaction; ``apply_batch`` is one transaction
    for the whole batch.
    """

    def __init__(
        self,
        git_dir: str | os.PathLike[str],
        *,
        busy_timeout: float = 10.0,
        standby_of: Callable[[], str | None] | None = None,
    ) -> None:
        self.root = Path(git_dir) / "reposync"
        #: Tells whether this forge is a Binding's standby (then only the sync may write).
        self._standby_of = standby_of
        self.db_path = self.root / "forge.db"
        self.assets_dir = self.root / "assets"
        self._busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._schema_ready = False
        self._writable = False
        self._lock = threading.RLock()
        self._trace: Callable[[str], None] | None = None
        #: The time written on rows by the current batch (``None`` outside of one).
        self._stamp: str | None = None
        #: Writes that were committed (creates, updates, deletes that changed something);
        #: the provider reports the delta around a batch as its ``writes``.
        self.writes_performed = 0

    def _refuse_on_standby(self) -> None:
        """Edits through this API are refused on a standby: its authority is elsewhere."""
        authority = self._standby_of() if self._standby_of is not None else None
        if authority:
            raise PermissionDenied(
                f"{self.root.parent} is the standby of {authority}; write to the authority "
                "instead (reposync keeps this copy in sync)"
            )

    # -- connection -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection. Idempotent; the next call opens it again."""
        with self._lock:
            if self._conn is not None:
                with suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None
            self._schema_ready = False
            self._writable = False

    def trace(self, callback: Callable[[str], None] | None) -> None:
        """Receive every SQL statement this store runs (tests, diagnostics)."""
        with self._lock:
            self._trace = callback
            if self._conn is not None:
                self._conn.set_trace_callback(callback)

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Map the storage's failures to ``ProviderUnavailable`` (one boundary)."""
        try:
            yield
        except sqlite3.Error as exc:
            raise ProviderUnavailable(
                f"local forge {self.db_path}: cannot {action}: {exc}"
            ) from exc
        except OSError as exc:
            raise ProviderUnavailable(f"local forge {self.root}: cannot {action}: {exc}") from exc

    def _connect(self, *, create: bool) -> sqlite3.Connection:
        writable = create or os.access(self.root, os.W_OK)
        if writable:
            conn = sqlite3.connect(
                self.db_path,
                timeout=self._busy_timeout,
                isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE ... COMMIT
                check_same_thread=False,
            )
        else:  # a read-only source: never try to write its directory
            conn = sqlite3.connect(
                self.db_path.absolute().as_uri() + "?mode=ro",
                uri=True,
                timeout=self._busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")  # parents exist; deletes cascade
            if writable:
                conn.execute("PRAGMA journal_mode = WAL")
                # Durable: a write this forge reported done must survive a power loss,
                # since the engine records it as verified.
                conn.execute("PRAGMA synchronous = FULL")
        except BaseException:
            conn.close()
            raise
        if self._trace is not None:
            conn.set_trace_callback(self._trace)
        self._writable = writable
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> bool:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ProviderUnavailable(
                f"{self.db_path} has schema version {version}, newer than this reposync "
                f"understands ({SCHEMA_VERSION}); upgrade reposync"
            )
        return bool(version == SCHEMA_VERSION)

    def _reader(self) -> sqlite3.Connection | None:
        """The connection for reads, or ``None`` while there is no store yet."""
        if self._conn is None:
            if not self.db_path.exists():
                return None
            self._conn = self._connect(create=False)
        if not self._schema_ready:
            self._schema_ready = self._check_version(self._conn)
            if not self._schema_ready:
                return None
        return self._conn

    def _writer(self) -> sqlite3.Connection:
        """The connection for writes, creating the store on first use."""
        if self._conn is not None and not self._writable:
            self.close()
        if self._conn is None:
            private_file(private_dir(self.root) / self.db_path.name)
            self._conn = self._connect(create=True)
        if not self._schema_ready:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")  # two processes creating it: one wins, one waits
            try:
                if not self._check_version(conn):
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            self._schema_ready = True
        return self._conn

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction of the Python API; refusals become exceptions."""
        with self._lock, self._guard(action):
            conn = self._writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except _Refused as refusal:
                _rollback(conn)
                raise _api_error(refusal) from None
            except sqlite3.IntegrityError as exc:  # a race the checks could not see
                _rollback(conn)
                raise _api_error(_integrity_refusal(exc)) from exc
            except BaseException:
                _rollback(conn)
                raise
            self.writes_performed += 1

    # -- reading --------------------------------------------------------------------------

    def is_empty(self) -> bool:
        """Whether no forge object exists (a missing store is empty)."""
        with self._lock, self._guard("check for objects"):
            conn = self._reader()
            if conn is None:
                return True
            return conn.execute("SELECT 1 FROM objects LIMIT 1").fetchone() is None

    def count(self, object_type: ObjectType | str | None = None) -> int:
        """How many objects (of one type, or in all)."""
        with self._lock, self._guard("count objects"):
            conn = self._reader()
            if conn is None:
                return 0
            if object_type is None:
                return int(conn.execute("SELECT count(*) FROM objects").fetchone()[0])
            return int(
                conn.execute(
                    "SELECT count(*) FROM objects WHERE object_type = ?",
                    (ObjectType(object_type).value,),
                ).fetchone()[0]
            )

    def index(self, object_types: Iterable[ObjectType]) -> Iterator[IndexEntry]:
        """Index entries of the given types, sorted by (type, identity) as ``sorted()`` would.

        Reads only the covering index ``objects_listing`` (never a payload), in chunks by
        keyset, so memory stays bounded and no cursor outlives a chunk. Identities are
        compared with SQLite's BINARY collation (UTF-8 bytes), which orders exactly as
        Python orders ``str`` (code points).
        """
        wanted = sorted({ObjectType(t) for t in object_types} & FORGE_TYPES, key=str)
        for object_type in wanted:
            after = ""  # identities are never empty
            while True:
                with self._lock, self._guard("list the inventory"):
                    conn = self._reader()
                    if conn is None:
                        return
                    rows = conn.execute(
                        _INDEX_QUERY, (object_type.value, after, INDEX_CHUNK)
                    ).fetchall()
                for identity, object_key, unique_key, revision, chash, size, order in rows:
                    yield IndexEntry(
                        object_type,
                        identity,
                        object_key,
                        unique_key,
                        str(revision),
                        chash,
                        size,
                        order,
                    )
                if len(rows) < INDEX_CHUNK:
                    break
                after = rows[-1][0]

    def read_index_batch(
        self, object_type: ObjectType | str, ids: Sequence[str]
    ) -> dict[str, IndexEntry | None]:
        """Index entries (hash, revision, number) of these objects, never their payloads."""
        object_type = ObjectType(object_type)
        found: dict[str, IndexEntry | None] = dict.fromkeys(ids)
        columns = "id, object_key, unique_key, revision, content_hash, size, order_key, number"
        for identity, key, unique_key, revision, chash, size, order, number in self._by_ids(
            object_type, builtins.list(found), columns, "hashes"
        ):
            found[identity] = IndexEntry(
                object_type, identity, key, unique_key, str(revision), chash, size, order, number
            )
        return found

    def read_batch(
        self, object_type: ObjectType | str, ids: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        """Objects in full, ``None`` for those that do not exist."""
        object_type = ObjectType(object_type)
        found: dict[str, CanonicalObject | None] = dict.fromkeys(ids)
        for sql_row in self._by_ids(object_type, builtins.list(found), _ROW_COLUMNS, "objects"):
            row = _Row.from_sql(sql_row)
            found[row.id] = self._object(row)
        return found

    def _by_ids(
        self, object_type: ObjectType, ids: Sequence[str], columns: str, what: str
    ) -> builtins.list[tuple[Any, ...]]:
        """Rows of these objects, one query per ``IN_CHUNK`` identities."""
        rows: builtins.list[tuple[Any, ...]] = []
        if object_type not in FORGE_TYPES or not ids:
            return rows
        with self._lock, self._guard(f"read {object_type} {what}"):
            conn = self._reader()
            if conn is None:
                return rows
            for start in range(0, len(ids), IN_CHUNK):
                chunk = ids[start : start + IN_CHUNK]
                rows.extend(
                    conn.execute(
                        f"SELECT {columns} FROM objects WHERE object_type = ? "
                        f"AND id IN ({','.join('?' * len(chunk))})",
                        (object_type.value, *chunk),
                    ).fetchall()
                )
        return rows

    def open_pull_heads(self) -> builtins.list[PullHead]:
        """Number, head branch and head commit of every open pull request.

        The shadow branches of the Git inventory need them on every index; one query over
        the pull request rows, reading two payload fields in SQLite.
        """
        with self._lock, self._guard("list open pull request heads"):
            conn = self._reader()
            if conn is None:
                return []
            rows = conn.execute(
                "SELECT number, json_extract(payload, '$.head_ref'), "
                "json_extract(payload, '$.head_sha') FROM objects "
                "WHERE object_type = 'pull_request' "
                "AND json_extract(payload, '$.state') = 'open' ORDER BY number"
            ).fetchall()
        return [PullHead(int(number), str(ref), str(sha)) for number, ref, sha in rows]

    def get(self, object_type: ObjectType | str, identity: str) -> CanonicalObject | None:
        """One object, or ``None``."""
        return self.read_batch(object_type, [identity])[identity]

    def list(self, object_type: ObjectType | str) -> builtins.list[CanonicalObject]:
        """Every object of a type, in identity order."""
        object_type = ObjectType(object_type)
        if object_type not in FORGE_TYPES:
            return []
        with self._lock, self._guard(f"list {object_type} objects"):
            conn = self._reader()
            if conn is None:
                return []
            rows = conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM objects WHERE object_type = ? ORDER BY id",
                (object_type.value,),
            ).fetchall()
            return [self._object(_Row.from_sql(r)) for r in rows]

    def find_by_markers(
        self, object_type: ObjectType | str, markers: Sequence[str]
    ) -> dict[str, str]:
        """{marker: identity} of the objects a sync created with these markers."""
        object_type = ObjectType(object_type)
        wanted = builtins.list(dict.fromkeys(m for m in markers if m))
        result: dict[str, str] = {}
        with self._lock, self._guard("find objects by marker"):
            conn = self._reader()
            if conn is None:
                return result
            for start in range(0, len(wanted), IN_CHUNK):
                chunk = wanted[start : start + IN_CHUNK]
                rows = conn.execute(
                    "SELECT marker, id FROM objects WHERE object_type = ? "
                    f"AND marker IN ({','.join('?' * len(chunk))})",
                    (object_type.value, *chunk),
                ).fetchall()
                result.update(rows)
        return result

    def open_asset(self, identity: str) -> BinaryIO:
        """The bytes of a release asset. Raises ``ObjectNotFound``."""
        with self._lock, self._guard("find a release asset"):
            conn = self._reader()
            row = None
            if conn is not None:
                row = conn.execute(
                    "SELECT asset_sha256 FROM objects WHERE object_type = ? AND id = ?",
                    (ObjectType.RELEASE_ASSET.value, identity),
                ).fetchone()
        if row is None:
            raise ObjectNotFound(f"release asset {identity} does not exist")
        try:
            return open(self.assets_dir / row[0], "rb")  # the caller closes it
        except FileNotFoundError as exc:
            raise ProviderUnavailable(
                f"local forge {self.root}: the bytes of release asset {identity} "
                f"({row[0]}) are missing"
            ) from exc
        except OSError as exc:
            raise ProviderUnavailable(
                f"local forge {self.root}: cannot open release asset {identity}: {exc}"
            ) from exc

    def _object(self, row: _Row) -> CanonicalObject:
        """Rows are validated when written; reading them back trusts the stored form."""
        try:
            payload = row.payload_dict()
        except ValueError as exc:
            raise ProviderError(
                f"local forge {self.db_path}: stored {row.object_type} {row.id} is corrupt: {exc}"
            ) from exc
        return CanonicalObject(
            object_type=row.object_type,
            identity=row.id,
            object_key=row.object_key,
            unique_key=row.unique_key,
            revision=str(row.revision),
            payload=payload,
            number=row.number,
            refs=row.refs(),
            order_key=row.order_key,
            known_hash=row.content_hash,
        )

    # -- the engine's writes --------------------------------------------------------------

    def apply_batch(self, writes: Sequence[TargetWrite]) -> builtins.list[ApplyResult]:
        """Perform a batch in one transaction, each write atomic on its own.

        A refused write (``conflict``, ``invalid``, ``not_found``,
        ``dependency_missing``) is rolled back alone; the others commit together. A
        reference to an object that a later create of the same batch provides is
        resolved by retrying the referring write after it. Raises ``ProviderUnavailable``
        when the store fails; then nothing of the batch is committed (and an error while
        reading asset bytes from ``write.content`` aborts the batch the same way).
        """
        if not writes:
            return []
        object_type = writes[0].object_type.value
        results: dict[int, ApplyResult] = {}
        performed = 0
        with self._lock, self._guard(f"apply a batch of {len(writes)} {object_type} writes"):
            conn = self._writer()
            conn.execute("BEGIN IMMEDIATE")
            self._stamp = _now()  # one time for the rows of one transaction
            try:
                batch = _Batch(_Sequences(conn), self._known_markers(conn, writes), {}, set())
                pending = builtins.list(enumerate(writes))
                while pending:
                    unsettled = {
                        (w.object_type.value, w.marker)
                        for _, w in pending
                        if w.action is Action.CREATE and w.marker
                    }
                    deferred: builtins.list[tuple[int, TargetWrite]] = []
                    last_pass_refusals: dict[int, _Refused] = {}
                    for position, write in pending:
                        # A create writes one row in one statement (atomic by itself);
                        # updates and deletes may write several, so they get a savepoint.
                        savepoint = write.action is not Action.CREATE
                        if savepoint:
                            conn.execute("SAVEPOINT write")
                        try:
                            identity, wrote = self._apply_write(conn, write, batch)
                        except _Refused as refusal:
                            if savepoint:
                                conn.execute("ROLLBACK TO write")
                                conn.execute("RELEASE write")
                            if refusal.missing is not None and refusal.missing in unsettled:
                                deferred.append((position, write))
                                last_pass_refusals[position] = refusal
                                continue
                            results[position] = _refused(write, refusal)
                        else:
                            if savepoint:
                                conn.execute("RELEASE write")
                            performed += wrote
                            results[position] = ApplyResult(write.item_id, WriteStatus.OK, identity)
                        if write.action is Action.CREATE and write.marker:
                            unsettled.discard((write.object_type.value, write.marker))
                    if len(deferred) == len(pending):  # no progress: a cycle or a refusal
                        for position, write in deferred:
                            results[position] = _refused(write, last_pass_refusals[position])
                        break
                    pending = deferred
                batch.sequences.flush()
                faults.point("local_forge.before_commit", object_type=object_type)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._stamp = None
            self.writes_performed += performed
        faults.point("local_forge.after_commit", object_type=object_type)
        self._collect(batch.garbage)
        return [results[position] for position in range(len(writes))]

    def _known_markers(
        self, conn: sqlite3.Connection, writes: Sequence[TargetWrite]
    ) -> dict[tuple[str, str], str]:
        """Markers of the batch's creates that already exist, in one query per type."""
        wanted: dict[ObjectType, builtins.list[str]] = {}
        for write in writes:
            if write.action is Action.CREATE and write.marker:
                wanted.setdefault(write.object_type, []).append(write.marker)
        known: dict[tuple[str, str], str] = {}
        for object_type, markers in wanted.items():
            unique = builtins.list(dict.fromkeys(markers))
            for start in range(0, len(unique), IN_CHUNK):
                chunk = unique[start : start + IN_CHUNK]
                for marker, identity in conn.execute(
                    "SELECT marker, id FROM objects WHERE object_type = ? "
                    f"AND marker IN ({','.join('?' * len(chunk))})",
                    (object_type.value, *chunk),
                ):
                    known[(object_type.value, marker)] = identity
        return known

    def _apply_write(
        self, conn: sqlite3.Connection, write: TargetWrite, batch: _Batch
    ) -> tuple[str | None, bool]:
        """One write, atomic on its own: (identity, whether anything was written)."""
        object_type = write.object_type
        if object_type not in FORGE_TYPES:
            raise _Refused("invalid", f"{object_type} objects are not stored in the forge database")
        try:
            if write.action is Action.CREATE:
                return self._apply_create(conn, write, batch)
            batch.trusted = False
            if write.action is Action.UPDATE:
                return self._apply_update(conn, write, batch.garbage)
            if write.action is Action.DELETE:
                return self._apply_delete(conn, write, batch.garbage)
        except MalformedObject as exc:
            raise _Refused("invalid", str(exc)) from exc
        except sqlite3.IntegrityError as exc:
            # A constraint the checks did not foresee (another process won a race): a
            # refusal of this one write, not a failure of the batch.
            raise _integrity_refusal(exc) from exc
        raise _Refused("invalid", f"cannot apply action {write.action!r}")

    def _apply_create(
        self, conn: sqlite3.Connection, write: TargetWrite, batch: _Batch
    ) -> tuple[str, bool]:
        object_type = write.object_type
        if write.marker:
            if batch.trusted:
                existing = batch.markers.get((object_type.value, write.marker))
            else:
                row = conn.execute(
                    "SELECT id FROM objects WHERE object_type = ? AND marker = ?",
                    (object_type.value, write.marker),
                ).fetchone()
                existing = None if row is None else row[0]
            if existing is not None:
                return existing, False  # a retried create: never a duplicate
        if write.payload is None:
            raise _Refused("invalid", "a create needs a payload")
        parent: _Parent | None = None
        in_reply_to: str | None = None
        reply_gone = False
        for name, ref in write.refs.items():
            if name == "parent":
                parent = self._resolve(conn, name, ref, batch)
            elif name == "in_reply_to":
                if ref.object_type is not ObjectType.REVIEW_COMMENT:
                    raise _Refused("invalid", f"in_reply_to must be a review comment: {ref}")
                if ref.gone:  # answers a deleted comment, as on the source
                    in_reply_to = ref.identity or GONE_COMMENT
                    reply_gone = True
                else:
                    in_reply_to = self._resolve(conn, name, ref, batch).id
            else:
                raise _Refused("invalid", f"{object_type} has no reference {name!r}")
        identity = self._create(
            conn,
            batch.sequences,
            object_type,
            builder_fields(object_type, write.payload),
            number=write.number,
            parent=parent,
            in_reply_to=in_reply_to,
            reply_gone=reply_gone,
            marker=write.marker or None,
            expect=write.payload,
            expect_hash=write.payload_hash,
            content=write.content,
        )
        if write.marker:
            batch.markers[(object_type.value, write.marker)] = identity
        return identity, True

    def _apply_update(
        self, conn: sqlite3.Connection, write: TargetWrite, garbage: set[str]
    ) -> tuple[str, bool]:
        row = self._target_row(conn, write)
        if row is None:
            raise _Refused("not_found", f"{write.object_type} {write.target_identity} not found")
        if write.expected_hash is not None and write.expected_hash != row.content_hash:
            raise _Refused(
                "conflict",
                f"{write.object_type} {row.id} changed on the target: holds "
                f"{row.content_hash}, expected {write.expected_hash}",
            )
        if write.payload is None:
            raise _Refused("invalid", "an update needs a payload")
        self._update(
            conn,
            row,
            builder_fields(row.object_type, write.payload),
            expect=write.payload,
            expect_hash=write.payload_hash,
            content=write.content,
            garbage=garbage,
        )
        return row.id, True

    def _apply_delete(
        self, conn: sqlite3.Connection, write: TargetWrite, garbage: set[str]
    ) -> tuple[str | None, bool]:
        row = self._target_row(conn, write)
        if row is None:
            return write.target_identity, False  # already absent: what a delete wants
        if write.expected_hash is not None and write.expected_hash != row.content_hash:
            raise _Refused(
                "conflict",
                f"{write.object_type} {row.id} changed on the target since planning; "
                "not deleting it",
            )
        self._delete(conn, row, garbage)
        return row.id, True

    def _target_row(self, conn: sqlite3.Connection, write: TargetWrite) -> _Row | None:
        if not write.target_identity:
            raise _Refused("invalid", f"an {write.action} needs a target identity")
        return self._row(conn, write.object_type, write.target_identity)

    def _resolve(
        self, conn: sqlite3.Connection, name: str, ref: TargetRef, batch: _Batch
    ) -> _Parent:
        """A reference in the target's namespace: by identity, else by the created marker."""
        if ref.identity is not None and batch.trusted:
            cached = batch.parents.get((ref.object_type.value, ref.identity))
            if cached is not None:
                return cached
        parent = self._lookup(conn, name, ref)
        if ref.identity is not None:
            batch.parents[(ref.object_type.value, ref.identity)] = parent
        return parent

    def _lookup(self, conn: sqlite3.Connection, name: str, ref: TargetRef) -> _Parent:
        if ref.identity is not None:
            sql_row = conn.execute(
                "SELECT object_type, id, unique_key FROM objects WHERE object_type = ? AND id = ?",
                (ref.object_type.value, ref.identity),
            ).fetchone()
            what = f"{ref.object_type} {ref.identity}"
            missing = None
        else:
            sql_row = conn.execute(
                "SELECT object_type, id, unique_key FROM objects "
                "WHERE object_type = ? AND marker = ?",
                (ref.object_type.value, ref.marker),
            ).fetchone()
            what = f"{ref.object_type} created from {ref.marker}"
            missing = (ref.object_type.value, ref.marker)
        if sql_row is None:
            raise _Refused("dependency_missing", f"{name}: {what} does not exist", missing=missing)
        return _Parent(ObjectType(sql_row[0]), sql_row[1], sql_row[2])

    # -- the storage operations every write path shares -----------------------------------

    def _row(self, conn: sqlite3.Connection, object_type: ObjectType, identity: str) -> _Row | None:
        sql_row = conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM objects WHERE object_type = ? AND id = ?",
            (object_type.value, identity),
        ).fetchone()
        return None if sql_row is None else _Row.from_sql(sql_row)

    def _parent(
        self, conn: sqlite3.Connection, object_type: ObjectType | str, identity: str
    ) -> _Parent:
        row = self._row(conn, ObjectType(object_type), identity)
        if row is None:
            raise _Refused("dependency_missing", f"{object_type} {identity} does not exist")
        return _Parent(row.object_type, row.id, row.unique_key)

    def _next(self, conn: sqlite3.Connection, name: str, count: int = 1) -> int:
        """Advance a sequence by ``count``; returns its new (last given) value."""
        row = conn.execute(
            "INSERT INTO sequences (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = value + excluded.value RETURNING value",
            (name, count),
        ).fetchall()
        return int(row[0][0])

    def _raise_sequence(self, conn: sqlite3.Connection, name: str, value: int) -> None:
        conn.execute(
            "INSERT INTO sequences (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
            (name, value),
        )

    def _create(
        self,
        conn: sqlite3.Connection,
        sequences: _Sequences,
        object_type: ObjectType,
        fields: Mapping[str, Any],
        *,
        number: int | None,
        parent: _Parent | None,
        in_reply_to: str | None,
        marker: str | None,
        expect: Mapping[str, Any] | None,
        content: Callable[[], BinaryIO] | None = None,
        expect_hash: str | None = None,
        reply_gone: bool = False,
    ) -> str:
        """Validate, allocate and insert one object; returns its identity.

        Everything is checked before the one INSERT, which is the only statement that
        writes: a refusal at any point leaves the database as it was.
        """
        if number is not None and object_type not in NUMBERED:
            raise _Refused("invalid", f"a {object_type} has no number")
        if parent is None and object_type in PARENT_TYPES:
            raise _Refused("invalid", f"a {object_type} needs a parent reference")
        if parent is not None and object_type not in PARENT_TYPES:
            raise _Refused("invalid", f"a {object_type} has no parent")
        if in_reply_to is not None and not reply_gone:
            replied = self._row(conn, ObjectType.REVIEW_COMMENT, in_reply_to)
            if replied is None:
                raise _Refused("dependency_missing", f"review comment {in_reply_to} does not exist")
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
            parent=None if parent is None else ObjectRef(parent.object_type, parent.id),
            parent_key=None if parent is None else parent.unique_key,
            in_reply_to=in_reply_to,
        )
        stored = _Stored.of(obj)
        if expect is not None and stored.content_hash != expect_hash:
            _require_canonical(obj, expect, stored.raw)
        scope = _unique_scope(object_type, parent)
        kept_number = number if explicit_number else None
        asset_sha256 = None
        if object_type is ObjectType.RELEASE_ASSET:  # refuse before the bytes are stored
            self._check_free(conn, obj, scope, kept_number)
            asset_sha256 = self._store_content(content, obj.payload)
        now = self._stamp or _now()
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
                now,
            )
        except sqlite3.IntegrityError:
            # The unique indexes refused the row (the statement wrote nothing): name the
            # key that is taken, as a check before the insert would have. Checking after
            # the fact spares two queries per create on the common path.
            self._check_free(conn, obj, scope, kept_number)
            raise
        sequences.take(object_type.value, int(identity))
        if number is not None:
            sequences.take("number", number)
        return identity

    def _check_free(
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
                raise _Refused("conflict", f"number #{number} is taken by {taken[0]} {taken[1]}")
        self._check_unique(conn, obj, scope, None)

    def _insert(
        self,
        conn: sqlite3.Connection,
        obj: CanonicalObject,
        identity: str,
        number: int | None,
        scope: str | None,
        parent: _Parent | None,
        in_reply_to: str | None,
        stored: _Stored,
        marker: str | None,
        asset_sha256: str | None,
        now: str,
    ) -> None:
        object_type = obj.object_type
        conn.execute(
            "INSERT INTO objects (object_type, id, number, unique_key, unique_scope, "
            "object_key, parent_type, parent_id, parent_key, in_reply_to, payload, "
            "content_hash, revision, marker, order_key, size, asset_sha256, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)",
            (
                object_type.value,
                identity,
                number,
                obj.unique_key,
                scope,
                obj.object_key,
                None if parent is None else parent.object_type.value,
                None if parent is None else parent.id,
                None if parent is None else parent.unique_key,
                in_reply_to,
                stored.json,
                stored.content_hash,
                marker,
                obj.order_key,
                stored.size,
                asset_sha256,
                now,
                now,
            ),
        )

    def _update(
        self,
        conn: sqlite3.Connection,
        row: _Row,
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
            row.id,
            str(row.revision + 1),
            fields,
            number=row.number,
            parent=row.parent,
            parent_key=row.parent_key,
            in_reply_to=row.in_reply_to,
        )
        stored = _Stored.of(obj)
        if expect is not None and stored.content_hash != expect_hash:
            _require_canonical(obj, expect, stored.raw)
        if obj.unique_key != row.unique_key:
            self._check_unique(conn, obj, row.unique_scope, row.id)
        asset_sha256 = row.asset_sha256
        if row.object_type is ObjectType.RELEASE_ASSET and (
            obj.payload["sha256"] != asset_sha256
            or obj.payload["size"] != json.loads(row.payload)["size"]
        ):
            if content is None:
                raise _Refused("invalid", "new asset bytes were announced but not provided")
            asset_sha256 = self._store_content(content, obj.payload)
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
                self._stamp or _now(),
                row.object_type.value,
                row.id,
            ),
        )
        if obj.unique_key != row.unique_key:
            self._propagate_key(conn, row.object_type, row.id, obj.unique_key)
        return obj

    def _propagate_key(
        self, conn: sqlite3.Connection, object_type: ObjectType, identity: str, key: str | None
    ) -> None:
        """A parent's unique key changed (a release tag, a review's content): the keys of
        its descendants embed it, so they follow. Their content and revision stay."""
        children = conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM objects WHERE parent_type = ? AND parent_id = ?",
            (object_type.value, identity),
        ).fetchall()
        for sql_row in children:
            child = _Row.from_sql(sql_row)
            obj = build(
                child.object_type,
                child.id,
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
                (key, obj.unique_key, obj.object_key, child.object_type.value, child.id),
            )
            if obj.unique_key != child.unique_key:
                self._propagate_key(conn, child.object_type, child.id, obj.unique_key)

    def _delete(self, conn: sqlite3.Connection, row: _Row, garbage: set[str]) -> None:
        """Delete an object; its descendants go with it (``ON DELETE CASCADE``)."""
        if row.object_type is ObjectType.RELEASE:
            garbage.update(
                sha
                for (sha,) in conn.execute(
                    "SELECT asset_sha256 FROM objects WHERE parent_type = ? AND parent_id = ? "
                    "AND object_type = ?",
                    (row.object_type.value, row.id, ObjectType.RELEASE_ASSET.value),
                )
            )
        elif row.asset_sha256:
            garbage.add(row.asset_sha256)
        conn.execute(
            "DELETE FROM objects WHERE object_type = ? AND id = ?", (row.object_type.value, row.id)
        )

    def _check_unique(
        self,
        conn: sqlite3.Connection,
        obj: CanonicalObject,
        scope: str | None,
        identity: str | None,
    ) -> None:
        if scope is None or obj.unique_key is None:
            return
        taken = conn.execute(
            "SELECT object_type, id FROM objects WHERE unique_scope = ? AND unique_key = ?",
            (scope, obj.unique_key),
        ).fetchone()
        if taken is not None and not (taken[0] == obj.object_type.value and taken[1] == identity):
            raise _Refused(
                "conflict", f"{obj.object_key}: {taken[0]} {taken[1]} already uses this key"
            )

    def _store_content(
        self, content: Callable[[], BinaryIO] | None, payload: Mapping[str, Any]
    ) -> str:
        """Stream asset bytes into ``assets/<sha256>``, verified against the payload.

        Runs inside the write transaction (under the database's write lock), so garbage
        collection, which takes the same lock, never removes a file a commit is about to
        reference. The bytes are durable (fsync, rename, fsync of the directory) before
        the row is committed.
        """
        if content is None:
            raise _Refused("invalid", "a release asset needs its bytes (content)")
        self.assets_dir.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.assets_dir, prefix=".incoming-")
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
                raise _Refused(exc.code, exc.message) from exc
            sha256 = digest.hexdigest()
            if sha256 != payload["sha256"] or size != payload["size"]:
                raise _Refused(
                    "invalid",
                    f"asset bytes are {size} bytes with sha256 {sha256}, but the payload "
                    f"announces {payload['size']} bytes with sha256 {payload['sha256']}",
                )
            final = self.assets_dir / sha256
            if not final.exists():
                os.replace(temporary, final)
                pending = None
                _fsync_directory(self.assets_dir)
        finally:
            if pending is not None:
                with suppress(FileNotFoundError):
                    os.unlink(pending)
        return sha256

    def _collect(self, candidates: Iterable[str]) -> None:
        """Remove asset files no row references any more (after a committed delete).

        Housekeeping only: a failure here leaves an orphan file (harmless, content
        addressed, reclaimed by ``collect_garbage``) and must not turn a committed batch
        into an error.
        """
        candidates = builtins.list(candidates)
        if not candidates:
            return
        with suppress(sqlite3.Error, OSError), self._lock:
            conn = self._writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sha256 in candidates:
                    used = conn.execute(
                        "SELECT 1 FROM objects WHERE asset_sha256 = ? LIMIT 1", (sha256,)
                    ).fetchone()
                    if used is None:
                        with suppress(FileNotFoundError):
                            os.unlink(self.assets_dir / sha256)
            finally:
                conn.execute("COMMIT")

    def collect_garbage(self) -> int:
        """Remove every unreferenced asset file (left by crashes); returns how many.

        Holds the write lock, so no writer is between its rename and its commit.
        """
        if not self.assets_dir.exists():
            return 0
        removed = 0
        with self._lock, self._guard("collect unreferenced asset files"):
            conn = self._writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                used = {
                    sha
                    for (sha,) in conn.execute(
                        "SELECT asset_sha256 FROM objects WHERE asset_sha256 IS NOT NULL"
                    )
                }
                for file in self.assets_dir.iterdir():
                    if file.name not in used:
                        file.unlink()
                        removed += 1
            finally:
                conn.execute("COMMIT")
        return removed

    # -- the Python API (tests, demo) -----------------------------------------------------

    def _create_api(
        self,
        object_type: ObjectType,
        fields: dict[str, Any],
        *,
        number: int | None = None,
        parent: tuple[ObjectType | str, str] | None = None,
        in_reply_to: str | None = None,
        content: Callable[[], BinaryIO] | None = None,
    ) -> str:
        self._refuse_on_standby()
        with self._transaction(f"create a {object_type}") as conn:
            sequences = _Sequences(conn)
            try:
                identity = self._create(
                    conn,
                    sequences,
                    object_type,
                    fields,
                    number=number,
                    parent=None if parent is None else self._parent(conn, *parent),
                    in_reply_to=in_reply_to,
                    marker=None,
                    expect=None,
                    content=content,
                )
            except MalformedObject as exc:
                raise _Refused("invalid", str(exc)) from exc
            sequences.flush()
            return identity

    def create_label(self, name: str, color: str = "ededed", description: str = "") -> str:
        """Create a label; returns its identity."""
        return self._create_api(
            ObjectType.LABEL, {"name": name, "color": color, "description": description}
        )

    def create_milestone(
        self,
        title: str,
        description: str = "",
        state: str = "open",
        due_on: datetime | str | None = None,
    ) -> str:
        """Create a milestone; returns its identity."""
        return self._create_api(
            ObjectType.MILESTONE,
            {"title": title, "description": description, "state": state, "due_on": due_on},
        )

    def create_issue(
        self,
        title: str,
        *,
        author: str,
        body: str = "",
        created_at: datetime | str | None = None,
        number: int | None = None,
        labels: Iterable[str] = (),
        milestone: str | None = None,
        assignees: Iterable[str] = (),
        state: str = "open",
        state_reason: str | None = None,
        closed_at: datetime | str | None = None,
        locked: bool = False,
        active_lock_reason: str | None = None,
    ) -> str:
        """Create an issue (next shared number unless ``number``); returns its identity."""
        return self._create_api(
            ObjectType.ISSUE,
            {
                "title": title,
                "author": author,
                "body": body,
                "created_at": created_at or datetime.now(UTC),
                "labels": builtins.list(labels),
                "milestone": milestone,
                "assignees": builtins.list(assignees),
                "state": state,
                "state_reason": state_reason,
                "closed_at": closed_at,
                "locked": locked,
                "active_lock_reason": active_lock_reason,
            },
            number=number,
        )

    def create_pull_request(
        self,
        title: str,
        *,
        author: str,
        base_ref: str,
        base_sha: str,
        head_ref: str,
        head_sha: str,
        body: str = "",
        created_at: datetime | str | None = None,
        number: int | None = None,
        state: str = "open",
        merged: bool = False,
        merged_at: datetime | str | None = None,
        draft: bool = False,
        labels: Iterable[str] = (),
        milestone: str | None = None,
        assignees: Iterable[str] = (),
        closed_at: datetime | str | None = None,
    ) -> str:
        """Create a pull request (shares the issues' numbers); returns its identity."""
        return self._create_api(
            ObjectType.PULL_REQUEST,
            {
                "title": title,
                "author": author,
                "base_ref": base_ref,
                "base_sha": base_sha,
                "head_ref": head_ref,
                "head_sha": head_sha,
                "body": body,
                "created_at": created_at or datetime.now(UTC),
                "state": state,
                "merged": merged,
                "merged_at": merged_at,
                "draft": draft,
                "labels": builtins.list(labels),
                "milestone": milestone,
                "assignees": builtins.list(assignees),
                "closed_at": closed_at,
            },
            number=number,
        )

    def add_comment(
        self,
        parent_type: ObjectType | str,
        parent_id: str,
        body: str,
        *,
        author: str,
        created_at: datetime | str | None = None,
    ) -> str:
        """Comment on an issue or a pull request; returns the comment's identity."""
        return self._create_api(
            ObjectType.ISSUE_COMMENT,
            {"body": body, "author": author, "created_at": created_at or datetime.now(UTC)},
            parent=(parent_type, parent_id),
        )

    def add_review(
        self,
        pr_id: str,
        *,
        state: str,
        body: str = "",
        commit_id: str,
        author: str,
        submitted_at: datetime | str | None = None,
    ) -> str:
        """Review a pull request; returns the review's identity."""
        return self._create_api(
            ObjectType.REVIEW,
            {
                "state": state,
                "body": body,
                "commit_id": commit_id,
                "author": author,
                "submitted_at": submitted_at or datetime.now(UTC),
            },
            parent=(ObjectType.PULL_REQUEST, pr_id),
        )

    def add_review_comment(
        self,
        review_id: str,
        *,
        path: str,
        line: int | None,
        body: str,
        commit_id: str,
        author: str,
        in_reply_to: str | None = None,
        side: str = "RIGHT",
        created_at: datetime | str | None = None,
    ) -> str:
        """Comment on a line within a review (or reply to a review comment)."""
        return self._create_api(
            ObjectType.REVIEW_COMMENT,
            {
                "path": path,
                "line": line,
                "side": side,
                "commit_id": commit_id,
                "body": body,
                "author": author,
                "created_at": created_at or datetime.now(UTC),
            },
            parent=(ObjectType.REVIEW, review_id),
            in_reply_to=in_reply_to,
        )

    def request_review(
        self, pr_id: str, reviewer: str, requested_at: datetime | str | None = None
    ) -> str:
        """Request a review of a pull request from ``reviewer``."""
        return self._create_api(
            ObjectType.REVIEW_REQUEST,
            {"reviewer": reviewer, "requested_at": requested_at},
            parent=(ObjectType.PULL_REQUEST, pr_id),
        )

    def create_release(
        self,
        tag: str,
        *,
        author: str,
        name: str = "",
        body: str = "",
        draft: bool = False,
        prerelease: bool = False,
        created_at: datetime | str | None = None,
        published_at: datetime | str | None = None,
    ) -> str:
        """Create a release for a tag; returns its identity."""
        return self._create_api(
            ObjectType.RELEASE,
            {
                "tag": tag,
                "author": author,
                "name": name,
                "body": body,
                "draft": draft,
                "prerelease": prerelease,
                "created_at": created_at or datetime.now(UTC),
                "published_at": published_at,
            },
        )

    def upload_asset(
        self,
        release_id: str,
        name: str,
        content: bytes,
        content_type: str = "application/octet-stream",
    ) -> str:
        """Attach bytes to a release; returns the asset's identity."""
        return self._create_api(
            ObjectType.RELEASE_ASSET,
            {
                "name": name,
                "content_type": content_type,
                "size": len(content),
                "sha256": hashlib.sha256(content).hexdigest(),
            },
            parent=(ObjectType.RELEASE, release_id),
            content=lambda: io.BytesIO(content),
        )

    def add_reaction(
        self,
        parent_type: ObjectType | str,
        parent_id: str,
        content: str,
        user: str,
        created_at: datetime | str | None = None,
    ) -> str:
        """React to an issue, pull request, comment, review or release."""
        return self._create_api(
            ObjectType.REACTION,
            {"content": content, "user": user, "created_at": created_at or datetime.now(UTC)},
            parent=(parent_type, parent_id),
        )

    def update(self, object_type: ObjectType | str, identity: str, **changes: Any) -> str:
        """Merge ``changes`` into an object's payload (validated by its builder).

        Returns the new revision. Raises ``ObjectNotFound``, ``Conflict`` (a unique key
        taken), ``MalformedObject``.
        """
        self._refuse_on_standby()
        object_type = ObjectType(object_type)
        with self._transaction(f"update {object_type} {identity}") as conn:
            row = self._row(conn, object_type, identity) if object_type in FORGE_TYPES else None
            if row is None:
                raise _Refused("not_found", f"{object_type} {identity} not found")
            fields = row.fields()
            fields.update(changes)
            try:
                self._update(conn, row, fields, expect=None, content=None, garbage=set())
            except MalformedObject as exc:
                raise _Refused("invalid", str(exc)) from exc
            return str(row.revision + 1)

    def delete(self, object_type: ObjectType | str, identity: str) -> bool:
        """Delete an object and its descendants; whether it existed."""
        self._refuse_on_standby()
        object_type = ObjectType(object_type)
        if object_type not in FORGE_TYPES:
            return False
        garbage: set[str] = set()
        with self._transaction(f"delete {object_type} {identity}") as conn:
            row = self._row(conn, object_type, identity)
            if row is not None:
                self._delete(conn, row, garbage)
        self._collect(garbage)
        return row is not None

    def create_many(
        self,
        object_type: ObjectType | str,
        rows: Sequence[Mapping[str, Any]],
        *,
        parent: tuple[ObjectType | str, str] | None = None,
    ) -> builtins.list[str]:
        """Create many objects in one transaction (fixtures, benchmarks); all or nothing.

        Each row holds builder fields, plus ``number`` (issues, pull requests) and
        ``in_reply_to`` (review comments) when wanted; missing creation times are "now".
        ``parent`` is the parent of every row (nested types). Uniqueness is left to the
        schema's indexes: any clash refuses the whole call with ``Conflict``. Release
        assets need their bytes: use ``upload_asset``.
        """
        self._refuse_on_standby()
        object_type = ObjectType(object_type)
        if object_type is ObjectType.RELEASE_ASSET:
            raise MalformedObject("release assets need their bytes: use upload_asset")
        if not rows:
            return []
        now = datetime.now(UTC)
        stamp = _now()
        time_field = TIME_FIELDS.get(object_type)
        with self._transaction(f"create {len(rows)} {object_type} objects") as conn:
            parent_row = None if parent is None else self._parent(conn, *parent)
            if parent_row is None and object_type in PARENT_TYPES:
                raise _Refused("invalid", f"a {object_type} needs a parent")
            scope = _unique_scope(object_type, parent_row)
            last_id = self._next(conn, object_type.value, len(rows))
            first_id = last_id - len(rows) + 1
            auto_numbers = sum(1 for r in rows if r.get("number") is None)
            next_number = 0
            if object_type in NUMBERED and auto_numbers:
                next_number = self._next(conn, "number", auto_numbers) - auto_numbers + 1
            params = []
            highest = 0
            try:
                for offset, row in enumerate(rows):
                    fields = dict(row)
                    number = fields.pop("number", None)
                    in_reply_to = fields.pop("in_reply_to", None)
                    if time_field and fields.get(time_field) is None:
                        fields[time_field] = now
                    if object_type in NUMBERED:
                        if number is None:
                            number, next_number = next_number, next_number + 1
                        highest = max(highest, number)
                    identity = str(first_id + offset)
                    obj = build(
                        object_type,
                        identity,
                        "1",
                        fields,
                        number=number,
                        parent=None
                        if parent_row is None
                        else ObjectRef(parent_row.object_type, parent_row.id),
                        parent_key=None if parent_row is None else parent_row.unique_key,
                        in_reply_to=in_reply_to,
                    )
                    stored = _Stored.of(obj)
                    params.append(
                        (
                            object_type.value,
                            identity,
                            number,
                            obj.unique_key,
                            scope,
                            obj.object_key,
                            None if parent_row is None else parent_row.object_type.value,
                            None if parent_row is None else parent_row.id,
                            None if parent_row is None else parent_row.unique_key,
                            in_reply_to,
                            stored.json,
                            stored.content_hash,
                            obj.order_key,
                            stored.size,
                            stamp,
                            stamp,
                        )
                    )
            except MalformedObject as exc:
                raise _Refused("invalid", str(exc)) from exc
            replied = {p[9] for p in params if p[9] is not None}
            created = {p[1] for p in params}
            for identity in replied - created:
                if self._row(conn, ObjectType.REVIEW_COMMENT, identity) is None:
                    raise _Refused("dependency_missing", f"review comment {identity} not found")
            if highest:
                self._raise_sequence(conn, "number", highest)
            try:
                conn.executemany(
                    "INSERT INTO objects (object_type, id, number, unique_key, unique_scope, "
                    "object_key, parent_type, parent_id, parent_key, in_reply_to, payload, "
                    "content_hash, revision, order_key, size, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
                    params,
                )
            except sqlite3.IntegrityError as exc:
                raise _Refused("conflict", f"cannot create {object_type} objects: {exc}") from exc
            return [str(first_id + offset) for offset in range(len(rows))]


def _integrity_refusal(exc: sqlite3.IntegrityError) -> _Refused:
    text = str(exc)
    if "FOREIGN KEY" in text:
        return _Refused("dependency_missing", f"a referenced object is missing: {text}")
    if "UNIQUE" in text:
        return _Refused("conflict", f"a unique key or number is taken: {text}")
    return _Refused("invalid", f"the store refused the object: {text}")


def _require_canonical(obj: CanonicalObject, expected: Mapping[str, Any], built: bytes) -> None:
    """Refuse a payload the builder would store differently.

    The engine verifies a write by reading it back and comparing hashes; accepting a
    payload that reads back different would make that verification fail forever.
    """
    try:
        given = canonical_json(dict(expected))
    except (TypeError, ValueError) as exc:
        raise _Refused("invalid", f"the payload is not JSON: {exc}") from exc
    if built != given:
        differing = sorted(
            key
            for key in set(obj.payload) | set(expected)
            if canonical_json(obj.payload.get(key)) != canonical_json(expected.get(key))
            or (key in obj.payload) != (key in expected)
        )
        raise _Refused(
            "invalid",
            f"the payload is not canonical for a {obj.object_type}: "
            + ", ".join(
                f"{key}={expected.get(key)!r} would be stored as {obj.payload.get(key)!r}"
                for key in differing
            ),
        )


def _refused(write: TargetWrite, refusal: _Refused) -> ApplyResult:
    return ApplyResult(
        write.item_id,
        WriteStatus.REFUSED,
        write.target_identity,
        error_code=refusal.code,
        message=refusal.message,
    )


def _api_error(refusal: _Refused) -> Exception:
    if refusal.code == "conflict":
        return Conflict(refusal.message)
    if refusal.code in ("not_found", "dependency_missing"):
        return ObjectNotFound(refusal.message)
    return MalformedObject(refusal.message)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
