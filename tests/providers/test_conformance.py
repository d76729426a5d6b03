"""The provider conformance suite: one set of tests, run against every provider.

Each test takes the ``harness`` fixture (parametrized over ``conformance.HARNESSES``) and
talks to the provider through the contract of ``reposync.providers.base`` only. What a
provider declares it cannot do (``harness.limits``) is checked both ways. GitHub runs
against the test server; every request and response is validated against GitHub's API
description, and each test ends with ``harness.assert_clean()``.
"""

from __future__ import annotations

import ast
import inspect
import io
import itertools
import os
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import reposync
from reposync.errors import LfsObjectCorrupt, RateLimited, ResultUnknown, RunCancelled
from reposync.guards import guarded
from reposync.providers import base
from reposync.providers.base import (
    CAPABILITIES,
    DECLARED_ATTRIBUTES,
    EmptyChecker,
    EndpointSpec,
    GitRemoteSource,
    LfsOperation,
    LfsStore,
    ObjectWriter,
    Provider,
    TargetRef,
    TargetWrite,
    VisibilityReporter,
    WriteStatus,
    read_index,
)
from reposync.providers.registry import provider_class
from reposync.sync import objects
from reposync.sync.canonical import ObjectRef, content_hash
from reposync.sync.lfs import LfsPointer
from reposync.sync.vocabulary import Action, ObjectType, Representation
from tests.lfsrepo import pointer_of
from tests.providers.conformance import HARNESSES, Harness, make_harness

T = ObjectType
WHEN = "2024-05-01T12:00:00Z"
LATER = "2024-06-01T08:30:00Z"
AUTHOR = "origin-author"
MISSING = "987654321"
HEAD_SHA = "a" * 40
BASE_SHA = "b" * 40
#: The types this suite writes on every provider, in dependency order.
CORE_TYPES = (T.LABEL, T.MILESTONE, T.ISSUE, T.ISSUE_COMMENT, T.RELEASE)


@pytest.fixture(params=HARNESSES)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    fake = request.getfixturevalue("github_fake") if request.param == "github" else None
    forgejo = request.getfixturevalue("forgejo_fake") if request.param == "forgejo" else None
    h = make_harness(request.param, tmp_path, fake, forgejo_fake=forgejo)
    yield h
    h.close()


# -- canonical payloads (built by the shared builders, so they are canonical) -------------


def label_payload(name: str = "bug", **fields: Any) -> dict[str, Any]:
    fields = {"color": "d73a4a", "description": "Something is broken", **fields}
    return dict(objects.label("x", "1", name=name, **fields).payload)


def milestone_payload(title: str = "v1.0", **fields: Any) -> dict[str, Any]:
    fields = {"description": "The first one", **fields}
    return dict(objects.milestone("x", "1", title=title, **fields).payload)


def issue_payload(number: int, title: str = "Crash on start", **fields: Any) -> dict[str, Any]:
    fields = {"body": "It crashes.", "author": AUTHOR, "created_at": WHEN, **fields}
    return dict(objects.issue("x", "1", number=number, title=title, **fields).payload)


def comment_payload(body: str = "Confirmed.", **fields: Any) -> dict[str, Any]:
    fields = {"author": AUTHOR, "created_at": WHEN, **fields}
    parent = ObjectRef(T.ISSUE, "x")
    return dict(
        objects.issue_comment("x", "1", parent=parent, parent_key="#1", body=body, **fields).payload
    )


def release_payload(tag: str = "v1.0", **fields: Any) -> dict[str, Any]:
    fields = {
        "name": "First release",
        "body": "Release notes.",
        "author": AUTHOR,
        "created_at": WHEN,
        "published_at": WHEN,
        **fields,
    }
    return dict(objects.release("x", "1", tag=tag, **fields).payload)


def merged_pull_payload(number: int, title: str = "Add a feature") -> dict[str, Any]:
    return dict(
        objects.pull_request(
            "x",
            "1",
            number=number,
            title=title,
            body="Adds it.",
            state="closed",
            merged=True,
            merged_at=LATER,
            base_ref="main",
            base_sha=BASE_SHA,
            head_ref="feature",
            head_sha=HEAD_SHA,
            author=AUTHOR,
            created_at=WHEN,
            closed_at=LATER,
        ).payload
    )


def review_payload(body: str = "Looks good.") -> dict[str, Any]:
    parent = ObjectRef(T.PULL_REQUEST, "x")
    return dict(
        objects.review(
            "x",
            "1",
            parent=parent,
            parent_key="#1",
            state="COMMENTED",
            body=body,
            commit_id=HEAD_SHA,
            author=AUTHOR,
            submitted_at=WHEN,
        ).payload
    )


# A first and a changed payload of each core type (the second differs in content).


def first_payload(object_type: ObjectType) -> dict[str, Any]:
    return {
        T.LABEL: lambda: label_payload("bug"),
        # Due at a time GitHub does not keep (it keeps the day): read back exactly all the same.
        T.MILESTONE: lambda: milestone_payload("v1.0", due_on="2024-09-01T13:45:09Z"),
        T.ISSUE: lambda: issue_payload(1),
        T.ISSUE_COMMENT: lambda: comment_payload("Confirmed."),
        T.RELEASE: lambda: release_payload("v1.0"),
    }[object_type]()


def changed_payload(object_type: ObjectType) -> dict[str, Any]:
    return {
        T.LABEL: lambda: label_payload("defect", color="00ff00", description="Renamed"),
        T.MILESTONE: lambda: milestone_payload(
            "v1.0 final", state="closed", due_on="2024-10-01T00:00:00Z"
        ),
        T.ISSUE: lambda: issue_payload(
            1,
            "Crash on start (fixed)",
            body="It crashed; fixed now.",
            state="closed",
            state_reason="completed",
            closed_at=LATER,
            assignees=["maintainer"],
            locked=True,
            active_lock_reason="resolved",
        ),
        T.ISSUE_COMMENT: lambda: comment_payload("Confirmed, and edited."),
        T.RELEASE: lambda: release_payload("v1.0", name="First release (edited)", prerelease=True),
    }[object_type]()


