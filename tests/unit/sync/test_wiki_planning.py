"""Wiki refs in the pure engine: a type of their own, planned exactly like Git refs."""

from __future__ import annotations

import pytest

from reposync.sync.batching import BatchLimits, assign_batches
from reposync.sync.canonical import REF_TYPES, IndexEntry, git_ref, wiki_ref
from reposync.sync.planner import Observation, PlanMode, Reason, decide, select_candidates
from reposync.sync.vocabulary import Action, ObjectType, Phase, RefConflictPolicy
from tests.unit.sync.factories import link_to, links_of, oid
from tests.unit.sync.test_planner import Oracle, deleted_candidate, new_candidate

W = ObjectType.WIKI_REF


def page(name: str, label: str) -> IndexEntry:
    return wiki_ref("refs/heads/" + name, oid(label)).index_entry()


def test_a_wiki_ref_is_a_git_phase_type_of_its_own():
    """wiki_ref is in phase 0 with git_ref, in REF_TYPES, and the same ref name in the
    repository and the wiki are two objects (their keys differ, their hashes agree)."""
    assert W.phase is Phase.GIT
    assert {ObjectType.GIT_REF, W} == REF_TYPES
    in_wiki, in_repo = (
        wiki_ref("refs/heads/master", oid("a")),
        git_ref("refs/heads/master", oid("a")),
    )
    assert (in_wiki.object_type, in_wiki.object_key) == (W, "wiki branch master")
    assert in_wiki.unique_key == in_wiki.identity == "refs/heads/master"
    assert in_wiki.content_hash == in_repo.content_hash
    assert wiki_ref("refs/tags/v1", oid("a")).object_key == "wiki tag v1"


def test_an_empty_target_creates_every_wiki_ref_named_by_its_ref():
    """Empty standby: every wiki ref is a create whose target identity is its name."""
    selected = select_candidates(PlanMode.EMPTY_TARGET, [page("master", "a")], {})
    [item] = [decide(c, None) for c in selected.candidates]
    assert item is not None
    assert (item.object_type, item.action, item.target_identity) == (
        W,
        Action.CREATE,
        "refs/heads/master",
    )


@pytest.mark.parametrize(
    ("oracle", "policy", "action", "reason"),
    [
        (Oracle(True), RefConflictPolicy.KEEP_TARGET, Action.UPDATE, Reason.FAST_FORWARD),
        (Oracle(False), RefConflictPolicy.KEEP_TARGET, Action.CONFLICT, Reason.COLLISION),
        (Oracle(False), RefConflictPolicy.USE_SOURCE, Action.UPDATE, Reason.POLICY_USE_SOURCE),
    ],
)
def test_a_baseline_wiki_collision_follows_the_ref_rules(oracle, policy, action, reason):
    """A wiki branch on an unlinked target: fast-forward when Git proves it, else the ref
    conflict policy decides, as for the repository's branches."""
    item = decide(
        new_candidate(page("master", "new"), baseline=True),
        Observation(page("master", "old")),
        policy=policy,
        is_ancestor=oracle,
    )
    assert item is not None
    assert (item.action, item.reason) == (action, reason)
    assert item.intent["expected_revision"] == oid("old")


def test_a_wiki_ref_gone_from_the_source_is_deleted_with_its_lease():
    """A linked wiki ref the source lost: a delete expecting the target's value, keyed
    "wiki branch ..." from the link alone."""
    link = link_to(page("draft", "d"))
    item = decide(deleted_candidate(link), Observation(page("draft", "d")))
    assert item is not None
    assert (item.action, item.object_key) == (Action.DELETE, "wiki branch draft")
    assert item.intent["expected_revision"] == oid("d")
    gone = decide(deleted_candidate(link), Observation(None))
    assert gone is not None
    assert (gone.action, gone.object_key) == (Action.NOOP, "wiki branch draft")


def test_wiki_refs_and_git_refs_never_share_a_batch():
    """A batch holds one type: the wiki's refs are pushed to the wiki, apart."""
    items = [
        decide(c, None)
        for c in select_candidates(
            PlanMode.EMPTY_TARGET,
            [git_ref("refs/heads/main", oid("m")).index_entry(), page("master", "a")],
            links_of(),
        ).candidates
    ]
    batches = {item.object_type: n for item, n in assign_batches(items, BatchLimits(500, 1 << 23))}
    assert len(set(batches.values())) == 2
