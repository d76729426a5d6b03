"""ObjectLinks written from read-back-verified item outcomes, in bulk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert, tuple_, update
from sqlalchemy.orm import Session

from reposync.models import ObjectLink, utcnow
from reposync.sync.canonical import MAPPER_VERSION
from reposync.sync.vocabulary import Representation, Side


def _side_identities(source_side: Side, source_id: str, target_id: str) -> tuple[str, str]:
    return (source_id, target_id) if source_side is Side.A else (target_id, source_id)


def write_links(
    session: Session,
    *,
    binding_id: int,
    source_side: Side,
    run_id: int,
    verified: Sequence[tuple[str, str, str, str | None, str | None, str]],
) -> None:
    """Replace the links of verified pairs.

    ``verified`` rows are (object type, source identity, target identity, source
    revision, target revision, verified hash). Any older link that claims either
    identity is removed first, so both unique keys hold without dialect-specific upserts.
    """
    if not verified:
        return
    rows: list[dict[str, Any]] = []
    for object_type, source_id, target_id, source_rev, target_rev, digest in verified:
        a_id, b_id = _side_identities(source_side, source_id, target_id)
        a_rev, b_rev = (
            (source_rev, target_rev) if source_side is Side.A else (target_rev, source_rev)
        )
        rows.append(
            {
                "binding_id": binding_id,
                "object_type": object_type,
                "a_identity": a_id,
                "b_identity": b_id,
                "a_revision": a_rev,
                "b_revision": b_rev,
                "verified_hash": digest,
                "verify_failed": False,
                "mapper_version": MAPPER_VERSION,
                "representation": Representation.NATIVE.value,
                "verified_run_id": run_id,
                "verified_at": utcnow(),
            }
        )
    _delete_claiming(
        session, binding_id, [(r["object_type"], r["a_identity"], r["b_identity"]) for r in rows]
    )
    session.execute(insert(ObjectLink), rows)


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
    for start in range(0, len(triples), 500):
        chunk = triples[start : start + 500]
        for column, index in ((ObjectLink.a_identity, 1), (ObjectLink.b_identity, 2)):
            session.execute(
                delete(ObjectLink).where(
                    ObjectLink.binding_id == binding_id,
                    tuple_(ObjectLink.object_type, column).in_([(t[0], t[index]) for t in chunk]),
                )
            )
