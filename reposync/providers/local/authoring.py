"""Editing a local forge by hand: the Python API of tests, benchmarks and the demo.

Never on the production path: the provider reads through ``reads`` and writes through
``writes`` only, and nothing in ``reposync`` imports this module. Each call is one
transaction through the same row mutations as the engine's batches, so what is authored
here is validated, keyed and hashed exactly as a synced object would be. Refusals
surface as the errors a caller expects (``Conflict``, ``ObjectNotFound``,
``MalformedObject``), not as ``REFUSED`` results. Each committed edit is reported through
the repository's notify hook when ``reposync hooks install`` installed one
(``LocalForge.notify_change``), as a push is by its post-receive hook.
"""

from __future__ import annotations

import hashlib
import io
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, BinaryIO

from reposync.errors import Conflict, ObjectNotFound, PermissionDenied
from reposync.providers.local.forge import LocalForge
from reposync.providers.local.mutations import (
    INSERT_OBJECT,
    RowMutations,
    Sequences,
    find_row,
    object_values,
)
from reposync.providers.local.objects import (
    FORGE_TYPES,
    NUMBERED,
    PARENT_TYPES,
    Parent,
    Refused,
    Stored,
    build,
    integrity_refusal,
    timestamp,
    unique_scope,
)
from reposync.providers.local.store import rollback
from reposync.sync.canonical import ObjectRef
from reposync.sync.fields import SHAPES
from reposync.sync.objects import MalformedObject
from reposync.sync.vocabulary import ObjectType


