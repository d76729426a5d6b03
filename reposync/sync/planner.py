"""The planner: from inventories and links to the durable intent of a Run.

Pure: it sees index entries (identity, revision, hash), links and target observations,
never a database, a provider or the network. The service feeds it in two steps so that
the target is read only where DESIGN.md allows:

1. ``select_candidates`` walks the source index against the links. In checkpoint mode an
   unchanged, verified, current-mapper link is counted ``checkpoint_skipped`` and its
   target is never read; everything else becomes a candidate.
2. The service reads the targets of the candidates that need one (a batch read), then
   ``decide`` turns each candidate plus its observation into a ``PlannedItem``.

Baselines (no links yet, target not empty) observe the complete target index instead;
empty targets observe nothing and create everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reposync.sync.canonical import (
    BRANCH_PREFIX,
    MAPPER_VERSION,
    REF_TYPES,
    IndexEntry,
    is_shadow_ref,
    ref_object_key,
)
from reposync.sync.vocabulary import Action, ObjectType, Phase, RefConflictPolicy, Representation


class PlanMode(StrEnum):
    EMPTY_TARGET = "empty_target"  # target confirmed empty: create everything, read nothing
    BASELINE = "baseline"  # no links yet, target not empty: complete diff
    CHECKPOINT = "checkpoint"  # normal Run: candidates only
    FULL_AUDIT = "full_audit"  # read back every managed link


class Reason(StrEnum):
    """Why an item exists; shown in reports so every item explains itself."""

    NEW = "new"
    CHANGED = "changed"
    MISSING_ON_TARGET = "missing_on_target"
    DRIFT = "drift"
    UNRELIABLE = "unreliable"
    MAPPER_DIRTY = "mapper_dirty"
    DELETED_ON_SOURCE = "deleted_on_source"
    ALREADY_EQUAL = "already_equal"
    ALREADY_DELETED = "already_deleted"
    FAST_FORWARD = "fast_forward"
    POLICY_USE_SOURCE = "policy_use_source"
    COLLISION = "collision"
    TARGET_ONLY = "target_only"
    AUDIT = "audit"  # a trusted link read back by a full audit
    ARCHIVE_ONLY = "archive_only"  # recorded in links and reports, never written
    TEMPORARY_KEY = "temporary_key"  # steps aside so a swapped name can be taken
    MISPLACED = "misplaced"  # under the wrong parent on the target: deleted, created again
    #: A repository setting (the default branch) differs on a target no link vouches for:
    #: it follows the authority, as nothing is lost by moving it.
    AUTHORITY_SETTING = "authority_setting"


@dataclass(frozen=True, slots=True)
class LinkState:
    """The planner's view of an ObjectLink."""

    object_type: ObjectType
    source_identity: str
    target_identity: str
    verified_revision: str | None
    verified_hash: str | None
    mapper_version: int
    verify_failed: bool = False

    @property
    def trusted(self) -> bool:
        """Unchanged source + trusted link = nothing to read, nothing to do."""
        return (
            not self.verify_failed
            and self.mapper_version == MAPPER_VERSION
            and self.verified_hash is not None
        )


@dataclass(frozen=True, slots=True)
class Observation:
    """The target object a candidate maps to, as read; ``entry is None`` means absent."""

    entry: IndexEntry | None
    #: It hangs under another parent than the source object's (a comment on the wrong
    #: issue): its content may be equal, it is still not the object the source has.
    misplaced: bool = False


