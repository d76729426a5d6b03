"""Reading a local forge's objects: the inventory index, objects in bulk, markers.

Every read is one query (or one per chunk of ``IN_CHUNK`` identities) under the store's
lock; a missing store reads as empty and is never created by a read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from reposync.providers.local.objects import FORGE_TYPES, OBJECT_COLUMNS, stored_object
from reposync.providers.local.store import IN_CHUNK, ForgeStore
from reposync.sync.canonical import CanonicalObject, IndexEntry, PullHead
from reposync.sync.vocabulary import ObjectType

#: Rows fetched per index query: bounded memory, no long-lived cursor.
INDEX_CHUNK = 5000

_INDEX_QUERY = (
    "SELECT id, object_key, unique_key, revision, content_hash, size, order_key "
    "FROM objects INDEXED BY objects_listing "
    "WHERE object_type = ? AND id > ? ORDER BY object_type, id LIMIT ?"
)


class ForgeReader:
    """The read side of one local forge (what the provider reads through)."""

    def __init__(self, store: ForgeStore) -> None:
        self._store = store

    def is_empty(self) -> bool:
        """Whether no forge object exists (a missing store is empty)."""
        store = self._store
        with store.lock, store.guard("check for objects"):
            conn = store.reader()
            if conn is None:
                return True
            return conn.execute("SELECT 1 FROM objects LIMIT 1").fetchone() is None

    def count(self, object_type: ObjectType | str | None = None) -> int:
        """How many objects (of one type, or in all)."""
        store = self._store
        with store.lock, store.guard("count objects"):
            conn = store.reader()
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
        store = self._store
        wanted = sorted({ObjectType(t) for t in object_types} & FORGE_TYPES, key=str)
        for object_type in wanted:
            after = ""  # identities are never empty
            while True:
                with store.lock, store.guard("list the inventory"):
                    conn = store.reader()
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
            object_type, list(found), columns, "hashes"
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
        db_path = self._store.db_path
        for sql_row in self._by_ids(object_type, list(found), OBJECT_COLUMNS, "objects"):
            found[sql_row[0]] = stored_object(object_type, sql_row, db_path)
        return found

    def get(self, object_type: ObjectType | str, identity: str) -> CanonicalObject | None:
        """One object, or ``None``."""
        return self.read_batch(object_type, [identity])[identity]

    def objects_of(self, object_type: ObjectType | str) -> list[CanonicalObject]:
        """Every object of a type, in identity order."""
        object_type = ObjectType(object_type)
        if object_type not in FORGE_TYPES:
            return []
        store = self._store
        with store.lock, store.guard(f"list {object_type} objects"):
            conn = store.reader()
            if conn is None:
                return []
            rows = conn.execute(
                f"SELECT {OBJECT_COLUMNS} FROM objects WHERE object_type = ? ORDER BY id",
                (object_type.value,),
            ).fetchall()
            return [stored_object(object_type, r, store.db_path) for r in rows]

    def open_pull_heads(self) -> list[PullHead]:
        """Number, head branch and head commit of every open pull request.

        The shadow branches of the Git inventory need them on every index; one query over
        the pull request rows, reading two payload fields in SQLite.
        """
        store = self._store
        with store.lock, store.guard("list open pull request heads"):
            conn = store.reader()
            if conn is None:
                return []
            rows = conn.execute(
                "SELECT number, json_extract(payload, '$.head_ref'), "
                "json_extract(payload, '$.head_sha') FROM objects "
                "WHERE object_type = 'pull_request' "
                "AND json_extract(payload, '$.state') = 'open' ORDER BY number"
            ).fetchall()
        return [PullHead(int(number), str(ref), str(sha)) for number, ref, sha in rows]

    def find_by_markers(
        self, object_type: ObjectType | str, markers: Sequence[str]
    ) -> dict[str, str]:
        """{marker: identity} of the objects a sync created with these markers."""
        object_type = ObjectType(object_type)
        wanted = list(dict.fromkeys(m for m in markers if m))
        result: dict[str, str] = {}
        store = self._store
        with store.lock, store.guard("find objects by marker"):
            conn = store.reader()
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

    def _by_ids(
        self, object_type: ObjectType, ids: Sequence[str], columns: str, what: str
    ) -> list[tuple[Any, ...]]:
        """Rows of these objects, one query per ``IN_CHUNK`` identities."""
        rows: list[tuple[Any, ...]] = []
        if object_type not in FORGE_TYPES or not ids:
            return rows
        store = self._store
        with store.lock, store.guard(f"read {object_type} {what}"):
            conn = store.reader()
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