class ForgeAuthoring:
    """Creates, edits and deletes the objects of one local forge by hand.

    Shares the forge's store (one connection, one lock) and exposes its parts, so a test
    or the demo holds one handle that both edits and reads back. Edits are refused on a
    Binding's standby: its authority is elsewhere.
    """

    def __init__(self, forge: LocalForge) -> None:
        self.forge = forge
        self.store = forge.store
        self.reader = forge.reader
        self.writer = forge.writer
        self.assets = forge.assets
        self._rows = RowMutations(forge.assets)

    def _refuse_on_standby(self) -> None:
        """Edits through this API are refused on a standby: its authority is elsewhere."""
        standby_of = self.forge.standby_of
        authority = standby_of() if standby_of is not None else None
        if authority:
            raise PermissionDenied(
                f"{self.forge.root.parent} is the standby of {authority}; write to the "
                "authority instead (reposync keeps this copy in sync)"
            )

    @contextmanager
    def _transaction(self, action: str, *changed: ObjectType | str) -> Iterator[sqlite3.Connection]:
        """One write transaction of the Python API; refusals become exceptions. Once it
        committed, the change of ``changed`` types is reported (``notify_change``)."""
        with self._committed(action) as conn:
            yield conn
        if changed:
            self.forge.notify_change([str(t) for t in changed])

    @contextmanager
    def _committed(self, action: str) -> Iterator[sqlite3.Connection]:
        store = self.store
        with store.lock, store.guard(action):
            conn = store.writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except Refused as refusal:
                rollback(conn)
                raise _api_error(refusal) from None
            except sqlite3.IntegrityError as exc:  # a race the checks could not see
                rollback(conn)
                raise _api_error(integrity_refusal(exc)) from exc
            except BaseException:
                rollback(conn)
                raise
            store.writes_performed += 1

    def _create(
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
        created = SHAPES[object_type].created
        if created is not None and not fields.get(created):
            fields = {**fields, created: datetime.now(UTC)}
        with self._transaction(f"create a {object_type}", object_type) as conn:
            sequences = Sequences(conn)
            try:
                identity = self._rows.create(
                    conn,
                    sequences,
                    object_type,
                    fields,
                    number=number,
                    parent=None if parent is None else _parent(conn, *parent),
                    in_reply_to=in_reply_to,
                    marker=None,
                    expect=None,
                    content=content,
                )
            except MalformedObject as exc:
                raise Refused("invalid", str(exc)) from exc
            sequences.flush()
            return identity

    # Each ``create_*`` takes the fields of its type as keyword arguments, with the names
    # and defaults of ``reposync.sync.fields`` (``LABEL``, ``ISSUE``, ...); the creation
    # time (``Shape.created``) is "now" when left out. The builder refuses the rest.

    def create_label(self, name: str, **fields: Any) -> str:
        """Create a label; returns its identity."""
        return self._create(ObjectType.LABEL, {"name": name, **fields})

    def create_milestone(self, title: str, **fields: Any) -> str:
        """Create a milestone; returns its identity."""
        return self._create(ObjectType.MILESTONE, {"title": title, **fields})

    def create_issue(self, title: str, *, number: int | None = None, **fields: Any) -> str:
        """Create an issue (next shared number unless ``number``); returns its identity."""
        return self._create(ObjectType.ISSUE, {"title": title, **fields}, number=number)

    def create_pull_request(self, title: str, *, number: int | None = None, **fields: Any) -> str:
        """Create a pull request (shares the issues' numbers); returns its identity."""
        return self._create(ObjectType.PULL_REQUEST, {"title": title, **fields}, number=number)

    def add_comment(
        self, parent_type: ObjectType | str, parent_id: str, body: str, **fields: Any
    ) -> str:
        """Comment on an issue or a pull request; returns the comment's identity."""
        return self._create(
            ObjectType.ISSUE_COMMENT, {"body": body, **fields}, parent=(parent_type, parent_id)
        )

    def add_review(self, pr_id: str, **fields: Any) -> str:
        """Review a pull request; returns the review's identity."""
        return self._create(ObjectType.REVIEW, fields, parent=(ObjectType.PULL_REQUEST, pr_id))

    def add_review_comment(
        self, review_id: str, *, in_reply_to: str | None = None, **fields: Any
    ) -> str:
        """Comment on a line within a review (or reply to a review comment)."""
        return self._create(
            ObjectType.REVIEW_COMMENT,
            fields,
            parent=(ObjectType.REVIEW, review_id),
            in_reply_to=in_reply_to,
        )

    def request_review(self, pr_id: str, reviewer: str, **fields: Any) -> str:
        """Request a review of a pull request from ``reviewer``."""
        return self._create(
            ObjectType.REVIEW_REQUEST,
            {"reviewer": reviewer, **fields},
            parent=(ObjectType.PULL_REQUEST, pr_id),
        )

    def create_release(self, tag: str, **fields: Any) -> str:
        """Create a release for a tag; returns its identity."""
        return self._create(ObjectType.RELEASE, {"tag": tag, **fields})

    def upload_asset(
        self,
        release_id: str,
        name: str,
        content: bytes,
        content_type: str = "application/octet-stream",
    ) -> str:
        """Attach bytes to a release; returns the asset's identity (its size and SHA-256
        are the bytes')."""
        return self._create(
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
        **fields: Any,
    ) -> str:
        """React to an issue, pull request, comment or release."""
        return self._create(
            ObjectType.REACTION,
            {"content": content, "user": user, **fields},
            parent=(parent_type, parent_id),
        )

    def update(self, object_type: ObjectType | str, identity: str, **changes: Any) -> str:
        """Merge ``changes`` into an object's payload (validated by its builder).

        Returns the new revision. Raises ``ObjectNotFound``, ``Conflict`` (a unique key
        taken), ``MalformedObject``.
        """
        self._refuse_on_standby()
        object_type = ObjectType(object_type)
        with self._transaction(f"update {object_type} {identity}", object_type) as conn:
            row = find_row(conn, object_type, identity) if object_type in FORGE_TYPES else None
            if row is None:
                raise Refused("not_found", f"{object_type} {identity} not found")
            fields = row.fields()
            fields.update(changes)
            try:
                self._rows.update(conn, row, fields, expect=None, content=None, garbage=set())
            except MalformedObject as exc:
                raise Refused("invalid", str(exc)) from exc
            return str(row.revision + 1)

    def delete(self, object_type: ObjectType | str, identity: str) -> bool:
        """Delete an object and its descendants; whether it existed."""
        self._refuse_on_standby()
        object_type = ObjectType(object_type)
        if object_type not in FORGE_TYPES:
            return False
        garbage: set[str] = set()
        with self._transaction(f"delete {object_type} {identity}", object_type) as conn:
            row = find_row(conn, object_type, identity)
            if row is not None:
                self._rows.delete(conn, row, garbage)
        self.assets.collect(garbage)
        return row is not None

    def create_many(
        self,
        object_type: ObjectType | str,
        rows: Sequence[Mapping[str, Any]],
        *,
        parent: tuple[ObjectType | str, str] | None = None,
    ) -> list[str]:
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
        stamp = timestamp()
        time_field = SHAPES[object_type].created
        with self._transaction(f"create {len(rows)} {object_type} objects", object_type) as conn:
            parent_row = None if parent is None else _parent(conn, *parent)
            if parent_row is None and object_type in PARENT_TYPES:
                raise Refused("invalid", f"a {object_type} needs a parent")
            scope = unique_scope(object_type, parent_row)
            last_id = _next_value(conn, object_type.value, len(rows))
            first_id = last_id - len(rows) + 1
            auto_numbers = sum(1 for r in rows if r.get("number") is None)
            next_number = 0
            if object_type in NUMBERED and auto_numbers:
                next_number = _next_value(conn, "number", auto_numbers) - auto_numbers + 1
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
                        else ObjectRef(parent_row.object_type, parent_row.identity),
                        parent_key=None if parent_row is None else parent_row.unique_key,
                        in_reply_to=in_reply_to,
                    )
                    stored = Stored.of(obj)
                    params.append(
                        object_values(
                            obj, identity, number, scope, parent_row, in_reply_to, stored, stamp
                        )
                    )
            except MalformedObject as exc:
                raise Refused("invalid", str(exc)) from exc
            created = {str(first_id + offset) for offset in range(len(rows))}
            replied = {str(r["in_reply_to"]) for r in rows if r.get("in_reply_to") is not None}
            for identity in replied - created:
                if find_row(conn, ObjectType.REVIEW_COMMENT, identity) is None:
                    raise Refused("dependency_missing", f"review comment {identity} not found")
            if highest:
                _raise_sequence(conn, "number", highest)
            try:
                conn.executemany(INSERT_OBJECT, params)
            except sqlite3.IntegrityError as exc:
                raise Refused("conflict", f"cannot create {object_type} objects: {exc}") from exc
            return [str(first_id + offset) for offset in range(len(rows))]


def _parent(conn: sqlite3.Connection, object_type: ObjectType | str, identity: str) -> Parent:
    row = find_row(conn, ObjectType(object_type), identity)
    if row is None:
        raise Refused("dependency_missing", f"{object_type} {identity} does not exist")
    return Parent(row.object_type, row.identity, row.unique_key)


def _next_value(conn: sqlite3.Connection, name: str, count: int = 1) -> int:
    """Advance a sequence by ``count``; returns its new (last given) value."""
    row = conn.execute(
        "INSERT INTO sequences (name, value) VALUES (?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = value + excluded.value RETURNING value",
        (name, count),
    ).fetchall()
    return int(row[0][0])


def _raise_sequence(conn: sqlite3.Connection, name: str, value: int) -> None:
    conn.execute(
        "INSERT INTO sequences (name, value) VALUES (?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
        (name, value),
    )


def _api_error(refusal: Refused) -> Exception:
    if refusal.code == "conflict":
        return Conflict(refusal.message)
    if refusal.code in ("not_found", "dependency_missing"):
        return ObjectNotFound(refusal.message)
    return MalformedObject(refusal.message)
