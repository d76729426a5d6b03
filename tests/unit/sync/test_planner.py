"""The planner: candidate selection per plan mode, and decide() per situation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reposync.sync.batching import BatchLimits, assign_batches
from reposync.sync.canonical import (
    MAPPER_VERSION,
    DigestBuilder,
    IndexEntry,
    default_branch,
    git_ref_hash,
)
from reposync.sync.planner import (
    ACTION_ORDER,
    Candidate,
    LinkState,
    Observation,
    PlanMode,
    PlannedItem,
    Reason,
    decide,
    relocation,
    select_candidates,
    split_checkpoint,
    target_only,
)
from reposync.sync.vocabulary import Action, ObjectType, Phase, RefConflictPolicy
from tests.unit.sync.factories import GIT, branch, link_to, links_of, oid, plan, ref, tag


class Oracle:
    """An ``is_ancestor`` stand-in that answers a fixed value and records its calls."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str]] = []

    def __call__(self, ancestor: str, descendant: str) -> bool:
        self.calls.append((ancestor, descendant))
        return self.answer


def new_candidate(source: IndexEntry, *, baseline: bool = False) -> Candidate:
    """The candidate select_candidates makes for an unlinked source entry."""
    return Candidate(
        source.object_type, source, None, Reason.NEW, source.unique_key if baseline else None
    )


def linked_candidate(source: IndexEntry, link: LinkState, reason: Reason) -> Candidate:
    return Candidate(source.object_type, source, link, reason, link.target_identity)


def deleted_candidate(link: LinkState) -> Candidate:
    return Candidate(link.object_type, None, link, Reason.DELETED_ON_SOURCE, link.target_identity)


def only_candidate(mode: PlanMode, source: list[IndexEntry], links) -> Candidate:
    selected = select_candidates(mode, source, links)
    assert len(selected.candidates) == 1, selected.candidates
    return selected.candidates[0]


# -- LinkState.trusted -------------------------------------------------------------------


def test_link_verified_under_current_mapper_is_trusted():
    """A verified link with a hash, current mapper and no failed verify is trusted."""
    assert link_to(branch("main", "c1")).trusted


@pytest.mark.parametrize(
    "link",
    [
        link_to(branch("main", "c1"), verify_failed=True),
        link_to(branch("main", "c1"), mapper_version=MAPPER_VERSION - 1),
        link_to(branch("main", "c1"), mapper_version=MAPPER_VERSION + 1),
        link_to(branch("main", "c1"), unverified=True),
    ],
    ids=["verify_failed", "older_mapper", "newer_mapper", "no_verified_hash"],
)
def test_link_not_trusted(link):
    """A failed verify, another mapper version or no verified hash makes a link untrusted."""
    assert not link.trusted


# -- select_candidates: EMPTY_TARGET and BASELINE ----------------------------------------


def test_empty_target_makes_every_source_entry_a_new_candidate_without_reads():
    """Empty target: each source entry is a NEW candidate that needs no target read."""
    source = [branch("main", "c1"), branch("dev", "c2"), tag("v1", "c1")]
    selected = select_candidates(PlanMode.EMPTY_TARGET, source, {})
    assert [c.source for c in selected.candidates] == source
    assert all(c.reason is Reason.NEW for c in selected.candidates)
    assert all(c.link is None for c in selected.candidates)
    assert not any(c.needs_target_read for c in selected.candidates)
    assert selected.scanned == {"git_ref": 3}
    assert selected.checkpoint_skipped == {}


def test_baseline_new_candidates_read_the_target_by_unique_key():
    """Baseline: NEW candidates carry the unique key as the target identity to read."""
    source = [branch("main", "c1"), tag("v1", "c1")]
    selected = select_candidates(PlanMode.BASELINE, source, {})
    assert [c.target_identity for c in selected.candidates] == [
        "refs/heads/main",
        "refs/tags/v1",
    ]
    assert all(c.needs_target_read for c in selected.candidates)
    assert all(c.reason is Reason.NEW for c in selected.candidates)
    assert selected.scanned == {"git_ref": 2}


def test_empty_source_and_no_links_select_nothing():
    """No source and no links: no candidates and no counters."""
    selected = select_candidates(PlanMode.CHECKPOINT, [], {})
    assert selected.candidates == []
    assert selected.scanned == {}
    assert selected.checkpoint_skipped == {}


# -- select_candidates: CHECKPOINT -------------------------------------------------------


def test_checkpoint_skips_trusted_unchanged_link_without_target_read():
    """Checkpoint: an unchanged, trusted link is counted skipped and not a candidate."""
    main = branch("main", "c1")
    selected = select_candidates(PlanMode.CHECKPOINT, [main], links_of(link_to(main)))
    assert selected.candidates == []
    assert selected.scanned == {"git_ref": 1}
    assert selected.checkpoint_skipped == {"git_ref": 1}