@dataclass(frozen=True, slots=True)
class Candidate:
    object_type: ObjectType
    source: IndexEntry | None
    link: LinkState | None
    reason: Reason
    #: The target identity to read (the link's, or the unique key on a baseline).
    target_identity: str | None

    @property
    def needs_target_read(self) -> bool:
        return self.target_identity is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class ItemPlan:
    """What a Run means to do to one object: the part of a RunItem the planner decides.

    The one declaration of these fields: ``PlannedItem`` is a plan before it is stored,
    the applying stage's ``ApplyItem`` (``service/pipeline/stages/applier_contract``) is
    a stored one read back from its row.
    """

    object_type: ObjectType
    object_key: str
    action: Action
    reason: Reason
    source_identity: str | None
    target_identity: str | None
    source_revision: str | None
    desired_hash: str | None
    expected_target_hash: str | None
    #: Everything the apply step needs besides the source payload (for git refs: the ids).
    intent: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedItem(ItemPlan):
    """An item as the planner makes it, with what only planning and batching use."""

    phase: Phase
    size: int = 0
    #: Creation order within the type (numbers, timestamps); ties fall back to the key.
    order_key: str = ""
    #: The unique key an update gives the target object, and the one it holds now (not
    #: persisted: only ``key_moves`` orders renames by them).
    wanted_key: str | None = field(default=None, compare=False)
    held_key: str | None = field(default=None, compare=False)

    @property
    def sort_key(self) -> tuple[int, int, str, str, str]:
        return (
            _PHASE_ORDER[self.phase],
            ACTION_ORDER[self.action],
            _TYPE_ORDER[self.object_type],
            self.order_key,
            self.object_key,
        )


#: Within a phase, every delete runs first, across types: it frees names and numbers an
#: update or a create may need (Git cannot hold ``refs/heads/a`` and ``refs/heads/a/b``
#: at once; a deleted pull request's number may go to a new issue).
ACTION_ORDER = {
    Action.DELETE: 0,
    Action.UPDATE: 1,
    Action.CREATE: 2,
    Action.NOOP: 3,
    Action.CONFLICT: 4,
    Action.REPORT: 5,
}
#: ``int(phase)`` and ``str(object_type)`` looked up, not computed, per item sorted.
_PHASE_ORDER = {phase: int(phase) for phase in Phase}
_TYPE_ORDER = {object_type: str(object_type) for object_type in ObjectType}


@dataclass(slots=True)
class CandidateSet:
    candidates: list[Candidate]
    #: Per object type: source objects walked, and unchanged linked ones not looked at.
    scanned: dict[str, int] = field(default_factory=dict)
    checkpoint_skipped: dict[str, int] = field(default_factory=dict)


#: ``is_ancestor(target_revision, source_revision)``: Git's proof that moving the target
#: to the source is a fast-forward. Injected so the planner stays pure.
AncestryOracle = Callable[[str, str], bool]

LinkKey = tuple[ObjectType, str]


def select_candidates(
    mode: PlanMode,
    source: Iterable[IndexEntry],
    links: Mapping[LinkKey, LinkState],
) -> CandidateSet:
    """Walk the source index against the links; decide what must be looked at."""
    result = CandidateSet(candidates=[])
    seen: set[LinkKey] = set()
    for entry in source:
        type_name = entry.object_type.value
        result.scanned[type_name] = result.scanned.get(type_name, 0) + 1
        key = (entry.object_type, entry.identity)
        link = links.get(key)
        if link is None:
            baseline = mode is PlanMode.BASELINE and not _archive_only(entry.object_type)
            # A new ref is looked for by its name on the target in every mode but an
            # empty target's: a ref someone made there meanwhile then meets the conflict
            # policy, as on a baseline, instead of a create that git can only refuse.
            # One ref listing answers for all of them.
            new_ref = entry.object_type in REF_TYPES and mode is not PlanMode.EMPTY_TARGET
            target_identity = entry.unique_key if baseline or new_ref else None
            result.candidates.append(
                Candidate(entry.object_type, entry, None, Reason.NEW, target_identity)
            )
            continue
        seen.add(key)
        reason = _link_reason(entry, link)
        archived = _archive_only(entry.object_type)
        if reason is None and (mode is PlanMode.CHECKPOINT or archived):
            result.checkpoint_skipped[type_name] = result.checkpoint_skipped.get(type_name, 0) + 1
            continue
        target_identity = None if archived else link.target_identity
        result.candidates.append(
            Candidate(entry.object_type, entry, link, reason or Reason.AUDIT, target_identity)
        )
    for key, link in links.items():
        if key not in seen:
            target_identity = None if _archive_only(key[0]) else link.target_identity
            result.candidates.append(
                Candidate(key[0], None, link, Reason.DELETED_ON_SOURCE, target_identity)
            )
    return result


def _archive_only(object_type: ObjectType) -> bool:
    return object_type.representation is Representation.ARCHIVE_ONLY