# -- writes -------------------------------------------------------------------------------

_item_ids = itertools.count(1)


def marker(object_type: ObjectType, key: object) -> str:
    """What the engine stores with a created object (``stages.objects.mapping.marker``'s shape)."""
    return f"reposync:conformance-source:{object_type.value}:{key}"


def create(
    object_type: ObjectType,
    payload: Mapping[str, Any],
    key: object,
    *,
    number: int | None = None,
    parent: TargetRef | None = None,
) -> TargetWrite:
    return TargetWrite(
        next(_item_ids),
        Action.CREATE,
        object_type,
        None,
        dict(payload),
        marker(object_type, key),
        number=number,
        refs={"parent": parent} if parent is not None else {},
        payload_hash=content_hash(payload),
    )


def update(
    object_type: ObjectType,
    identity: str,
    payload: Mapping[str, Any],
    key: object,
    *,
    expected_hash: str | None = None,
    parent: TargetRef | None = None,
) -> TargetWrite:
    return TargetWrite(
        next(_item_ids),
        Action.UPDATE,
        object_type,
        identity,
        dict(payload),
        marker(object_type, key),
        refs={"parent": parent} if parent is not None else {},
        expected_hash=expected_hash,
        payload_hash=content_hash(payload),
    )


def delete(
    object_type: ObjectType, identity: str, key: object, *, expected_hash: str | None = None
) -> TargetWrite:
    return TargetWrite(
        next(_item_ids),
        Action.DELETE,
        object_type,
        identity,
        None,
        marker(object_type, key),
        expected_hash=expected_hash,
    )


def writer(provider: Provider) -> ObjectWriter:
    assert isinstance(provider, ObjectWriter)
    return provider


def read_hash(provider: Provider, object_type: ObjectType, identity: str) -> str | None:
    obj = provider.read(object_type, identity)
    return None if obj is None else obj.content_hash


def assert_reads_back(
    provider: Provider, object_type: ObjectType, identity: str, payload: Mapping[str, Any]
) -> None:
    """The object reads back with exactly this payload, so with its content hash."""
    obj = provider.read(object_type, identity)
    assert obj is not None, f"{object_type} {identity} does not read back"
    assert (obj.object_type, obj.identity) == (object_type, identity)
    assert dict(obj.payload) == dict(payload), f"{object_type} {identity} reads back otherwise"
    assert obj.content_hash == content_hash(payload)


@dataclass
class Forge:
    """A target seeded with every core type through the provider's apply_batch."""

    spec: EndpointSpec
    provider: Provider
    #: (type, identity) -> the payload written, and the marker it was created with.
    written: dict[tuple[ObjectType, str], dict[str, Any]] = field(default_factory=dict)
    markers: dict[tuple[ObjectType, str], str] = field(default_factory=dict)

    def identities(self, object_type: ObjectType) -> list[str]:
        return sorted(i for t, i in self.written if t is object_type)


def seed_parent_issue(h: Harness, provider: Provider, number: int = 1) -> TargetRef:
    [identity] = h.seed(provider, [create(T.ISSUE, issue_payload(number), number, number=number)])
    return TargetRef(T.ISSUE, identity, marker(T.ISSUE, number))


def seed_forge(h: Harness) -> Forge:
    spec = h.make_repository(empty=False)
    forge = Forge(spec, h.open_target(spec))

    def put(writes: list[TargetWrite]) -> list[str]:
        identities = h.seed(forge.provider, writes)
        for write, identity in zip(writes, identities, strict=True):
            assert write.payload is not None
            forge.written[(write.object_type, identity)] = dict(write.payload)
            forge.markers[(write.object_type, identity)] = write.marker
        return identities

    put(
        [
            create(T.LABEL, label_payload("bug"), "bug"),
            create(T.LABEL, label_payload("docs", color="0075ca", description=""), "docs"),
        ]
    )
    put(
        [
            create(T.MILESTONE, milestone_payload("v1.0"), "v1.0"),
            create(
                T.MILESTONE,
                milestone_payload("v0.9", state="closed", due_on="2024-03-01T00:00:00Z"),
                "v0.9",
            ),
        ]
    )
    issues = put(
        [
            create(
                T.ISSUE,
                issue_payload(1, labels=["bug", "docs"], milestone="v1.0", assignees=["alice"]),
                1,
                number=1,
            ),
            create(
                T.ISSUE,
                issue_payload(
                    2,
                    "Typo in the README",
                    state="closed",
                    state_reason="not_planned",
                    closed_at=LATER,
                ),
                2,
                number=2,
            ),
        ]
    )
    parents = [TargetRef(T.ISSUE, i, marker(T.ISSUE, n)) for n, i in enumerate(issues, 1)]
    put(
        [
            create(T.ISSUE_COMMENT, comment_payload("First!"), "c1", parent=parents[0]),
            create(
                T.ISSUE_COMMENT,
                comment_payload("Second.", author="someone", created_at=LATER),
                "c2",
                parent=parents[0],
            ),
            create(T.ISSUE_COMMENT, comment_payload("On the other."), "c3", parent=parents[1]),
        ]
    )
    put(
        [
            create(T.RELEASE, release_payload("v1.0"), "v1.0"),
            create(T.RELEASE, release_payload("v1.1-rc1", prerelease=True, name=""), "v1.1-rc1"),
        ]
    )
    return forge


# -- capabilities and emptiness -----------------------------------------------------------


def test_a_target_offers_the_capabilities_the_engine_needs(harness):
    """ObjectWriter, EmptyChecker, VisibilityReporter and GitRemoteSource are discoverable."""
    provider = harness.target(empty=True)
    assert isinstance(provider, ObjectWriter)
    assert isinstance(provider, EmptyChecker)
    assert isinstance(provider, VisibilityReporter)
    assert isinstance(provider, GitRemoteSource)
    assert provider.endpoint().repository_id
    harness.assert_clean()