def test_checkpoint_counts_scanned_and_skipped_per_type():
    """Checkpoint: scanned counts every source entry, skipped only the unchanged linked ones."""
    main, dev, v1, fresh = (
        branch("main", "c1"),
        branch("dev", "c2"),
        tag("v1", "c1"),
        branch("new", "c3"),
    )
    links = links_of(link_to(main), link_to(v1), link_to(dev, verified_label="c0"))
    selected = select_candidates(PlanMode.CHECKPOINT, [dev, main, fresh, v1], links)
    assert selected.scanned == {"git_ref": 4}
    assert selected.checkpoint_skipped == {"git_ref": 2}
    assert [(c.source, c.reason) for c in selected.candidates] == [
        (dev, Reason.CHANGED),
        (fresh, Reason.NEW),
    ]


def test_checkpoint_changed_link_is_a_candidate_reading_the_linked_target():
    """Checkpoint: a source hash different from the verified hash makes a CHANGED candidate."""
    main = branch("main", "c2")
    link = link_to(main, verified_label="c1", target_identity="refs/heads/trunk")
    candidate = only_candidate(PlanMode.CHECKPOINT, [main], links_of(link))
    assert candidate == Candidate(GIT, main, link, Reason.CHANGED, "refs/heads/trunk")
    assert candidate.needs_target_read


def test_checkpoint_verify_failed_link_is_unreliable_even_when_unchanged():
    """Checkpoint: a link whose last verify failed is re-planned as UNRELIABLE."""
    main = branch("main", "c1")
    link = link_to(main, verify_failed=True)
    candidate = only_candidate(PlanMode.CHECKPOINT, [main], links_of(link))
    assert candidate.reason is Reason.UNRELIABLE
    assert candidate.needs_target_read


@pytest.mark.parametrize("mapper_version", [MAPPER_VERSION - 1, MAPPER_VERSION + 1, 0])
def test_checkpoint_mapper_dirty_link_is_a_candidate_even_when_unchanged(mapper_version):
    """Checkpoint: a link verified under another mapper version is MAPPER_DIRTY."""
    main = branch("main", "c1")
    link = link_to(main, mapper_version=mapper_version)
    candidate = only_candidate(PlanMode.CHECKPOINT, [main], links_of(link))
    assert candidate.reason is Reason.MAPPER_DIRTY
    assert candidate.needs_target_read


def test_checkpoint_unverified_link_is_changed():
    """Checkpoint: a link without a verified hash cannot be skipped (reason CHANGED)."""
    main = branch("main", "c1")
    candidate = only_candidate(
        PlanMode.CHECKPOINT, [main], links_of(link_to(main, unverified=True))
    )
    assert candidate.reason is Reason.CHANGED


def test_checkpoint_reason_precedence_unreliable_then_mapper_dirty_then_changed():
    """A failed verify outranks a dirty mapper, which outranks a content change."""
    main = branch("main", "c2")
    every_flag = link_to(main, verified_label="c1", verify_failed=True, mapper_version=0)
    dirty_and_changed = link_to(main, verified_label="c1", mapper_version=0)
    assert only_candidate(PlanMode.CHECKPOINT, [main], links_of(every_flag)).reason is (
        Reason.UNRELIABLE
    )
    assert only_candidate(PlanMode.CHECKPOINT, [main], links_of(dirty_and_changed)).reason is (
        Reason.MAPPER_DIRTY
    )


def test_checkpoint_new_ref_is_looked_for_by_name_on_the_target():
    """Checkpoint: an unlinked ref is NEW and read on the target by its name (someone may
    have made it there since the last Run: the conflict policy then decides; it was a
    blind create git could only refuse)."""
    fresh = branch("new", "c1")
    candidate = only_candidate(PlanMode.CHECKPOINT, [fresh], {})
    assert candidate == Candidate(GIT, fresh, None, Reason.NEW, "refs/heads/new")
    assert candidate.needs_target_read


def test_checkpoint_new_issue_needs_no_target_read():
    """Checkpoint: a new API object is created without a look (its number on the target
    is not its identity there); only refs are named alike on both sides."""
    issue = IndexEntry(ObjectType.ISSUE, "7", "issue 7", "7", "r1", "h1", 10, "7", 7)
    candidate = only_candidate(PlanMode.CHECKPOINT, [issue], {})
    assert candidate == Candidate(ObjectType.ISSUE, issue, None, Reason.NEW, None)
    assert not candidate.needs_target_read


def test_an_empty_target_reads_nothing_for_new_refs():
    """On a target confirmed empty there is nothing to look for."""
    fresh = branch("new", "c1")
    candidate = only_candidate(PlanMode.EMPTY_TARGET, [fresh], {})
    assert not candidate.needs_target_read