@dataclass(slots=True)
class CheckpointSplit:
    """A source index split against the links without keeping what needs no look.

    ``changed`` holds only entries that are candidates; ``gone`` the links whose source
    object disappeared, in inventory order (type, then identity as text) like
    ``changed``, whatever order the links came in. A no-change checkpoint therefore
    keeps nothing at all.
    """

    changed: list[IndexEntry] = field(default_factory=list)
    gone: list[LinkKey] = field(default_factory=list)
    scanned: dict[str, int] = field(default_factory=dict)
    checkpoint_skipped: dict[str, int] = field(default_factory=dict)


def split_checkpoint(
    source: Iterable[IndexEntry], links: Mapping[LinkKey, LinkState]
) -> CheckpointSplit:
    """The checkpoint rule of ``select_candidates``, streaming and keeping only candidates."""
    split = CheckpointSplit()
    seen: set[LinkKey] = set()
    for entry in source:
        type_name = entry.object_type.value
        split.scanned[type_name] = split.scanned.get(type_name, 0) + 1
        key = (entry.object_type, entry.identity)
        link = links.get(key)
        if link is not None:
            seen.add(key)
            if _link_reason(entry, link) is None:
                skipped = split.checkpoint_skipped
                skipped[type_name] = skipped.get(type_name, 0) + 1
                continue
        split.changed.append(entry)
    split.gone = sorted(
        (key for key in links if key not in seen), key=lambda key: (key[0].value, key[1])
    )
    return split


def _link_reason(entry: IndexEntry, link: LinkState) -> Reason | None:
    if link.verify_failed:
        return Reason.UNRELIABLE
    if link.mapper_version != MAPPER_VERSION:
        return Reason.MAPPER_DIRTY
    if link.verified_hash != entry.content_hash:
        return Reason.CHANGED
    return None


def target_only(
    target: Iterable[IndexEntry], matched_unique_keys: set[tuple[ObjectType, str]]
) -> Iterator[Candidate]:
    """Baseline: target objects no source object maps to are preserved and reported."""
    for entry in target:
        if (entry.object_type, entry.unique_key or entry.identity) not in matched_unique_keys:
            yield Candidate(entry.object_type, None, None, Reason.TARGET_ONLY, entry.identity)


def decide(
    candidate: Candidate,
    observed: Observation | None,
    *,
    policy: RefConflictPolicy = RefConflictPolicy.KEEP_TARGET,
    is_ancestor: AncestryOracle | None = None,
) -> PlannedItem | None:
    """Turn one candidate and what was observed on the target into an item.

    ``observed is None`` means the target was not read (empty target, or a new object in
    checkpoint mode): the write itself carries the expectation "absent", so a collision
    is still detected on the target and never overwritten.
    Returns ``None`` when a full audit finds a trusted link whose target is equal: the
    object is counted unchanged and needs no item.
    """
    source, link = candidate.source, candidate.link
    target = observed.entry if observed is not None else None

    if observed is not None and observed.misplaced and source is not None and target is not None:
        # A child cannot move to another parent: delete it here (``relocation`` creates
        # it again where it belongs).
        return _item(candidate, target, Action.DELETE, Reason.MISPLACED, target)

    if _archive_only(candidate.object_type) and (source is not None or link is not None):
        # Kept in the link (and counted), never written: nothing to read or compare.
        if source is None:
            return _item(candidate, None, Action.NOOP, Reason.ALREADY_DELETED, None)
        return _item(candidate, None, Action.NOOP, Reason.ARCHIVE_ONLY, None)

    if source is None and link is None:
        assert target is not None, "a target-only candidate carries its target"
        return _item(candidate, target, Action.REPORT, Reason.TARGET_ONLY, None)

    if source is None:
        assert link is not None
        if target is None or candidate.object_type in SETTINGS:
            # A setting is never deleted: a source whose HEAD names no branch any more
            # leaves the target's as it is, and the link is forgotten.
            return _item(candidate, None, Action.NOOP, Reason.ALREADY_DELETED, None)
        return _item(candidate, target, Action.DELETE, Reason.DELETED_ON_SOURCE, target)

    if target is None:
        read_and_missing = link is not None and observed is not None
        reason = Reason.MISSING_ON_TARGET if read_and_missing else candidate.reason
        return _item(candidate, None, Action.CREATE, reason, None)

    if target.content_hash == source.content_hash:
        if candidate.reason is Reason.AUDIT:
            return None  # a full audit confirmed a trusted link: counted unchanged
        return _item(candidate, target, Action.NOOP, Reason.ALREADY_EQUAL, target)

    if link is not None:
        reason = Reason.DRIFT if candidate.reason is Reason.AUDIT else candidate.reason
        return _item(candidate, target, Action.UPDATE, reason, target)

    # A same-keyed object exists on the target and no link says it is ours: a collision.
    if candidate.object_type in SETTINGS:
        return _item(candidate, target, Action.UPDATE, Reason.AUTHORITY_SETTING, target)
    if candidate.object_type in REF_TYPES:
        if (
            source.identity.startswith(BRANCH_PREFIX)
            and is_ancestor is not None
            and is_ancestor(target.revision, source.revision)
        ):
            return _item(candidate, target, Action.UPDATE, Reason.FAST_FORWARD, target)
        if policy is RefConflictPolicy.USE_SOURCE:
            return _item(candidate, target, Action.UPDATE, Reason.POLICY_USE_SOURCE, target)
    return _item(candidate, target, Action.CONFLICT, Reason.COLLISION, target)


