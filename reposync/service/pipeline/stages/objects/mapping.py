"""From a source object to the write a target receives, through the ObjectLinks.

Cross references are links, not numbers: a comment's issue, a reply's parent are looked
up in the Binding's links so the target's own identities are used; an object created in
the same batch is referenced by its marker instead. When the target could not keep the
source's issue numbers, ``#N`` references in bodies are rewritten to the target's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from reposync.lifecycle import Side
from reposync.models import ObjectLink
from reposync.providers.base import TargetRef, TargetWrite
from reposync.service.pipeline.execution import StageExecution
from reposync.sync.canonical import CanonicalObject, ObjectRef, content_hash
from reposync.sync.key_moves import temporary_payload
from reposync.sync.objects import rewrite_issue_references
from reposync.sync.vocabulary import Action, ObjectType, Representation

#: Where each type lives on the target, when the service itself decides it is another
#: type. Empty: a projection is the target provider's business (GitHub shows a review
#: request as a comment and reads that comment back as the review request), so a
#: reverse Run meets the same type it wrote.
TARGET_TYPES: dict[ObjectType, ObjectType] = {}


#: References a forge keeps after their object is deleted (a reply to a deleted comment).
DANGLING_REFS = frozenset({"in_reply_to"})


def target_type(object_type: ObjectType) -> ObjectType:
    return TARGET_TYPES.get(object_type, object_type)


def archived_identity(source_identity: str) -> str:
    """The link's target side for archive-only objects (nothing exists on the target)."""
    return f"archived:{source_identity}"


def marker(repository_id: str, object_type: ObjectType, identity: str) -> str:
    """What a created object carries: globally unique, so it can only be ours."""
    return f"reposync:{repository_id}:{object_type.value}:{identity}"


@dataclass(slots=True)
class MappingContext:
    """The links one batch needs: referenced objects and the issue-number map."""

    source_repository_id: str
    source_display: str = ""
    targets: dict[tuple[ObjectType, str], str] = field(default_factory=dict)
    numbers: dict[int, int] = field(default_factory=dict)
    #: Referenced objects the source no longer has (only references that may dangle).
    gone: set[tuple[ObjectType, str]] = field(default_factory=set)

    @classmethod
    def load(cls, ex: StageExecution, objects: Iterable[CanonicalObject]) -> MappingContext:
        objects = list(objects)
        wanted: dict[str, set[str]] = {}
        for obj in objects:
            for ref in obj.refs.values():
                wanted.setdefault(ref.object_type.value, set()).add(ref.identity)
        source_col, target_col = (
            (ObjectLink.a_identity, ObjectLink.b_identity)
            if ex.source_side is Side.A
            else (ObjectLink.b_identity, ObjectLink.a_identity)
        )
        source = ex.spec("source")
        context = cls(
            source_repository_id=source.repository_id or "", source_display=source.display
        )
        with ex.ctx.db.session() as session:
            for otype, identities in wanted.items():
                ordered = sorted(identities)
                for start in range(0, len(ordered), 500):
                    # One type per query and a plain IN: the unique index answers it.
                    rows = session.execute(
                        select(source_col, target_col).where(
                            ObjectLink.binding_id == ex.binding.id,
                            ObjectLink.object_type == otype,
                            source_col.in_(ordered[start : start + 500]),
                        )
                    )
                    for source_id, target_id in rows:
                        context.targets[(ObjectType(otype), source_id)] = target_id
        context.numbers = number_map(ex)
        context.gone = _gone_references(ex, objects, context.targets)
        return context

    def ref(self, ref: ObjectRef) -> TargetRef:
        return TargetRef(
            object_type=target_type(ref.object_type),
            identity=self.targets.get((ref.object_type, ref.identity)),
            marker=marker(self.source_repository_id, ref.object_type, ref.identity),
            gone=(ref.object_type, ref.identity) in self.gone,
        )