def test_checkpoint_link_missing_from_source_is_a_delete_candidate():
    """Checkpoint: a link whose source object is gone becomes one DELETED_ON_SOURCE candidate."""
    gone = link_to(branch("gone", "c1"))
    main = branch("main", "c1")
    selected = select_candidates(PlanMode.CHECKPOINT, [main], links_of(link_to(main), gone))
    assert selected.candidates == [deleted_candidate(gone)]
    assert selected.candidates[0].needs_target_read
    assert selected.scanned == {"git_ref": 1}  # deletions are not source entries
    assert selected.checkpoint_skipped == {"git_ref": 1}


def test_deleted_candidates_come_after_source_candidates():
    """Source-walk candidates keep the source order; deletions follow them."""
    a, b = branch("a", "c1"), branch("b", "c1")
    gone = link_to(branch("gone", "c1"))
    selected = select_candidates(PlanMode.CHECKPOINT, [b, a], links_of(gone))
    assert [c.reason for c in selected.candidates] == [
        Reason.NEW,
        Reason.NEW,
        Reason.DELETED_ON_SOURCE,
    ]
    assert [c.source for c in selected.candidates[:2]] == [b, a]


def test_select_candidates_accepts_a_one_shot_iterator():
    """The source may be a generator (a streamed snapshot); it is walked once."""
    source = [branch("a", "c1"), branch("b", "c2")]
    selected = select_candidates(PlanMode.CHECKPOINT, iter(source), {})
    assert [c.source for c in selected.candidates] == source


# -- select_candidates: FULL_AUDIT -------------------------------------------------------


def test_full_audit_reads_back_trusted_unchanged_links():
    """Full audit: an unchanged trusted link is an AUDIT candidate, never skipped."""
    main = branch("main", "c1")
    link = link_to(main)
    selected = select_candidates(PlanMode.FULL_AUDIT, [main], links_of(link))
    assert selected.candidates == [linked_candidate(main, link, Reason.AUDIT)]
    assert selected.candidates[0].needs_target_read
    assert selected.checkpoint_skipped == {}
    assert selected.scanned == {"git_ref": 1}


def test_full_audit_keeps_specific_reasons_for_untrusted_or_changed_links():
    """Full audit: changed, unreliable and mapper-dirty links keep their own reason."""
    changed, failed, dirty = branch("a", "c2"), branch("b", "c1"), branch("c", "c1")
    links = links_of(
        link_to(changed, verified_label="c1"),
        link_to(failed, verify_failed=True),
        link_to(dirty, mapper_version=0),
    )
    selected = select_candidates(PlanMode.FULL_AUDIT, [changed, failed, dirty], links)
    assert [c.reason for c in selected.candidates] == [
        Reason.CHANGED,
        Reason.UNRELIABLE,
        Reason.MAPPER_DIRTY,
    ]


def test_full_audit_deleted_on_source_is_a_delete_candidate():
    """Full audit: links without a source object are DELETED_ON_SOURCE candidates."""
    gone = link_to(tag("old", "c1"))
    selected = select_candidates(PlanMode.FULL_AUDIT, [], links_of(gone))
    assert selected.candidates == [deleted_candidate(gone)]


# -- target_only -------------------------------------------------------------------------


def test_target_only_yields_report_candidates_for_unmatched_target_entries():
    """Baseline: target entries no source maps to become TARGET_ONLY candidates."""
    main, extra, v9 = branch("main", "c1"), branch("extra", "c5"), tag("v9", "c6")
    matched = {(GIT, "refs/heads/main")}
    found = list(target_only([main, extra, v9], matched))
    assert found == [
        Candidate(GIT, None, None, Reason.TARGET_ONLY, "refs/heads/extra"),
        Candidate(GIT, None, None, Reason.TARGET_ONLY, "refs/tags/v9"),
    ]


def test_target_only_matches_by_identity_when_no_unique_key():
    """An entry without a unique key is matched by its identity."""
    entry = IndexEntry(GIT, "id-1", "thing", None, "r", "sha256:x")
    assert list(target_only([entry], {(GIT, "id-1")})) == []
    assert len(list(target_only([entry], set()))) == 1


def test_target_only_yields_nothing_when_everything_matched():
    """No target-only candidates when every target entry is matched."""
    target = [branch("main", "c1"), tag("v1", "c1")]
    matched = {(GIT, "refs/heads/main"), (GIT, "refs/tags/v1")}
    assert list(target_only(target, matched)) == []


# -- decide: EMPTY_TARGET ----------------------------------------------------------------


def test_empty_target_new_object_is_created_with_expectation_absent():
    """Empty target, nothing read: CREATE NEW with no expected target state."""
    main = branch("main", "c1")
    item = decide(new_candidate(main), None)
    assert item == PlannedItem(
        phase=Phase.GIT,
        object_type=GIT,
        object_key="branch main",
        action=Action.CREATE,
        reason=Reason.NEW,
        source_identity="refs/heads/main",
        target_identity="refs/heads/main",
        source_revision=oid("c1"),
        desired_hash=git_ref_hash(oid("c1")),
        expected_target_hash=None,
        intent={"reason": "new", "source_revision": oid("c1")},
        size=main.size,
    )
    assert "expected_revision" not in item.intent