def relocation(candidate: Candidate) -> PlannedItem:
    """The create that puts a misplaced object back under its parent (after its delete)."""
    return _item(candidate, None, Action.CREATE, Reason.MISPLACED, None)


def _item(
    candidate: Candidate,
    target: IndexEntry | None,
    action: Action,
    reason: Reason,
    expected: IndexEntry | None,
) -> PlannedItem:
    source, link = candidate.source, candidate.link
    object_key = (
        source.object_key
        if source is not None
        else target.object_key
        if target is not None
        else _key_from_link(link)
    )
    target_identity = (
        link.target_identity
        if link is not None
        else target.identity
        if target is not None
        else source.unique_key
        if source is not None and candidate.object_type in NAMED_BY_KEY
        else None
    )
    intent: dict[str, Any] = {"reason": str(reason)}
    if expected is not None:
        intent["expected_revision"] = expected.revision
    if source is not None and action in (Action.CREATE, Action.UPDATE):
        intent["source_revision"] = source.revision
    if target is not None and action in (Action.CONFLICT, Action.REPORT):
        intent["target_revision"] = target.revision
    return PlannedItem(
        phase=_phase(candidate.object_type, action, target_identity),
        object_type=candidate.object_type,
        object_key=object_key,
        action=action,
        reason=reason,
        source_identity=source.identity
        if source is not None
        else (link.source_identity if link is not None else None),
        target_identity=target_identity,
        source_revision=source.revision if source is not None else None,
        desired_hash=source.content_hash if source is not None else None,
        expected_target_hash=expected.content_hash if expected is not None else None,
        intent=intent,
        size=source.size if source is not None else 0,
        order_key=(
            source.order_key
            if source is not None
            else target.order_key
            if target is not None
            else ""
        ),
        wanted_key=source.unique_key if source is not None and action is Action.UPDATE else None,
        held_key=target.unique_key if target is not None else None,
    )


#: One-per-repository settings: always present on a forge, so a difference is written
#: over (never a conflict) and a source without one deletes nothing.
SETTINGS = frozenset({ObjectType.DEFAULT_BRANCH})
#: Types whose target identity is their unique key on every forge (no create marker).
NAMED_BY_KEY = frozenset({*REF_TYPES, ObjectType.DEFAULT_BRANCH})


def _phase(object_type: ObjectType, action: Action, target_identity: str | None) -> Phase:
    """A shadow branch goes after its pull request has closed, as on a forge: until then
    the open pull request still needs it (and a forge still shows it)."""
    if (
        object_type is ObjectType.GIT_REF
        and action is Action.DELETE
        and is_shadow_ref(target_identity or "")
    ):
        return Phase.ARCHIVE
    return object_type.phase


def _key_from_link(link: LinkState | None) -> str:
    assert link is not None
    if link.object_type is ObjectType.GIT_REF:
        return ref_object_key(link.source_identity)
    if link.object_type is ObjectType.WIKI_REF:
        return "wiki " + ref_object_key(link.source_identity)
    return f"{link.object_type} {link.source_identity}"