def _parameters(function: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


def test_a_provider_declares_exactly_the_capabilities_it_implements(harness):
    """The provider class names as base classes exactly the capabilities its harness lists,
    implements each with the contract's parameters, and has no method of any other (an
    undeclared capability would be discovered by isinstance, unchecked by the contract)."""
    provider = harness.target(empty=True)
    cls = type(provider)
    declared = {c for c in CAPABILITIES if c in cls.__mro__}
    assert declared == harness.limits.capabilities
    for capability in CAPABILITIES:
        methods = sorted(capability.__abstractmethods__)
        assert methods, f"{capability.__name__} declares no method"
        if capability in declared:
            assert isinstance(provider, capability)
            for method in methods:
                assert _parameters(getattr(cls, method)) == _parameters(
                    getattr(capability, method)
                ), f"{cls.__name__}.{method} differs from {capability.__name__}.{method}"
        else:
            found = [m for m in methods if hasattr(cls, m)]
            assert not found, f"{cls.__name__} has {found} but does not declare {capability}"
            assert not isinstance(provider, capability)
    harness.assert_clean()


def test_a_provider_states_every_attribute_the_engine_reads(harness):
    """Each of ``DECLARED_ATTRIBUTES`` is stated by the provider class itself (the contract
    gives no default), and reads the same through the registry, as planning reads it."""
    cls = type(harness.target(empty=True))
    assert provider_class(harness.name) is cls
    for attribute in DECLARED_ATTRIBUTES:
        assert attribute in vars(cls), f"{cls.__name__} does not state {attribute}"
    for limit in (cls.max_ref_updates_per_push, cls.max_push_pack_bytes):
        assert limit is None or (isinstance(limit, int) and limit > 0)
    harness.assert_clean()


def _capability_probes(tree: ast.AST) -> Iterator[tuple[str, str]]:
    """(kind, name) of each isinstance (or, for an owner's capabilities, issubclass)
    check against a contract class, and of each getattr/hasattr on something named like
    a provider (``provider``, ``source``, ``target``, ``ex.target()``, ...)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            for name in ast.walk(node.args[1]):
                if isinstance(name, ast.Name) and isinstance(getattr(base, name.id, None), type):
                    yield "isinstance", name.id
        elif node.func.id in ("getattr", "hasattr") and node.args:
            subject = ast.unparse(node.args[0])
            if any(word in subject for word in ("provider", "source", "target")):
                yield node.func.id, subject


def test_the_engine_discovers_only_capabilities_the_contract_declares():
    """Outside ``reposync/providers``, providers are checked with isinstance against
    ``CAPABILITIES`` only, never with getattr/hasattr; every runtime-checkable protocol of
    the contract is in ``CAPABILITIES``, and each is documented, method by method."""
    root = Path(reposync.__file__).parent
    probes: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if (root / "providers") in path.parents:
            continue
        for probe in _capability_probes(ast.parse(path.read_text(), str(path))):
            probes.setdefault(probe, []).append(str(path.relative_to(root)))
    names = {c.__name__ for c in CAPABILITIES}
    probed = {name for kind, name in probes if kind == "isinstance"}
    assert names & probed, "the scan found no capability check at all"
    protocols = {n for n in probed if getattr(getattr(base, n), "_is_protocol", False)}
    assert protocols <= names, {n: probes["isinstance", n] for n in protocols - names}
    unchecked = {probe: where for probe, where in probes.items() if probe[0] != "isinstance"}
    assert not unchecked, "check providers with isinstance against CAPABILITIES instead"
    runtime_protocols = {
        value
        for value in vars(base).values()
        if isinstance(value, type) and getattr(value, "_is_runtime_protocol", False)
    }
    assert runtime_protocols == set(CAPABILITIES)
    for capability in CAPABILITIES:
        assert inspect.getdoc(capability), capability.__name__
        for method in capability.__abstractmethods__:
            assert getattr(capability, method).__doc__, f"{capability.__name__}.{method}"


def test_a_fresh_repository_is_empty_until_one_write(harness):
    """A new repository is_empty(); after a single label write it no longer is."""
    provider = harness.target(empty=True)
    assert isinstance(provider, EmptyChecker)
    assert provider.is_empty()
    assert list(provider.inventory_index(list(CORE_TYPES)).entries) == []
    harness.seed(provider, [create(T.LABEL, label_payload(), "bug")])
    assert not provider.is_empty()
    harness.assert_clean()


def test_a_repository_with_git_history_is_not_empty(harness):
    """Git data alone (one commit, no forge objects) makes a repository non-empty."""
    provider = harness.target(empty=False)
    assert isinstance(provider, EmptyChecker)
    assert not provider.is_empty()
    harness.assert_clean()


def test_visibility_is_reported_as_the_repository_has_it(harness):
    """visibility() is public/internal/private and matches each declared visibility."""
    for visibility in harness.limits.visibilities:
        provider = harness.target(empty=True, visibility=visibility)
        assert isinstance(provider, VisibilityReporter)
        assert provider.visibility() in ("public", "internal", "private")
        assert provider.visibility() == visibility
    harness.assert_clean()


# -- inventory and reads ------------------------------------------------------------------


def test_inventory_index_agrees_with_read_batch(harness):
    """Every listed entry equals its object's index_entry() (hash, keys) and what was written."""
    forge = seed_forge(harness)
    entries = list(forge.provider.inventory_index(list(CORE_TYPES)).entries)
    keys = [(str(e.object_type), e.identity) for e in entries]
    assert keys == sorted(keys), "the listing is not sorted by (type, identity)"
    assert len(set(keys)) == len(keys), "the listing repeats an object"
    for object_type in CORE_TYPES:
        listed = {e.identity: e for e in entries if e.object_type is object_type}
        assert sorted(listed) == forge.identities(object_type), object_type
        read = forge.provider.read_batch(object_type, list(listed))
        for identity, entry in listed.items():
            obj = read[identity]
            assert obj is not None, (object_type, identity)
            expected = obj.index_entry()
            assert (entry.object_type, entry.identity) == (object_type, identity)
            assert (entry.content_hash, entry.unique_key, entry.object_key) == (
                expected.content_hash,
                expected.unique_key,
                expected.object_key,
            ), (object_type, identity)
            assert entry.content_hash == content_hash(forge.written[(object_type, identity)])
    harness.assert_clean()


def test_read_batch_and_read_index_agree_and_missing_is_none(harness):
    """read_batch gives None for missing identities; read_index gives the same entries."""
    forge = seed_forge(harness)
    for object_type in CORE_TYPES:
        identities = [*forge.identities(object_type), MISSING]
        objs = forge.provider.read_batch(object_type, identities)
        assert set(objs) == set(identities)
        assert objs[MISSING] is None
        for identity in forge.identities(object_type):
            obj = objs[identity]
            assert obj is not None
            assert (obj.object_type, obj.identity) == (object_type, identity)
            assert obj.content_hash == content_hash(forge.written[(object_type, identity)])
            assert dict(obj.payload) == forge.written[(object_type, identity)]
        index = read_index(forge.provider, object_type, identities)
        assert index == {
            identity: None if obj is None else obj.index_entry() for identity, obj in objs.items()
        }, object_type
    harness.assert_clean()


def test_read_of_a_missing_object_is_none(harness):
    """read() of an identity that never existed is None, not an error."""
    provider = harness.target(empty=False)
    for object_type in CORE_TYPES:
        assert provider.read(object_type, MISSING) is None, object_type
    harness.assert_clean()


# -- writes -------------------------------------------------------------------------------


def _parent_for(h: Harness, provider: Provider, object_type: ObjectType) -> TargetRef | None:
    return seed_parent_issue(h, provider) if object_type is T.ISSUE_COMMENT else None


@pytest.mark.parametrize("object_type", CORE_TYPES, ids=str)
def test_create_update_delete_read_back(harness, object_type):
    """Created and updated objects read back with the written hash; deletes as declared."""
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    parent = _parent_for(harness, provider, object_type)
    first, second = first_payload(object_type), changed_payload(object_type)
    number = 1 if object_type is T.ISSUE else None

    [created] = writer(provider).apply_batch(
        [create(object_type, first, "one", number=number, parent=parent)]
    )
    assert created.status is WriteStatus.OK, created
    identity = created.target_identity
    assert identity
    assert_reads_back(provider, object_type, identity, first)

    [updated] = writer(provider).apply_batch(
        [update(object_type, identity, second, "one", expected_hash=content_hash(first))]
    )
    assert updated.status is WriteStatus.OK, updated
    assert updated.target_identity == identity
    assert content_hash(second) != content_hash(first)
    assert_reads_back(provider, object_type, identity, second)
    listed = {e.identity: e for e in provider.inventory_index([object_type]).entries}
    assert listed[identity].content_hash == content_hash(second)

    [deleted] = writer(provider).apply_batch(
        [delete(object_type, identity, "one", expected_hash=content_hash(second))]
    )
    if object_type in harness.limits.cannot_delete:
        assert deleted.status is WriteStatus.REFUSED, deleted
        assert deleted.error.code == "unsupported", deleted
        assert read_hash(provider, object_type, identity) == content_hash(second)
    else:
        assert deleted.status is WriteStatus.OK, deleted
        assert provider.read(object_type, identity) is None
        listed_after = [e.identity for e in provider.inventory_index([object_type]).entries]
        assert identity not in listed_after
    harness.assert_clean()


def test_an_update_against_a_stale_hash_is_refused_as_a_conflict(harness):
    """An update whose expected_hash no longer matches is REFUSED 'conflict'; nothing changes."""
    provider = harness.target()
    [identity] = harness.seed(provider, [create(T.LABEL, label_payload("bug"), "bug")])
    stale = content_hash(label_payload("something else"))
    [result] = writer(provider).apply_batch(
        [update(T.LABEL, identity, label_payload("defect"), "bug", expected_hash=stale)]
    )
    assert (result.status, result.error.code) == (WriteStatus.REFUSED, "conflict"), result
    assert read_hash(provider, T.LABEL, identity) == content_hash(label_payload("bug"))
    harness.assert_clean()


@pytest.mark.parametrize("object_type", CORE_TYPES, ids=str)
def test_an_update_of_a_missing_object_is_refused_not_found(harness, object_type):
    """Updating an identity that does not exist is REFUSED 'not_found' and creates nothing."""
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    before = harness.stored_count(spec, object_type)
    [result] = writer(provider).apply_batch(
        [update(object_type, MISSING, changed_payload(object_type), "missing")]
    )
    assert (result.status, result.error.code) == (WriteStatus.REFUSED, "not_found"), result
    assert harness.stored_count(spec, object_type) == before
    harness.assert_clean()


def test_clearing_a_due_date_is_applied_or_refused_as_declared(harness):
    """Removing a milestone's due date either takes effect or is REFUSED 'unsupported'
    (as the provider declares) and then leaves the stored milestone untouched."""
    provider = harness.target()
    [identity] = harness.seed(provider, [create(T.MILESTONE, first_payload(T.MILESTONE), "due")])
    cleared = milestone_payload("v1.0", due_on=None)
    [result] = writer(provider).apply_batch([update(T.MILESTONE, identity, cleared, "due")])
    stored = provider.read(T.MILESTONE, identity)
    assert stored is not None
    if harness.limits.clears_due_dates:
        assert result.status == WriteStatus.OK, result
        assert stored.payload["due_on"] is None
    else:
        assert (result.status, result.error.code) == (WriteStatus.REFUSED, "unsupported"), result
        assert stored.payload["due_on"] == first_payload(T.MILESTONE)["due_on"]
    harness.assert_clean()


def test_a_delete_of_a_missing_object_settles_without_error(harness):
    """Deleting what is already gone is OK or REFUSED 'not_found', never unknown or raised."""
    provider = harness.target()
    for object_type in CORE_TYPES:
        if object_type in harness.limits.cannot_delete:
            continue
        [result] = writer(provider).apply_batch([delete(object_type, MISSING, "gone")])
        outcome = (result.status, result.error.code if result.error else None)
        assert outcome in ((WriteStatus.OK, None), (WriteStatus.REFUSED, "not_found")), result
        assert provider.read(object_type, MISSING) is None
    harness.assert_clean()


@pytest.mark.parametrize("by", ["identity", "marker"])
def test_a_create_whose_parent_cannot_be_resolved_is_refused_dependency_missing(harness, by):
    """A comment on a parent that is not there is REFUSED 'dependency_missing', not written."""
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    parent = TargetRef(
        T.ISSUE, MISSING if by == "identity" else None, marker(T.ISSUE, "never-created")
    )
    write = create(T.ISSUE_COMMENT, comment_payload(), "orphan", parent=parent)
    [result] = writer(provider).apply_batch([write])
    assert (result.status, result.error.code) == (WriteStatus.REFUSED, "dependency_missing"), result
    assert harness.stored_count(spec, T.ISSUE_COMMENT) == 0
    harness.assert_clean()


def _seed_undeletable(h: Harness, provider: Provider, object_type: ObjectType) -> str:
    if object_type is T.ISSUE:
        return seed_parent_issue(h, provider).identity or ""
    [pull] = h.seed(provider, [create(T.PULL_REQUEST, merged_pull_payload(1), 1, number=1)])
    if object_type is T.PULL_REQUEST:
        return pull
    parent = TargetRef(T.PULL_REQUEST, pull, marker(T.PULL_REQUEST, 1))
    [review] = h.seed(provider, [create(T.REVIEW, review_payload(), "r1", parent=parent)])
    return review


@pytest.mark.parametrize("object_type", [T.ISSUE, T.PULL_REQUEST, T.REVIEW], ids=str)
def test_deletes_are_refused_exactly_where_declared(harness, object_type):
    """A delete is REFUSED 'unsupported' (object kept) if declared, else it really deletes."""
    provider = harness.target()
    identity = _seed_undeletable(harness, provider, object_type)
    before = read_hash(provider, object_type, identity)
    assert before is not None
    [result] = writer(provider).apply_batch([delete(object_type, identity, "gone")])
    if object_type in harness.limits.cannot_delete:
        assert (result.status, result.error.code) == (WriteStatus.REFUSED, "unsupported"), result
        assert result.error.message
        assert read_hash(provider, object_type, identity) == before
    else:
        assert result.status is WriteStatus.OK, result
        assert provider.read(object_type, identity) is None
    harness.assert_clean()


def test_authorship_is_native_or_attributed_as_declared(harness):
    """Another author and an old time read back exactly; the result says how they are held."""
    provider = harness.target()
    payload = issue_payload(1, author="someone-else", created_at="2019-02-03T04:05:06Z")
    [result] = writer(provider).apply_batch([create(T.ISSUE, payload, 1, number=1)])
    assert result.status is WriteStatus.OK, result
    attributed = result.representation is Representation.ATTRIBUTED
    assert attributed == harness.limits.attributes_authorship, result
    obj = provider.read(T.ISSUE, result.target_identity or "")
    assert obj is not None
    assert (obj.payload["author"], obj.payload["created_at"]) == (
        "someone-else",
        "2019-02-03T04:05:06Z",
    )
    assert obj.content_hash == content_hash(payload)
    harness.assert_clean()


# -- markers and lost responses -----------------------------------------------------------


def test_find_by_markers_finds_what_was_created(harness):
    """Marked types are found by marker (unknown markers absent); unmarked ones never are."""
    forge = seed_forge(harness)
    for object_type in CORE_TYPES:
        expected = {m: i for (t, i), m in forge.markers.items() if t is object_type}
        never = marker(object_type, "never")
        found = writer(forge.provider).find_by_markers(object_type, [*expected, never])
        if object_type in harness.limits.unmarked_types:
            assert found == {}, object_type
        else:
            assert found == expected, object_type
    harness.assert_clean()


#: Creates whose response gets lost: every core type, and a closed issue (GitHub needs a
#: second request to close it, so a lost first response must not end as a half write).
LOST_CREATES = {
    "label": (T.LABEL, lambda: first_payload(T.LABEL)),
    "milestone": (T.MILESTONE, lambda: first_payload(T.MILESTONE)),
    "issue": (T.ISSUE, lambda: first_payload(T.ISSUE)),
    "closed_issue": (T.ISSUE, lambda: changed_payload(T.ISSUE)),
    "issue_comment": (T.ISSUE_COMMENT, lambda: first_payload(T.ISSUE_COMMENT)),
    "release": (T.RELEASE, lambda: first_payload(T.RELEASE)),
}


@pytest.mark.parametrize("case", list(LOST_CREATES))
def test_a_create_whose_response_is_lost_is_never_duplicated(harness, case):
    """After a lost response: OK (reading back as written) or UNKNOWN; found; stored once."""
    object_type, make_payload = LOST_CREATES[case]
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    parent = _parent_for(harness, provider, object_type)
    payload = make_payload()
    number = 1 if object_type is T.ISSUE else None
    write = create(object_type, payload, "lost", number=number, parent=parent)
    before = harness.stored_count(spec, object_type)

    lost = harness.lose_next_create_response(object_type)
    [result] = writer(provider).apply_batch([write])
    if lost:
        assert result.status in (WriteStatus.OK, WriteStatus.UNKNOWN), result
    else:
        assert result.status is WriteStatus.OK, result
    assert harness.stored_count(spec, object_type) == before + 1

    if object_type not in harness.limits.unmarked_types:
        found = writer(provider).find_by_markers(object_type, [write.marker])
        assert set(found) == {write.marker}
        identity = found[write.marker]
        if result.status is WriteStatus.OK:
            assert result.target_identity == identity
    else:
        assert result.status is WriteStatus.OK, "an unmarked type is recovered by natural key"
        identity = result.target_identity or ""
    if result.status is WriteStatus.OK:  # OK promises the write happened, all of it
        assert_reads_back(provider, object_type, identity, payload)

    if harness.limits.idempotent_creates:
        [again] = writer(provider).apply_batch([write])
        assert (again.status, again.target_identity) == (WriteStatus.OK, identity), again
        assert harness.stored_count(spec, object_type) == before + 1
    harness.assert_clean()


# -- rate limits --------------------------------------------------------------------------


def test_reads_raise_rate_limited_once_the_quota_is_used_up(harness):
    """Used-up quota: reads raise RateLimited(retry_at=reset), writes defer; else both work."""
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    [identity] = harness.seed(provider, [create(T.LABEL, label_payload(), "bug")])
    reset = harness.exhaust_primary_quota()
    assert (reset is not None) == harness.limits.rate_limited
    if reset is None:
        assert read_hash(provider, T.LABEL, identity) == content_hash(label_payload())
        assert [e.identity for e in provider.inventory_index([T.LABEL]).entries] == [identity]
    else:
        with pytest.raises(RateLimited) as raised:
            provider.read(T.LABEL, identity)
        assert raised.value.retry_at == reset
        assert raised.value.code == "rate_limited"
        with pytest.raises(RateLimited) as listing:
            list(provider.inventory_index([T.ISSUE]).entries)
        assert listing.value.retry_at == reset
        with pytest.raises(RateLimited):
            provider.read_batch(T.LABEL, [identity])
    write = create(T.LABEL, label_payload("after the limit"), "after")
    [result] = writer(provider).apply_batch([write])
    if reset is None:
        assert result.status is WriteStatus.OK, result
    else:
        assert (result.status, result.retry_at) == (WriteStatus.DEFERRED, reset), result
        assert harness.stored_count(spec, T.LABEL) == 1
    harness.assert_clean()


def test_writes_refused_by_a_content_limit_are_deferred_and_not_written(harness):
    """Past a content limit the rest of the batch is DEFERRED, unwritten; else a burst passes."""
    spec = harness.make_repository(empty=False)
    provider = harness.open_target(spec)
    limited = harness.limit_content_creation(allowance=1)
    assert limited == harness.limits.rate_limited
    count = 3 if limited else 300
    writes = [create(T.LABEL, label_payload(f"label {n:03d}"), n) for n in range(count)]
    before = datetime.now(UTC)
    results = writer(provider).apply_batch(writes)
    assert [r.item_id for r in results] == [w.item_id for w in writes]
    if not limited:
        assert {r.status for r in results} == {WriteStatus.OK}
        assert harness.stored_count(spec, T.LABEL) == count
    else:
        statuses = [r.status for r in results]
        assert statuses == [WriteStatus.OK, WriteStatus.DEFERRED, WriteStatus.DEFERRED], results
        for result in results[1:]:
            assert result.error.code == "rate_limited"
            assert result.retry_at is not None
            assert before < result.retry_at <= datetime.now(UTC) + timedelta(minutes=1, seconds=1)
        assert harness.stored_count(spec, T.LABEL) == 1
        assert read_hash(provider, T.LABEL, results[0].target_identity or "") == content_hash(
            writes[0].payload or {}
        )
    harness.assert_clean()


# -- awkward data -------------------------------------------------------------------------


def _body_of_bytes(size: int) -> str:
    """Exactly ``size`` bytes of UTF-8 text mixing ASCII, accents, CJK and emoji lines."""
    line = "line of ASCII text, ünïcödé, 日本語のテキスト and 🚀✨ emoji\n"
    body = line * (size // len(line.encode()) + 1)
    while len(body.encode()) >= size:
        body = body[:-1]
    body += "x" * (size - len(body.encode()))  # ends in "x", never in a newline
    assert len(body.encode()) == size
    return body


AWKWARD_TEXTS = {
    "unicode": (
        "Ünïcödé 标题 — ñ, ß, 🐛 and \u202eRTL\u202c",
        "Zeichen: äöü ß, 中文, العربية, עברית, emoji 👩‍💻🏳️‍🌈, combining e\u0301, NUL-free.",
    ),
    "markdown_and_html": (
        "<script>alert('x')</script> & `code`",
        "# Title\n\n- [ ] task\n\n```python\nprint('<!-- not a marker -->')\n```\n\n> quote",
    ),
    "empty_body": ("An empty body", ""),
    "trailing_newline": ("Ends with a newline", "The body ends with a newline.\n"),
    "surrounding_blank_lines": ("Blank lines around", "\n\npadded body\n\n"),
    "64KiB": ("A 64 KiB body", _body_of_bytes(64 * 1024)),
}


@pytest.mark.parametrize("case", list(AWKWARD_TEXTS))
def test_awkward_titles_and_bodies_round_trip(harness, case):
    """Issues and comments with awkward text read back with equal hashes, also listed."""
    title, body = AWKWARD_TEXTS[case]
    provider = harness.target()
    issue = issue_payload(1, title, body=body)
    [issue_id] = harness.seed(provider, [create(T.ISSUE, issue, 1, number=1)])
    parent = TargetRef(T.ISSUE, issue_id, marker(T.ISSUE, 1))
    comment = comment_payload(body)
    [comment_id] = harness.seed(provider, [create(T.ISSUE_COMMENT, comment, "c", parent=parent)])
    for object_type, identity, payload in (
        (T.ISSUE, issue_id, issue),
        (T.ISSUE_COMMENT, comment_id, comment),
    ):
        obj = provider.read(object_type, identity)
        assert obj is not None
        assert dict(obj.payload) == payload, object_type
        listed = {e.identity: e for e in provider.inventory_index([object_type]).entries}
        assert listed[identity].content_hash == content_hash(payload), object_type
    harness.assert_clean()


LABEL_NAMES = ["good first issue", "🐛 bug", "needs: triage ✨", "Ünïcödé label", "a+b & c?"]


def test_label_names_with_spaces_and_emoji_round_trip(harness):
    """Labels named with spaces, emoji and punctuation are created, used, renamed, deleted."""
    provider = harness.target()
    writes = [create(T.LABEL, label_payload(name), name) for name in LABEL_NAMES]
    identities = harness.seed(provider, writes)
    issue = issue_payload(1, labels=LABEL_NAMES)
    [issue_id] = harness.seed(provider, [create(T.ISSUE, issue, 1, number=1)])
    listed = {e.identity: e for e in provider.inventory_index([T.LABEL]).entries}
    assert sorted(listed) == sorted(identities)
    for identity, name in zip(identities, LABEL_NAMES, strict=True):
        assert listed[identity].content_hash == content_hash(label_payload(name))
        assert listed[identity].unique_key == name
    assert read_hash(provider, T.ISSUE, issue_id) == content_hash(issue)

    renamed = label_payload("🐛 bug 🔥 confirmed", color="ff0000")
    [result] = writer(provider).apply_batch([update(T.LABEL, identities[1], renamed, "🐛 bug")])
    assert result.status is WriteStatus.OK, result
    assert read_hash(provider, T.LABEL, identities[1]) == content_hash(renamed)
    [gone] = writer(provider).apply_batch([delete(T.LABEL, identities[2], "needs: triage ✨")])
    assert gone.status is WriteStatus.OK, gone
    assert provider.read(T.LABEL, identities[2]) is None
    harness.assert_clean()


def test_many_comments_on_one_issue_round_trip(harness):
    """Thousands of comments on one issue (fewer on remote forges) are all listed as written."""
    count = harness.limits.many_comments
    provider = harness.target()
    parent = seed_parent_issue(harness, provider)
    payloads = [
        comment_payload(
            f"Comment {n} — ✓", created_at=f"2024-05-01T12:{n // 60 % 60:02d}:{n % 60:02d}Z"
        )
        for n in range(count)
    ]
    writes = [create(T.ISSUE_COMMENT, p, n, parent=parent) for n, p in enumerate(payloads)]
    identities = harness.seed(provider, writes)
    assert len(set(identities)) == count
    entries = list(provider.inventory_index([T.ISSUE_COMMENT]).entries)
    assert [e.identity for e in entries] == sorted(e.identity for e in entries)
    listed = {e.identity: e for e in entries}
    assert sorted(listed) == sorted(identities)
    for identity, payload in zip(identities, payloads, strict=True):
        assert listed[identity].content_hash == content_hash(payload)
    sample = identities[:: max(1, count // 10)]
    read = provider.read_batch(T.ISSUE_COMMENT, sample)
    for identity in sample:
        obj = read[identity]
        assert obj is not None
        assert obj.content_hash == listed[identity].content_hash
        assert obj.refs["parent"] == ObjectRef(T.ISSUE, parent.identity or "")
    harness.assert_clean()


def test_a_body_over_the_declared_limit_is_refused_not_truncated(harness):
    """Past max_body_chars a create is REFUSED 'invalid' and stores nothing; else it fits."""
    spec = harness.make_repository()
    provider = harness.open_target(spec)
    limit = harness.limits.max_body_chars
    body = "y" * ((limit or 65536) + 1)
    payload = issue_payload(1, "Too long", body=body)
    [result] = writer(provider).apply_batch([create(T.ISSUE, payload, 1, number=1)])
    if limit is None:
        assert result.status is WriteStatus.OK, result
        assert read_hash(provider, T.ISSUE, result.target_identity or "") == content_hash(payload)
    else:
        assert (result.status, result.error.code) == (WriteStatus.REFUSED, "invalid"), result
        assert harness.stored_count(spec, T.ISSUE) == 0
    harness.assert_clean()


# -- LFS --------------------------------------------------------------------------------


def _lfs(provider: Provider) -> LfsStore:
    assert isinstance(provider, LfsStore)
    return provider


def test_an_lfs_object_uploaded_by_oid_is_present_and_reads_back_byte_for_byte(harness):
    """upload: asked for, sent, verified; then the store reports it present (no upload
    action), serves it on download, and holds exactly its bytes."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    content = b"lfs object " * 500
    pointer = pointer_of(content)

    (answer,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    assert (answer.error, answer.present) == (None, False)
    store.lfs_upload(answer, io.BytesIO(content))

    (again,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    assert again.present
    (download,) = store.lfs_batch(LfsOperation.DOWNLOAD, [pointer])
    assert download.error is None
    with closing(store.lfs_download(download)) as stream:
        assert stream.read() == content
    assert harness.lfs_objects(spec) == {pointer.oid: content}
    harness.assert_clean()


def test_an_lfs_upload_stopped_mid_stream_stores_nothing(harness):
    """A cancel or a lost lease while an object goes up (the write guard refuses once a
    megabyte was read): over HTTP the upload stops with the guard's error, unfinished,
    and the store lacks the object; never a partial object anywhere. Before, the upload
    ran to its end."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    content = os.urandom(8 * 1024 * 1024)
    pointer = pointer_of(content)
    (answer,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    body = io.BytesIO(content)

    def cancel_after_a_megabyte() -> None:
        if body.tell() >= 1024 * 1024:
            raise RunCancelled("run 7 was cancelled while it was writing")

    if harness.lfs_over_http:
        with guarded(cancel_after_a_megabyte), pytest.raises(RunCancelled):
            store.lfs_upload(answer, body)
        (again,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
        assert not again.present
        # At once, not once the server notices the client gone: it may still be
        # reading what was sent (a store writes an upload beside itself, in whole).
        assert harness.lfs_objects(spec) == {}
    else:  # a copy on this machine, whole or not at all
        with guarded(cancel_after_a_megabyte):
            store.lfs_upload(answer, body)
        assert harness.lfs_objects(spec) == {pointer.oid: content}
    harness.assert_clean()


def test_a_missing_lfs_object_is_an_answer_with_its_code_not_an_exception(harness):
    """download of an object the store lacks: a per-object lfs_object_missing; the other
    objects of the same batch are answered normally."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    present, absent = pointer_of(b"here\n"), pointer_of(b"not here\n")
    (upload,) = store.lfs_batch(LfsOperation.UPLOAD, [present])
    store.lfs_upload(upload, io.BytesIO(b"here\n"))

    answers = store.lfs_batch(LfsOperation.DOWNLOAD, [absent, present])

    assert [a.pointer for a in answers] == [absent, present]
    assert answers[0].error is not None
    assert answers[0].error.code == "lfs_object_missing"
    assert answers[1].error is None
    harness.assert_clean()


def test_bytes_that_are_not_the_object_are_refused_and_never_stored(harness):
    """An upload whose bytes do not hash to the OID raises LfsObjectCorrupt; the store
    still lacks the object."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    pointer = pointer_of(b"the real bytes\n")
    (answer,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])

    with pytest.raises(LfsObjectCorrupt):
        store.lfs_upload(answer, io.BytesIO(b"other bytes!!!\n"))

    (again,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    assert not again.present
    assert harness.lfs_objects(spec) == {}
    harness.assert_clean()


def test_a_lost_lfs_upload_response_is_proven_by_asking_again(harness):
    """Where an upload's answer can be lost, the store raises ResultUnknown and the Batch
    API then reports the object present: uploading by OID is idempotent, never blind."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    content = b"landed quietly\n"
    pointer = pointer_of(content)
    (answer,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    if harness.lose_next_lfs_upload_response():
        with pytest.raises(ResultUnknown):
            store.lfs_upload(answer, io.BytesIO(content))
    else:
        store.lfs_upload(answer, io.BytesIO(content))

    (again,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    assert again.present
    assert harness.lfs_objects(spec) == {pointer.oid: content}
    harness.assert_clean()


def test_lfs_actions_that_stopped_working_early_are_asked_for_again(harness):
    """Actions whose credentials end before the ``expires_in`` they announced (GitHub
    rotates them; a signed storage URL runs out) are asked for again once the host
    refuses them: the upload lands, sent in whole from its start, and the download
    reads it. Before, the upload failed ``permission_denied`` and the download
    ``provider_unavailable``, and the Run was blocked although its credentials were
    good. Where actions carry no credentials of their own, the transfers simply work."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    content = b"asked for again\n" * 300
    pointer = pointer_of(content)
    (upload,) = store.lfs_batch(LfsOperation.UPLOAD, [pointer])
    body = io.BytesIO(b"already read" + content)
    body.seek(len(b"already read"))  # a spool is handed over where its object starts

    harness.expire_lfs_actions()
    store.lfs_upload(upload, body)
    assert harness.lfs_objects(spec) == {pointer.oid: content}

    (download,) = store.lfs_batch(LfsOperation.DOWNLOAD, [pointer])
    harness.expire_lfs_actions()
    with closing(store.lfs_download(download)) as stream:
        assert stream.read() == content
    harness.assert_clean()


@pytest.mark.parametrize("false_first", [False, True], ids=["true-first", "false-first"])
def test_an_lfs_object_is_its_oid_and_size_and_each_is_answered_for_itself(harness, false_first):
    """One batch asking for (G, its size) and (G, another size): the true one is present
    and served; the false one is not present, and a download of it never yields bytes
    of its size (an error, or bytes the mover's check refuses). Either order."""
    spec = harness.make_repository(empty=True)
    store = _lfs(harness.open_target(spec))
    content = b"0123456789"
    true = pointer_of(content)
    false = LfsPointer(true.oid, 3)
    (upload,) = store.lfs_batch(LfsOperation.UPLOAD, [true])
    store.lfs_upload(upload, io.BytesIO(content))
    asked = [false, true] if false_first else [true, false]

    uploads = {a.pointer: a for a in store.lfs_batch(LfsOperation.UPLOAD, asked)}
    downloads = {a.pointer: a for a in store.lfs_batch(LfsOperation.DOWNLOAD, asked)}

    assert (uploads[true].present, uploads[true].error) == (True, None)
    assert not uploads[false].present
    assert downloads[true].error is None
    with closing(store.lfs_download(downloads[true])) as stream:
        assert stream.read() == content
    if downloads[false].error is None:
        with closing(store.lfs_download(downloads[false])) as stream:
            assert len(stream.read()) != false.size
    else:
        assert downloads[false].error.code == "lfs_object_corrupt"
    assert harness.lfs_objects(spec) == {true.oid: content}
    harness.assert_clean()


# -- shadow branches ----------------------------------------------------------------------


def test_derived_shadow_branches_become_branches_listed_as_before(harness):
    """``ShadowMaterializer``: the shadow an authority derives for a pull request whose
    head is on no branch becomes a branch at the same commit; the listing is unchanged,
    and a standby's listing (no derivation) now shows it too. Again: nothing to make."""
    spec = harness.make_repository(empty=False)
    number, head = harness.open_pull_on_no_branch(spec)
    provider = harness.open_target(spec)
    assert isinstance(provider, base.ShadowMaterializer)
    shadow = f"refs/heads/reposync/pr/{number}/head"

    def listing() -> dict[str, str]:
        entries = provider.inventory_index([T.GIT_REF, T.PULL_REQUEST]).entries
        return {e.identity: e.revision for e in entries if e.object_type is T.GIT_REF}

    derived = listing()
    assert derived[shadow] == head

    assert provider.materialize_shadows() == {shadow: head}

    assert listing() == derived
    provider.derive_shadows = False  # as a standby reads itself
    assert listing() == derived
    assert provider.materialize_shadows() == {}
    harness.assert_clean()