# -- decide: BASELINE --------------------------------------------------------------------


def test_baseline_absent_target_is_created_as_new():
    """Baseline, target read and absent, no link: CREATE NEW (not MISSING_ON_TARGET)."""
    main = branch("main", "c1")
    item = decide(new_candidate(main, baseline=True), Observation(None))
    assert item is not None
    assert (item.action, item.reason) == (Action.CREATE, Reason.NEW)
    assert item.expected_target_hash is None
    assert "expected_revision" not in item.intent


def test_baseline_same_content_is_adopted_as_noop():
    """Baseline, equal content on the target: NOOP ALREADY_EQUAL expecting that content."""
    main = branch("main", "c1")
    item = decide(new_candidate(main, baseline=True), Observation(branch("main", "c1")))
    assert item is not None
    assert (item.action, item.reason) == (Action.NOOP, Reason.ALREADY_EQUAL)
    assert item.expected_target_hash == main.content_hash
    assert item.desired_hash == main.content_hash
    assert item.intent == {"reason": "already_equal", "expected_revision": oid("c1")}
    assert item.target_identity == "refs/heads/main"


def test_baseline_branch_collision_fast_forward_is_an_update():
    """Baseline branch collision that Git proves a fast-forward: UPDATE FAST_FORWARD."""
    source, target = branch("main", "c2"), branch("main", "c1")
    oracle = Oracle(True)
    item = decide(new_candidate(source, baseline=True), Observation(target), is_ancestor=oracle)
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.FAST_FORWARD)
    assert oracle.calls == [(oid("c1"), oid("c2"))]  # (target, source)
    assert item.expected_target_hash == target.content_hash
    assert item.intent == {
        "reason": "fast_forward",
        "expected_revision": oid("c1"),
        "source_revision": oid("c2"),
    }


def test_baseline_fast_forward_wins_over_keep_target_policy():
    """A proven fast-forward is adopted even under the default keep_target policy."""
    item = decide(
        new_candidate(branch("main", "c2"), baseline=True),
        Observation(branch("main", "c1")),
        policy=RefConflictPolicy.KEEP_TARGET,
        is_ancestor=Oracle(True),
    )
    assert item is not None
    assert item.action is Action.UPDATE


@pytest.mark.parametrize("oracle", [Oracle(False), None], ids=["not_ancestor", "no_oracle"])
def test_baseline_branch_collision_keep_target_is_a_conflict(oracle):
    """Baseline branch collision without a fast-forward proof: CONFLICT COLLISION."""
    source, target = branch("main", "c2"), branch("main", "c1")
    item = decide(new_candidate(source, baseline=True), Observation(target), is_ancestor=oracle)
    assert item is not None
    assert (item.action, item.reason) == (Action.CONFLICT, Reason.COLLISION)
    assert item.expected_target_hash == target.content_hash
    assert item.intent == {
        "reason": "collision",
        "expected_revision": oid("c1"),
        "target_revision": oid("c1"),
    }
    assert item.target_identity == "refs/heads/main"
    assert item.desired_hash == source.content_hash


def test_baseline_branch_collision_use_source_policy_is_an_update():
    """Baseline branch collision, policy use_source: UPDATE POLICY_USE_SOURCE."""
    source, target = branch("main", "c2"), branch("main", "c1")
    item = decide(
        new_candidate(source, baseline=True),
        Observation(target),
        policy=RefConflictPolicy.USE_SOURCE,
        is_ancestor=Oracle(False),
    )
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.POLICY_USE_SOURCE)
    assert item.intent["expected_revision"] == oid("c1")
    assert item.intent["source_revision"] == oid("c2")
    assert item.expected_target_hash == target.content_hash


def test_baseline_tag_collision_is_a_conflict_even_if_oracle_says_ancestor():
    """Tags never fast-forward: a tag collision is a CONFLICT whatever the oracle says."""
    oracle = Oracle(True)
    item = decide(
        new_candidate(tag("v1", "c2"), baseline=True),
        Observation(tag("v1", "c1")),
        is_ancestor=oracle,
    )
    assert item is not None
    assert (item.action, item.reason) == (Action.CONFLICT, Reason.COLLISION)
    assert oracle.calls == []


def test_baseline_tag_collision_under_use_source_policy_is_an_update():
    """Current behaviour: use_source also moves a colliding tag (UPDATE POLICY_USE_SOURCE)."""
    item = decide(
        new_candidate(tag("v1", "c2"), baseline=True),
        Observation(tag("v1", "c1")),
        policy=RefConflictPolicy.USE_SOURCE,
    )
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.POLICY_USE_SOURCE)


