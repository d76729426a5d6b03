"""The SQLite file of a local forge: its schema, its one connection and the lock around it.

``<git_dir>/reposync/forge.db`` is one SQLite database (WAL, ``synchronous=FULL``), one
table of objects keyed by (object type, id). Each row keeps the canonical payload as
canonical JSON next to what the inventory index needs (keys, revision, hash, size,
order), so listing an inventory never reads a payload and reading an object is one row
plus its builder.

Nothing is created on disk until something is written: a read-only source without
metadata stays untouched, and reads of a missing store return nothing (``reader()`` is
``None`` then).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from reposync.errors import ProviderUnavailable
from reposync.files import private_dir, private_file

#: Bumped with every change of the schema below; stored in ``PRAGMA user_version``.
SCHEMA_VERSION = 1

#: Parameters per ``IN (...)`` query (well below SQLite's limit).
IN_CHUNK = 500

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


class ForgeStore:
    """The database of one local forge: one SQLite connection, used under ``lock``.

    One connection per forge, under a lock, so a provider may be shared by threads; the
    readers, the batch writer, the asset store and the authoring API all go through it.
    """

    def __init__(self, git_dir: str | os.PathLike[str], *, busy_timeout: float = 10.0) -> None:
        self.root = Path(git_dir) / "reposync"
        self.db_path = self.root / "forge.db"
        self.assets_dir = self.root / "assets"
        self.lock = threading.RLock()
        #: Writes that were committed (creates, updates, deletes that changed something);
        #: the provider reports the delta around a batch as its ``writes``.
        self.writes_performed = 0
        self._busy_timeout = busy_timeout
        self._conn: sqlite3.Connection | None = None
        self._schema_ready = False
        self._writable = False
        self._trace: Callable[[str], None] | None = None

    def close(self) -> None:
        """Close the connection. Idempotent; the next call opens it again."""
        with self.lock:
            if self._conn is not None:
                with suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None
            self._schema_ready = False
            self._writable = False

    def trace(self, callback: Callable[[str], None] | None) -> None:
        """Receive every SQL statement this store runs (tests, diagnostics)."""
        with self.lock:
            self._trace = callback
            if self._conn is not None:
                self._conn.set_trace_callback(callback)

    @contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """Map the storage's failures to ``ProviderUnavailable`` (one boundary)."""
        try:
            yield
        except sqlite3.Error as exc:
            raise ProviderUnavailable(
                f"local forge {self.db_path}: cannot {action}: {exc}"
            ) from exc
        except OSError as exc:
            raise ProviderUnavailable(f"local forge {self.root}: cannot {action}: {exc}") from exc

    def reader(self) -> sqlite3.Connection | None:
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

    def writer(self) -> sqlite3.Connection:
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
                rollback(conn)
                raise
            self._schema_ready = True
        return self._conn

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
            conn = self._read_only()
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

    def _read_only(self) -> sqlite3.Connection:
        """A connection that writes nothing, whatever stops us writing.

        A WAL database opened read-only still needs its ``-shm`` file: one a writer keeps
        open is shared, but where none exists and none can be made (a read-only mount, a
        directory of another user's with no writer at work) SQLite cannot open it. Then
        nothing is writing it either (no ``-wal``), and it is opened ``immutable``: read
        as the file is, without the locks only writers need.
        """
        uri = self.db_path.absolute().as_uri()
        conn = self._open(uri + "?mode=ro")
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn.close()
            wal = self.db_path.with_name(self.db_path.name + "-wal")
            if wal.exists():
                raise  # a writer is at work where we may not share its index: wait
            conn = self._open(uri + "?mode=ro&immutable=1")
        return conn

    def _open(self, uri: str) -> sqlite3.Connection:
        return sqlite3.connect(
            uri,
            uri=True,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )

    def _check_version(self, conn: sqlite3.Connection) -> bool:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ProviderUnavailable(
                f"{self.db_path} has schema version {version}, newer than this reposync "
                f"understands ({SCHEMA_VERSION}); upgrade reposync"
            )
        return bool(version == SCHEMA_VERSION)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if any; a failure to do so changes nothing more."""
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
