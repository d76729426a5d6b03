"""ObjectLinks written from read-back-verified item outcomes, in bulk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, tuple_, update
from sqlalchemy.orm import Session

from reposync.lifecycle import Side
from reposync.models import ObjectLink, utcnow
from reposync.models.db import driver_datetime, execute, executemany
from reposync.sync.canonical import MAPPER_VERSION
from reposync.sync.vocabulary import Representation


def _side_identities(source_side: Side, source_id: str, target_id: str) -> tuple[str, str]:
    return (source_id, target_id) if source_side is Side.A else (target_id, source_id)


@dataclass(frozen=True, slots=True)
class VerifiedPair:
    """A pair of objects proven equal by read-back, as the link will record it."""

    object_type: str
    source_identity: str
    target_identity: str
    source_revision: str | None
    target_revision: str | None
    verified_hash: str
    representation: Representation = Representation.NATIVE
    source_number: int | None = None
    target_number: int | None = None


def write_links(
    session: Session,
    *,
    binding_id: int,
    source_side: Side,
    run_id: int,
    verified: Sequence[VerifiedPair],
) -> None:
    """Replace the links of verified pairs.

    Any older link that claims either identity is removed first, so both unique keys
    hold without dialect-specific upserts.
    """
    if not verified:
        return
    now = driver_datetime(session, utcnow())
    rows: list[tuple[Any, ...]] = []
    for pair in verified:
        a_id, b_id = _side_identities(source_side, pair.source_identity, pair.target_identity)
        source_first = source_side is Side.A
        rows.append(
            (
                binding_id,
                pair.object_type,
                a_id,
                b_id,
                pair.source_revision if source_first else pair.target_revision,
                pair.target_revision if source_first else pair.source_revision,
                pair.source_number if source_first else pair.target_number,
                pair.target_number if source_first else pair.source_number,
                pair.verified_hash,
                False,
                MAPPER_VERSION,
                pair.representation.value,
                run_id,
                now,
            )
        )
    _delete_claiming(session, binding_id, [(r[1], r[2], r[3]) for r in rows])
    executemany(
        session,
        "INSERT INTO object_links (binding_id, object_type, a_identity, b_identity, "
        "a_revision, b_revision, a_number, b_number, verified_hash, verify_failed, "
        "mapper_version, representation, verified_run_id, verified_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def drop_links(
    session: Session, *, binding_id: int, source_side: Side, pairs: Sequence[tuple[str, str]]
) -> None:
    """Forget links of objects deleted on both sides: (object type, source identity)."""
    if not pairs:
        return
    column = ObjectLink.a_identity if source_side is Side.A else ObjectLink.b_identity
    session.execute(
        delete(ObjectLink).where(
            ObjectLink.binding_id == binding_id,
            tuple_(ObjectLink.object_type, column).in_(pairs),
        )
    )


def mark_unreliable(
    session: Session, *, binding_id: int, source_side: Side, pairs: Sequence[tuple[str, str]]
) -> None:
    """A failed read-back: the next checkpoint re-plans these objects."""
    if not pairs:
        return
    column = ObjectLink.a_identity if source_side is Side.A else ObjectLink.b_identity
    session.execute(
        update(ObjectLink)
        .where(
            ObjectLink.binding_id == binding_id,
            tuple_(ObjectLink.object_type, column).in_(pairs),
        )
        .values(verify_failed=True)
    )


def _delete_claiming(
    session: Session, binding_id: int, triples: Sequence[tuple[str, str, str]]
) -> None:
    """Remove links that claim any of these identities (one type per call in practice)."""
    by_type: dict[str, tuple[list[str], list[str]]] = {}
    for object_type, a_id, b_id in triples:
        a_ids, b_ids = by_type.setdefault(object_type, ([], []))
        a_ids.append(a_id)
        b_ids.append(b_id)
    for object_type, (a_ids, b_ids) in by_type.items():
        for column, ids in (("a_identity", a_ids), ("b_identity", b_ids)):
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                execute(
                    session,
                    "DELETE FROM object_links WHERE binding_id = ? AND object_type = ? "
                    f"AND {column} IN ({','.join('?' * len(chunk))})",
                    (binding_id, object_type, *chunk),
                )