def test_baseline_non_git_collision_is_a_conflict_even_under_use_source():
    """The ref conflict policy only applies to git refs; other types always conflict."""

    label = ObjectType.LABEL
    source = IndexEntry(label, "1", "label bug", "bug", "r2", "sha256:new")
    target = IndexEntry(label, "9", "label bug", "bug", "r1", "sha256:old")
    candidate = Candidate(label, source, None, Reason.NEW, "bug")
    item = decide(candidate, Observation(target), policy=RefConflictPolicy.USE_SOURCE)
    assert item is not None
    assert (item.action, item.reason) == (Action.CONFLICT, Reason.COLLISION)
    assert item.target_identity == "9"  # the colliding target object's own identity


def test_target_only_candidate_becomes_a_report_item():
    """A target-only object is REPORTed with its target revision, never written."""
    extra = branch("extra", "c5")
    candidate = next(target_only([extra], set()))
    item = decide(candidate, Observation(extra))
    assert item == PlannedItem(
        phase=Phase.GIT,
        object_type=GIT,
        object_key="branch extra",
        action=Action.REPORT,
        reason=Reason.TARGET_ONLY,
        source_identity=None,
        target_identity="refs/heads/extra",
        source_revision=None,
        desired_hash=None,
        expected_target_hash=None,
        intent={"reason": "target_only", "target_revision": oid("c5")},
        size=0,
    )


# -- decide: CHECKPOINT ------------------------------------------------------------------


def test_checkpoint_new_object_not_read_is_created():
    """Checkpoint NEW candidate (target not read): CREATE NEW expecting absence."""
    fresh = branch("new", "c1")
    item = decide(new_candidate(fresh), None)
    assert item is not None
    assert (item.action, item.reason) == (Action.CREATE, Reason.NEW)
    assert item.expected_target_hash is None
    assert item.target_identity == "refs/heads/new"


def test_changed_link_is_updated_from_the_observed_target_state():
    """CHANGED link, target at the old state: UPDATE expecting the observed target."""
    source = branch("main", "c2")
    link = link_to(source, verified_label="c1")
    observed = branch("main", "c1")
    item = decide(linked_candidate(source, link, Reason.CHANGED), Observation(observed))
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.CHANGED)
    assert item.expected_target_hash == observed.content_hash
    assert item.desired_hash == source.content_hash
    assert item.source_revision == oid("c2")
    assert item.intent == {
        "reason": "changed",
        "expected_revision": oid("c1"),
        "source_revision": oid("c2"),
    }


def test_changed_link_whose_target_already_matches_is_a_noop():
    """CHANGED link whose target already holds the new content: NOOP ALREADY_EQUAL."""
    source = branch("main", "c2")
    link = link_to(source, verified_label="c1")
    item = decide(linked_candidate(source, link, Reason.CHANGED), Observation(branch("main", "c2")))
    assert item is not None
    assert (item.action, item.reason) == (Action.NOOP, Reason.ALREADY_EQUAL)
    assert item.expected_target_hash == source.content_hash


@pytest.mark.parametrize("reason", [Reason.UNRELIABLE, Reason.MAPPER_DIRTY])
def test_untrusted_link_with_different_target_is_updated_with_its_reason(reason):
    """Unreliable or mapper-dirty link, target differs: UPDATE keeping that reason."""
    source = branch("main", "c1")
    link = link_to(source, verify_failed=reason is Reason.UNRELIABLE, mapper_version=0)
    item = decide(linked_candidate(source, link, reason), Observation(branch("main", "c9")))
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, reason)
    assert item.intent["expected_revision"] == oid("c9")


@pytest.mark.parametrize("reason", [Reason.UNRELIABLE, Reason.MAPPER_DIRTY])
def test_untrusted_link_with_equal_target_is_a_noop(reason):
    """Unreliable or mapper-dirty link whose target is equal: NOOP ALREADY_EQUAL (re-verify)."""
    source = branch("main", "c1")
    link = link_to(source, verify_failed=True)
    item = decide(linked_candidate(source, link, reason), Observation(branch("main", "c1")))
    assert item is not None
    assert (item.action, item.reason) == (Action.NOOP, Reason.ALREADY_EQUAL)


def test_linked_object_missing_on_target_is_recreated():
    """A linked object read and found absent on the target: CREATE MISSING_ON_TARGET."""
    source = branch("main", "c2")
    link = link_to(source, verified_label="c1", target_identity="refs/heads/trunk")
    item = decide(linked_candidate(source, link, Reason.CHANGED), Observation(None))
    assert item is not None
    assert (item.action, item.reason) == (Action.CREATE, Reason.MISSING_ON_TARGET)
    assert item.target_identity == "refs/heads/trunk"
    assert item.expected_target_hash is None
    assert item.intent == {"reason": "missing_on_target", "source_revision": oid("c2")}


def test_linked_object_not_read_is_not_called_missing():
    """Without a target read (observed None) the planner keeps the candidate's reason."""
    source = branch("main", "c2")
    link = link_to(source, verified_label="c1")
    item = decide(linked_candidate(source, link, Reason.CHANGED), None)
    assert item is not None
    assert (item.action, item.reason) == (Action.CREATE, Reason.CHANGED)


