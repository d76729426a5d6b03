"""The planner's view of a Binding's ObjectLinks, loaded whole or for chosen objects."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from reposync.lifecycle import Side
from reposync.models import ObjectLink
from reposync.service.pipeline.execution import StageExecution
from reposync.sync.planner import LinkKey, LinkState
from reposync.sync.vocabulary import ObjectType

CHUNK = 5000
_COLUMNS = (
    ObjectLink.object_type,
    ObjectLink.a_identity,
    ObjectLink.b_identity,
    ObjectLink.a_revision,
    ObjectLink.b_revision,
    ObjectLink.verified_hash,
    ObjectLink.mapper_version,
    ObjectLink.verify_failed,
)


_TYPES = {t.value: t for t in ObjectType}  # enum lookup by value, without the call
_ALL_LINKS = (
    "SELECT object_type, a_identity, b_identity, a_revision, b_revision, verified_hash, "
    "mapper_version, verify_failed FROM object_links WHERE binding_id = ?"
)


def load_links(
    ex: StageExecution, keys: Iterable[LinkKey] | None = None
) -> dict[LinkKey, LinkState]:
    """Links keyed by (type, identity on this Run's source side); all, or only ``keys``."""
    source_is_a = ex.source_side is Side.A
    source_column = ObjectLink.a_identity if source_is_a else ObjectLink.b_identity
    links: dict[LinkKey, LinkState] = {}

    def add(rows: Iterable[tuple]) -> None:  # type: ignore[type-arg]
        for otype, a_id, b_id, a_rev, b_rev, vhash, mapper, failed in rows:
            object_type = _TYPES[otype]
            source_id, target_id = (a_id, b_id) if source_is_a else (b_id, a_id)
            links[(object_type, source_id)] = LinkState(
                object_type,
                source_id,
                target_id,
                a_rev if source_is_a else b_rev,
                vhash,
                mapper,
                failed,
            )

    with ex.ctx.db.session() as session:
        if keys is None:
            add(
                session.execute(
                    select(*_COLUMNS)
                    .where(ObjectLink.binding_id == ex.binding.id)
                    .execution_options(yield_per=CHUNK)
                )
            )
            return links
        by_type: dict[ObjectType, list[str]] = {}
        for object_type, identity in keys:
            by_type.setdefault(object_type, []).append(identity)
        for object_type, identities in by_type.items():
            for start in range(0, len(identities), 500):
                add(
                    session.execute(  # one type and a plain IN: the unique index answers
                        select(*_COLUMNS).where(
                            ObjectLink.binding_id == ex.binding.id,
                            ObjectLink.object_type == object_type.value,
                            source_column.in_(identities[start : start + 500]),
                        )
                    )
                )
    return links


def has_links(ex: StageExecution) -> bool:
    with ex.ctx.db.session() as session:
        return (
            session.execute(
                select(ObjectLink.id).where(ObjectLink.binding_id == ex.binding.id).limit(1)
            ).first()
            is not None
        )
