"""Small builders for the pure sync tests: refs, links, a dict target and a tiny executor.

The target model is a ``dict`` of ref name -> object id. ``plan`` feeds the planner the
way ``reposync.service.pipeline.stages.planning`` does (select, observe only what the mode allows,
decide); ``apply`` writes like the Git applier: every write is a compare-and-swap on the
item's ``expected_revision`` (absent = the ref must not exist).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reposync.sync.canonical import MAPPER_VERSION, IndexEntry, git_ref, git_ref_hash
from reposync.sync.planner import (
    AncestryOracle,
    Candidate,
    LinkKey,
    LinkState,
    Observation,
    PlanMode,
    PlannedItem,
    decide,
    select_candidates,
    target_only,
)
from reposync.sync.vocabulary import Action, ObjectType, RefConflictPolicy

GIT = ObjectType.GIT_REF


def oid(label: str) -> str:
    """A stable 40-hex object id named by a short label (``oid("c1")``)."""
    return hashlib.sha1(label.encode()).hexdigest()


def ref(name: str, revision_label: str) -> IndexEntry:
    """Index entry of a full ref name pointing at ``oid(revision_label)``."""
    return git_ref(name, oid(revision_label)).index_entry()


def branch(name: str, revision_label: str) -> IndexEntry:
    return ref("refs/heads/" + name, revision_label)


def tag(name: str, revision_label: str) -> IndexEntry:
    return ref("refs/tags/" + name, revision_label)


def link_to(
    entry: IndexEntry,
    *,
    verified_label: str | None = None,
    target_identity: str | None = None,
    mapper_version: int = MAPPER_VERSION,
    verify_failed: bool = False,
    unverified: bool = False,
) -> LinkState:
    """A link for ``entry``: verified at ``entry``'s revision unless told otherwise."""
    revision = oid(verified_label) if verified_label is not None else entry.revision
    return LinkState(
        object_type=entry.object_type,
        source_identity=entry.identity,
        target_identity=target_identity or entry.identity,
        verified_revision=None if unverified else revision,
        verified_hash=None if unverified else git_ref_hash(revision),
        mapper_version=mapper_version,
        verify_failed=verify_failed,
    )


def links_of(*links: LinkState) -> dict[LinkKey, LinkState]:
    return {(link.object_type, link.source_identity): link for link in links}


def entries(refs: Mapping[str, str]) -> list[IndexEntry]:
    """Index entries of a ``{ref name: object id}`` map, in inventory order."""
    return [git_ref(name, object_id).index_entry() for name, object_id in sorted(refs.items())]


def trusted_links(refs: Mapping[str, str]) -> dict[LinkKey, LinkState]:
    """The links a converged Run leaves: every ref verified at its revision."""
    return {
        (GIT, name): LinkState(GIT, name, name, object_id, git_ref_hash(object_id), MAPPER_VERSION)
        for name, object_id in refs.items()
    }


@dataclass
class Plan:
    items: list[PlannedItem]
    candidates: list[Candidate]
    scanned: dict[str, int]
    checkpoint_skipped: dict[str, int]
    unchanged: int = 0
    target_reads: list[str] = field(default_factory=list)


def plan(
    mode: PlanMode,
    source: Mapping[str, str],
    links: Mapping[LinkKey, LinkState],
    target: Mapping[str, str],
    *,
    policy: RefConflictPolicy = RefConflictPolicy.KEEP_TARGET,
    is_ancestor: AncestryOracle | None = None,
) -> Plan:
    """Plan like the planning stage does, against a dict target."""
    selected = select_candidates(mode, entries(source), links)
    observed: list[tuple[Candidate, Observation | None]] = []
    reads: list[str] = []
    if mode is PlanMode.EMPTY_TARGET:
        observed = [(c, None) for c in selected.candidates]
    elif mode is PlanMode.BASELINE:
        by_key = {(e.object_type, e.unique_key or e.identity): e for e in entries(target)}
        matched: set[tuple[ObjectType, str]] = set()
        for candidate in selected.candidates:
            key = (candidate.object_type, candidate.target_identity or "")
            if key in by_key:
                matched.add(key)
            observed.append((candidate, Observation(by_key.get(key))))
        for candidate in target_only(by_key.values(), matched):
            key = (candidate.object_type, candidate.target_identity or "")
            observed.append((candidate, Observation(by_key[key])))
    else:
        for candidate in selected.candidates:
            if candidate.link is None:
                observed.append((candidate, None))
                continue
            identity = candidate.link.target_identity
            reads.append(identity)
            found = target.get(identity)
            entry = git_ref(identity, found).index_entry() if found is not None else None
            observed.append((candidate, Observation(entry)))
    items: list[PlannedItem] = []
    unchanged = 0
    for candidate, observation in observed:
        item = decide(candidate, observation, policy=policy, is_ancestor=is_ancestor)
        if item is None:
            unchanged += 1
        else:
            items.append(item)
    items.sort(key=lambda item: item.sort_key)
    return Plan(
        items,
        selected.candidates,
        selected.scanned,
        selected.checkpoint_skipped,
        unchanged,
        reads,
    )


@dataclass
class Applied:
    target: dict[str, str]
    links: dict[LinkKey, LinkState]
    rejected: list[PlannedItem]


def apply(
    items: Iterable[PlannedItem],
    target: Mapping[str, str],
    links: Mapping[LinkKey, LinkState],
) -> Applied:
    """Execute items on a copy of ``target`` and settle links by read-back.

    Create/update/delete are compare-and-swap writes on ``expected_revision``, except
    when the target already holds the desired state (git reports the ref "up to date"
    without checking the lease, and read-back completes the item); noop, conflict and
    report write nothing. A link is (re)written for every item whose
    target reads back as desired, and dropped when a delete (or already-deleted) settles.
    """
    new_target = dict(target)
    new_links = dict(links)
    rejected: list[PlannedItem] = []
    for item in items:
        name = item.target_identity
        assert name is not None, item
        desired = item.source_revision if item.action is not Action.DELETE else None
        if item.action.writes and new_target.get(name) != desired:
            # Already as desired = "up to date" for git, no lease check; else a lease.
            if new_target.get(name) != item.intent.get("expected_revision"):
                rejected.append(item)
                continue
            if item.action is Action.DELETE:
                del new_target[name]
            else:
                assert item.source_revision is not None
                new_target[name] = item.source_revision
        key = (item.object_type, item.source_identity or "")
        if item.action is Action.DELETE or (
            item.action is Action.NOOP and item.source_revision is None
        ):
            if name not in new_target:
                new_links.pop(key, None)
        elif item.action in (Action.CREATE, Action.UPDATE, Action.NOOP):
            revision = new_target.get(name)
            if revision is not None and git_ref_hash(revision) == item.desired_hash:
                new_links[key] = LinkState(
                    item.object_type,
                    item.source_identity or "",
                    name,
                    revision,
                    item.desired_hash,
                    MAPPER_VERSION,
                )
    return Applied(new_target, new_links, rejected)