def test_linked_item_targets_the_links_target_identity():
    """Items of a linked object address the link's target identity, not the source's."""
    source = branch("main", "c2")
    link = link_to(source, verified_label="c1", target_identity="refs/heads/trunk")
    item = decide(
        linked_candidate(source, link, Reason.CHANGED), Observation(ref("refs/heads/trunk", "c1"))
    )
    assert item is not None
    assert item.source_identity == "refs/heads/main"
    assert item.target_identity == "refs/heads/trunk"
    assert item.object_key == "branch main"


def test_deleted_on_source_with_target_present_is_a_delete():
    """Source gone, target present: DELETE expecting the observed target state."""
    link = link_to(branch("gone", "c1"))
    observed = branch("gone", "c1")
    item = decide(deleted_candidate(link), Observation(observed))
    assert item == PlannedItem(
        phase=Phase.GIT,
        object_type=GIT,
        object_key="branch gone",
        action=Action.DELETE,
        reason=Reason.DELETED_ON_SOURCE,
        source_identity="refs/heads/gone",
        target_identity="refs/heads/gone",
        source_revision=None,
        desired_hash=None,
        expected_target_hash=observed.content_hash,
        intent={"reason": "deleted_on_source", "expected_revision": oid("c1")},
        size=0,
    )


def test_deleted_on_source_expects_the_drifted_target_revision():
    """A delete's expectation is what was observed, even if it drifted from the link."""
    link = link_to(branch("gone", "c1"))
    item = decide(deleted_candidate(link), Observation(branch("gone", "c7")))
    assert item is not None
    assert item.action is Action.DELETE
    assert item.intent["expected_revision"] == oid("c7")


def test_deleted_on_source_with_target_already_absent_is_a_noop():
    """Source gone and target already absent: NOOP ALREADY_DELETED, named from the link."""
    link = link_to(tag("old", "c1"))
    item = decide(deleted_candidate(link), Observation(None))
    assert item == PlannedItem(
        phase=Phase.GIT,
        object_type=GIT,
        object_key="tag old",
        action=Action.NOOP,
        reason=Reason.ALREADY_DELETED,
        source_identity="refs/tags/old",
        target_identity="refs/tags/old",
        source_revision=None,
        desired_hash=None,
        expected_target_hash=None,
        intent={"reason": "already_deleted"},
        size=0,
    )


# -- decide: FULL_AUDIT ------------------------------------------------------------------


def test_full_audit_trusted_equal_link_needs_no_item():
    """Full audit: a trusted link whose target reads back equal yields no item (None)."""
    main = branch("main", "c1")
    link = link_to(main)
    assert (
        decide(linked_candidate(main, link, Reason.AUDIT), Observation(branch("main", "c1")))
        is None
    )


def test_full_audit_drifted_target_is_updated_with_reason_drift():
    """Full audit: a trusted link whose target drifted gets UPDATE DRIFT."""
    main = branch("main", "c1")
    link = link_to(main)
    drifted = branch("main", "c9")
    item = decide(linked_candidate(main, link, Reason.AUDIT), Observation(drifted))
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.DRIFT)
    assert item.expected_target_hash == drifted.content_hash
    assert item.desired_hash == main.content_hash
    assert item.intent == {
        "reason": "drift",
        "expected_revision": oid("c9"),
        "source_revision": oid("c1"),
    }


def test_full_audit_trusted_link_missing_on_target_is_recreated():
    """Full audit: a trusted link whose target vanished gets CREATE MISSING_ON_TARGET."""
    main = branch("main", "c1")
    item = decide(linked_candidate(main, link_to(main), Reason.AUDIT), Observation(None))
    assert item is not None
    assert (item.action, item.reason) == (Action.CREATE, Reason.MISSING_ON_TARGET)


def test_full_audit_drift_is_repaired_even_under_keep_target():
    """Drift on a managed link is ours to fix: the conflict policy does not apply."""
    main = branch("main", "c1")
    item = decide(
        linked_candidate(main, link_to(main), Reason.AUDIT),
        Observation(branch("main", "c9")),
        policy=RefConflictPolicy.KEEP_TARGET,
        is_ancestor=Oracle(False),
    )
    assert item is not None
    assert item.action is Action.UPDATE


# -- PlannedItem -------------------------------------------------------------------------


def test_planned_item_sort_key_orders_by_phase_action_type_key():
    """sort_key is (phase number, action rank, type, object key); deletes rank first, across
    types, so a name or number one type frees is free when another type takes it."""
    item = decide(new_candidate(branch("main", "c1")), None)
    assert item is not None
    assert item.sort_key == (0, ACTION_ORDER[Action.CREATE], "git_ref", "", "branch main")
    assert ACTION_ORDER[Action.DELETE] < ACTION_ORDER[Action.UPDATE] < ACTION_ORDER[Action.CREATE]


# -- whole plans through the helper that mirrors the planning stage -----------------------