def _gone_references(
    ex: StageExecution,
    objects: Iterable[CanonicalObject],
    linked: Mapping[tuple[ObjectType, str], str],
) -> set[tuple[ObjectType, str]]:
    """Unlinked references that may dangle, whose object the source no longer has.

    A reply keeps answering a deleted comment on a forge; with no link (never synced, or
    deleted on the target earlier in this Run) its reference would wait forever for an
    object that will not come. Only these few are read back from the source.
    """
    unlinked: dict[ObjectType, set[str]] = {}
    for obj in objects:
        for name, ref in obj.refs.items():
            if name in DANGLING_REFS and (ref.object_type, ref.identity) not in linked:
                unlinked.setdefault(ref.object_type, set()).add(ref.identity)
    gone: set[tuple[ObjectType, str]] = set()
    for object_type, identities in unlinked.items():
        found = ex.source().read_batch(object_type, sorted(identities))
        gone.update((object_type, i) for i in identities if found.get(i) is None)
    return gone


def number_map(ex: StageExecution) -> dict[int, int]:
    """Source number -> target number, only where they differ (usually nothing)."""
    source_col, target_col = (
        (ObjectLink.a_number, ObjectLink.b_number)
        if ex.source_side is Side.A
        else (ObjectLink.b_number, ObjectLink.a_number)
    )
    with ex.ctx.db.session() as session:
        rows = session.execute(
            select(source_col, target_col).where(
                ObjectLink.binding_id == ex.binding.id,
                # Exactly the partial index's predicate, and nothing that would tempt the
                # planner into another index: only issues and pull requests have numbers.
                ObjectLink.a_number != ObjectLink.b_number,
            )
        )
        # Both are set: the WHERE clause's comparison is never true with a NULL.
        return {int(s): int(t) for s, t in rows if s is not None and t is not None}


def _target_payload(
    obj: CanonicalObject, numbers: Mapping[int, int]
) -> tuple[dict[str, Any], bool]:
    """The payload as the target must show it, and whether that is the source's own
    (then its hash is the source's: no payload is compared or serialized again)."""
    payload = dict(obj.payload)
    body = payload.get("body")
    if not numbers or not isinstance(body, str):
        return payload, True
    rewritten = rewrite_issue_references(body, numbers)
    if rewritten == body:
        return payload, True
    payload["body"] = rewritten
    return payload, False


def expected_target_hash(
    obj: CanonicalObject, numbers: Mapping[int, int], *, temporary: bool = False
) -> str:
    """What the target reads back once ``obj`` is written (or stepped aside, for a
    temporary key step)."""
    payload, as_is = _target_payload(obj, numbers)
    if temporary:
        return content_hash(temporary_payload(obj.object_type, payload))
    return obj.content_hash if as_is else content_hash(payload)


def representation(object_type: ObjectType) -> Representation:
    return object_type.representation


def build_write(
    item_id: int,
    action: Action,
    obj: CanonicalObject | None,
    *,
    object_type: ObjectType,
    source_identity: str,
    target_identity: str | None,
    expected_hash: str | None,
    context: MappingContext,
    content: Any = None,
    temporary: bool = False,
) -> tuple[TargetWrite, str | None]:
    """The write for one item, and the hash its read-back must show.

    ``temporary``: the object steps aside to a temporary key (see ``key_moves``).
    """
    payload: dict[str, Any] | None = None
    verify_hash = None
    if obj is not None:
        payload, as_is = _target_payload(obj, context.numbers)
        if temporary:
            payload = temporary_payload(obj.object_type, payload)
            verify_hash = content_hash(payload)
        else:
            verify_hash = obj.content_hash if as_is else content_hash(payload)
    write = TargetWrite(
        item_id=item_id,
        action=action,
        object_type=target_type(object_type),
        target_identity=target_identity,
        payload=payload,
        marker=marker(context.source_repository_id, object_type, source_identity),
        number=obj.number if obj is not None and action is Action.CREATE else None,
        refs={name: context.ref(ref) for name, ref in obj.refs.items()} if obj else {},
        expected_hash=expected_hash if action is not Action.CREATE else None,
        content=content,
        payload_hash=verify_hash,
        source_label=f"{context.source_display} {obj.object_key}" if obj is not None else None,
    )
    return write, verify_hash