def test_checkpoint_plan_reads_only_candidate_targets():
    """A checkpoint plan reads the target only for linked candidates, never skipped ones."""
    source = {
        "refs/heads/main": oid("c1"),
        "refs/heads/dev": oid("c3"),
        "refs/heads/new": oid("c4"),
    }
    links = links_of(
        link_to(branch("main", "c1")), link_to(branch("dev", "c2")), link_to(branch("gone", "c1"))
    )
    target = {
        "refs/heads/main": oid("c1"),
        "refs/heads/dev": oid("c2"),
        "refs/heads/gone": oid("c1"),
    }
    result = plan(PlanMode.CHECKPOINT, source, links, target)
    assert sorted(result.target_reads) == ["refs/heads/dev", "refs/heads/gone"]
    assert result.checkpoint_skipped == {"git_ref": 1}
    assert [(i.action, i.reason, i.object_key) for i in result.items] == [
        (Action.DELETE, Reason.DELETED_ON_SOURCE, "branch gone"),
        (Action.UPDATE, Reason.CHANGED, "branch dev"),
        (Action.CREATE, Reason.NEW, "branch new"),
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [("refs/heads/a", "refs/heads/a/b"), ("refs/heads/a/b", "refs/heads/a")],
    ids=["file_to_directory", "directory_to_file"],
)
def test_ref_deletion_is_batched_before_a_create_it_makes_room_for(old, new):
    """Git cannot hold refs/heads/a and refs/heads/a/b at once: the delete must run first.

    Batches run in number order and a git push refuses to create a ref whose name
    clashes with an existing one ("cannot lock ref ... exists"), so a source that
    replaced one by the other converges in one Run only if the delete's batch comes
    before the create's.
    """
    result = plan(
        PlanMode.CHECKPOINT,
        {new: oid("c2")},
        links_of(link_to(ref(old, "c1"))),
        {old: oid("c1")},
    )
    batch_of = {
        item.action: batch_no for item, batch_no in assign_batches(result.items, BatchLimits())
    }
    assert set(batch_of) == {Action.CREATE, Action.DELETE}
    assert batch_of[Action.DELETE] < batch_of[Action.CREATE]


def reaction_entry() -> IndexEntry:
    return IndexEntry(
        ObjectType.REACTION, "7", "reaction +1 by ann on #1", "#1/ann/+1", "1", "sha256:r"
    )


def test_archive_only_objects_are_recorded_never_written_or_read():
    """A reaction becomes a NOOP archive item; its target is never read, even linked."""
    item = decide(new_candidate(reaction_entry()), None)
    assert item is not None
    assert (item.action, item.reason) == (Action.NOOP, Reason.ARCHIVE_ONLY)
    entry = reaction_entry()
    link = LinkState(ObjectType.REACTION, "7", "archived:7", "1", "sha256:old", 1)
    selected = select_candidates(PlanMode.FULL_AUDIT, [entry], {(ObjectType.REACTION, "7"): link})
    assert [c.needs_target_read for c in selected.candidates] == [False]
    gone = select_candidates(PlanMode.CHECKPOINT, [], {(ObjectType.REACTION, "7"): link})
    [candidate] = gone.candidates
    assert not candidate.needs_target_read
    deleted = decide(candidate, None)
    assert deleted is not None
    assert (deleted.action, deleted.reason) == (Action.NOOP, Reason.ALREADY_DELETED)


def test_every_action_and_reason_is_produced_by_some_situation():
    """The examples above cover every Action and every item Reason (AUDIT is candidate-only;
    TEMPORARY_KEY comes from ``key_moves``, tested there)."""
    main1, main2 = branch("main", "c1"), branch("main", "c2")
    trusted = link_to(main1)
    situations = [
        (new_candidate(main1), None, {}),
        (
            linked_candidate(main2, link_to(main2, verified_label="c1"), Reason.CHANGED),
            Observation(main1),
            {},
        ),
        (linked_candidate(main1, trusted, Reason.CHANGED), Observation(None), {}),
        (linked_candidate(main1, trusted, Reason.AUDIT), Observation(main2), {}),
        (linked_candidate(main1, trusted, Reason.UNRELIABLE), Observation(main2), {}),
        (linked_candidate(main1, trusted, Reason.MAPPER_DIRTY), Observation(main2), {}),
        (deleted_candidate(trusted), Observation(main1), {}),
        (deleted_candidate(trusted), Observation(None), {}),
        (new_candidate(main1, baseline=True), Observation(main1), {}),
        (new_candidate(main2, baseline=True), Observation(main1), {"is_ancestor": Oracle(True)}),
        (
            new_candidate(main2, baseline=True),
            Observation(main1),
            {"policy": RefConflictPolicy.USE_SOURCE},
        ),
        (new_candidate(main2, baseline=True), Observation(main1), {}),
        (next(target_only([main1], set())), Observation(main1), {}),
        (new_candidate(reaction_entry()), None, {}),
        (
            new_candidate(default_branch("main").index_entry(), baseline=True),
            Observation(default_branch("master").index_entry()),
            {},
        ),
        (linked_candidate(main1, trusted, Reason.AUDIT), Observation(main1, misplaced=True), {}),
    ]
    items = [decide(candidate, observed, **kwargs) for candidate, observed, kwargs in situations]
    assert all(item is not None for item in items)
    assert {item.action for item in items if item is not None} == set(Action)
    assert {item.reason for item in items if item is not None} == set(Reason) - {
        Reason.AUDIT,
        Reason.TEMPORARY_KEY,
    }
    assert decide(linked_candidate(main1, trusted, Reason.AUDIT), Observation(main1)) is None


def test_a_misplaced_object_is_deleted_and_created_again_under_its_parent():
    """Equal content under the wrong parent is no equality: a child cannot move, so the
    stray is deleted and ``relocation`` creates it again (deletes run first)."""
    main1 = branch("main", "c1")
    candidate = linked_candidate(main1, link_to(main1), Reason.AUDIT)
    delete = decide(candidate, Observation(main1, misplaced=True))
    create = relocation(candidate)
    assert delete is not None
    assert (delete.action, delete.reason, delete.target_identity) == (
        Action.DELETE,
        Reason.MISPLACED,
        link_to(main1).target_identity,
    )
    assert (create.action, create.reason) == (Action.CREATE, Reason.MISPLACED)
    assert create.expected_target_hash is None  # created anew: nothing there to expect
    assert delete.sort_key < create.sort_key


def test_split_checkpoint_keeps_only_candidates_and_agrees_with_select_candidates():
    """Streaming split: trusted unchanged entries leave nothing behind; the rest match."""
    main1, dev2, new3 = branch("main", "c1"), branch("dev", "c2"), branch("new", "c3")
    links = links_of(link_to(main1), link_to(branch("dev", "c1")), link_to(branch("gone", "c9")))
    split = split_checkpoint([dev2, main1, new3], links)
    assert split.changed == [dev2, new3]
    assert split.gone == [(GIT, "refs/heads/gone")]
    assert split.scanned == {"git_ref": 3}
    assert split.checkpoint_skipped == {"git_ref": 1}
    reference = select_candidates(PlanMode.CHECKPOINT, [dev2, main1, new3], links)
    kept = [(c.source.identity if c.source else None, c.reason) for c in reference.candidates]
    restricted = {k: v for k, v in links.items() if k[1] != "refs/heads/main"}
    again = select_candidates(PlanMode.CHECKPOINT, split.changed, restricted)
    assert [(c.source.identity if c.source else None, c.reason) for c in again.candidates] == kept


@given(
    names=st.lists(
        st.text(alphabet="0123456789abcXYZ/-é", min_size=1, max_size=6), unique=True, max_size=20
    ),
    data=st.data(),
)
def test_split_checkpoint_lists_gone_links_in_inventory_order_whatever_the_links_order(names, data):
    """Issue 9 #1: links arrive in the database's row order ("2" before "10"); the gone
    list must come out in inventory order, which the snapshot's digest insists on."""
    gone_entries = [
        *(branch(name, "c1") for name in names),
        *(
            IndexEntry(ObjectType.ISSUE_COMMENT, name, f"comment {name}", None, "1", "sha256:c")
            for name in names[:3]
        ),
    ]
    order = data.draw(st.permutations(gone_entries))
    split = split_checkpoint([], links_of(*(link_to(entry) for entry in order)))
    expected = sorted((e.object_type.value, e.identity) for e in gone_entries)
    assert [(t.value, identity) for t, identity in split.gone] == expected
    digest = DigestBuilder()
    for object_type, identity in split.gone:  # raises when out of order
        digest.add(IndexEntry(object_type, identity, "", None, "", ""))


# -- shadow branches -----------------------------------------------------------------------


def test_a_gone_shadow_branch_is_deleted_after_its_pull_request_closed():
    """Shadow deletes run in the last phase (after the PR closes); other deletes in GIT."""
    shadow = branch("reposync/pr/7/head", "c1")
    plain = branch("topic", "c1")
    items = {
        entry.identity: decide(
            deleted_candidate(link_to(entry)),
            Observation(entry),
            policy=RefConflictPolicy.KEEP_TARGET,
        )
        for entry in (shadow, plain)
    }
    assert {name: (i.action, i.phase) for name, i in items.items() if i is not None} == {
        "refs/heads/reposync/pr/7/head": (Action.DELETE, Phase.ARCHIVE),
        "refs/heads/topic": (Action.DELETE, Phase.GIT),
    }


def test_a_new_shadow_branch_is_created_with_the_refs():
    """Creates go first, like any ref: the pull request is opened on it later."""
    item = decide(new_candidate(branch("reposync/pr/7/head", "c1")), None)
    assert item is not None
    assert (item.action, item.phase) == (Action.CREATE, Phase.GIT)
