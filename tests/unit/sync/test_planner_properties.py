"""Property-based tests of the planner's invariants (DESIGN.md, "Testing").

Refs are drawn from a small pool of names and commits so that overlaps (same name on
both sides, same commit, links to vanished refs) are frequent. Ancestry is a line:
commit ``c{i}`` is an ancestor of ``c{j}`` when ``i < j``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.sync.canonical import MAPPER_VERSION, git_ref_hash
from reposync.sync.planner import (
    LinkKey,
    LinkState,
    PlanMode,
    Reason,
    select_candidates,
)
from reposync.sync.vocabulary import Action, RefConflictPolicy
from tests.unit.sync.factories import GIT, apply, entries, oid, plan, trusted_links

FAST = settings(max_examples=150, deadline=None)

NAMES = [
    "refs/heads/main",
    "refs/heads/dev",
    "refs/heads/feature/x",
    "refs/heads/release",
    "refs/tags/v1",
    "refs/tags/v2",
    "refs/tags/v3",
]
COMMITS = [oid(f"c{i}") for i in range(6)]


def linear_is_ancestor(ancestor: str, descendant: str) -> bool:
    return COMMITS.index(ancestor) < COMMITS.index(descendant)


ref_maps = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(COMMITS), max_size=len(NAMES))


@st.composite
def link_maps(draw) -> dict[LinkKey, LinkState]:
    """Links for a random subset of names, in every state a link can be in."""
    links: dict[LinkKey, LinkState] = {}
    for name in draw(st.lists(st.sampled_from(NAMES), unique=True)):
        verified = draw(st.one_of(st.none(), st.sampled_from(COMMITS)))
        links[(GIT, name)] = LinkState(
            GIT,
            name,
            name,
            verified,
            git_ref_hash(verified) if verified is not None else None,
            draw(st.sampled_from([MAPPER_VERSION, MAPPER_VERSION - 1])),
            draw(st.booleans()),
        )
    return links


def expected_link_reason(link: LinkState, source_object_id: str) -> Reason | None:
    """The spec of a linked source entry's reason, written independently of the planner."""
    if link.verify_failed:
        return Reason.UNRELIABLE
    if link.mapper_version != MAPPER_VERSION:
        return Reason.MAPPER_DIRTY
    if link.verified_hash != git_ref_hash(source_object_id):
        return Reason.CHANGED
    return None


# -- candidate selection -----------------------------------------------------------------


@FAST
@given(source=ref_maps, links=link_maps())
def test_checkpoint_partitions_the_source_into_candidates_and_skips(source, links):
    """Checkpoint: scanned == skipped + source candidates; none is both skipped and candidate."""
    selected = select_candidates(PlanMode.CHECKPOINT, entries(source), links)
    source_candidates = [c for c in selected.candidates if c.source is not None]
    scanned = sum(selected.scanned.values())
    skipped = sum(selected.checkpoint_skipped.values())

    assert scanned == len(source)
    assert scanned == skipped + len(source_candidates)
    candidate_names = [c.source.identity for c in source_candidates if c.source is not None]
    assert len(candidate_names) == len(set(candidate_names))
    skipped_names = set(source) - set(candidate_names)
    assert len(skipped_names) == skipped
    for name in skipped_names:  # skipped == trusted link at the source's content
        link = links[(GIT, name)]
        assert link.trusted
        assert link.verified_hash == git_ref_hash(source[name])


@FAST
@given(source=ref_maps, links=link_maps())
def test_checkpoint_candidate_reasons_follow_the_spec(source, links):
    """Checkpoint: NEW without a link; else unreliable > mapper-dirty > changed; else skipped."""
    selected = select_candidates(PlanMode.CHECKPOINT, entries(source), links)
    reasons = {c.source.identity: c.reason for c in selected.candidates if c.source is not None}
    for name, object_id in source.items():
        link = links.get((GIT, name))
        expected = Reason.NEW if link is None else expected_link_reason(link, object_id)
        assert reasons.get(name) == expected


@FAST
@given(source=ref_maps, links=link_maps())
def test_checkpoint_reads_targets_only_for_candidates(source, links):
    """Checkpoint: every candidate ref is read on the target, a linked one where its link
    says, a new one by its name; the refs no candidate names are never read."""
    selected = select_candidates(PlanMode.CHECKPOINT, entries(source), links)
    for candidate in selected.candidates:
        assert candidate.needs_target_read
        if candidate.link is not None:
            assert candidate.target_identity == candidate.link.target_identity
        else:
            assert candidate.source is not None
            assert candidate.target_identity == candidate.source.unique_key


@FAST
@given(
    mode=st.sampled_from([PlanMode.CHECKPOINT, PlanMode.FULL_AUDIT]),
    source=ref_maps,
    links=link_maps(),
)
def test_every_link_missing_from_source_is_exactly_one_delete_candidate(mode, source, links):
    """A link whose source identity is gone yields exactly one DELETED_ON_SOURCE candidate."""
    selected = select_candidates(mode, entries(source), links)
    deletions = [c for c in selected.candidates if c.reason is Reason.DELETED_ON_SOURCE]
    assert sorted(c.link.source_identity for c in deletions if c.link is not None) == sorted(
        name for (_, name) in links if name not in source
    )
    assert all(c.source is None and c.needs_target_read for c in deletions)


@FAST
@given(source=ref_maps, links=link_maps())
def test_full_audit_skips_nothing(source, links):
    """Full audit: every source entry and every vanished link is a candidate."""
    selected = select_candidates(PlanMode.FULL_AUDIT, entries(source), links)
    vanished = [name for (_, name) in links if name not in source]
    assert selected.checkpoint_skipped == {}
    assert len(selected.candidates) == len(source) + len(vanished)


# -- convergence -------------------------------------------------------------------------


@FAST
@given(source=ref_maps)
def test_empty_target_run_converges_and_second_run_has_nothing_to_do(source):
    """Empty target: applying the plan makes target == source; a checkpoint re-plan is empty."""
    first = plan(PlanMode.EMPTY_TARGET, source, {}, {})
    assert all(item.action is Action.CREATE for item in first.items)
    assert first.target_reads == []
    applied = apply(first.items, {}, {})
    assert applied.rejected == []
    assert applied.target == source
    assert applied.links == trusted_links(source)

    second = plan(PlanMode.CHECKPOINT, source, applied.links, applied.target)
    assert second.candidates == []
    assert second.items == []
    assert sum(second.checkpoint_skipped.values()) == len(source)


@FAST
@given(before=ref_maps, after=ref_maps, unmanaged=ref_maps)
def test_checkpoint_after_source_changes_converges(before, after, unmanaged):
    """After source changes, a checkpoint Run converges managed refs; unmanaged refs stay."""
    unmanaged = {name: rev for name, rev in unmanaged.items() if name not in before}
    target = {**before, **unmanaged}
    links = trusted_links(before)

    first = plan(PlanMode.CHECKPOINT, after, links, target)
    assert set(first.target_reads) <= set(before)  # only linked refs are read
    applied = apply(first.items, target, links)

    # A new source ref meeting a different unmanaged ref is refused by its lease.
    collisions = {name for name in after if name in unmanaged and unmanaged[name] != after[name]}
    assert {item.target_identity for item in applied.rejected} == collisions
    expected = unmanaged | {name: rev for name, rev in after.items() if name not in collisions}
    assert applied.target == expected
    for name, rev in unmanaged.items():
        assert applied.target[name] == rev

    second = plan(PlanMode.CHECKPOINT, after, applied.links, applied.target)
    assert {c.source.identity for c in second.candidates if c.source is not None} == collisions
    assert all(c.reason is Reason.NEW for c in second.candidates)
    assert apply(second.items, applied.target, applied.links).target == applied.target


@FAST
@given(source=ref_maps, drift=ref_maps, removed=st.sets(st.sampled_from(NAMES)))
def test_full_audit_repairs_drift_and_then_finds_nothing(source, drift, removed):
    """A full audit after target drift (moved or deleted managed refs) restores target == source."""
    target = {name: drift.get(name, rev) for name, rev in source.items() if name not in removed}
    links = trusted_links(source)

    audit = plan(PlanMode.FULL_AUDIT, source, links, target)
    for item in audit.items:
        name = item.target_identity
        if name not in target:
            assert (item.action, item.reason) == (Action.CREATE, Reason.MISSING_ON_TARGET)
        else:
            assert (item.action, item.reason) == (Action.UPDATE, Reason.DRIFT)
            assert item.intent["expected_revision"] == target[name]
    drifted = {n for n in source if target.get(n) != source[n]}
    assert {item.target_identity for item in audit.items} == drifted
    assert audit.unchanged == len(source) - len(drifted)

    applied = apply(audit.items, target, links)
    assert applied.rejected == []
    assert applied.target == source

    again = plan(PlanMode.FULL_AUDIT, source, applied.links, applied.target)
    assert again.items == []
    assert again.unchanged == len(source)


@FAST
@given(source=ref_maps, links=link_maps(), target=ref_maps)
def test_checkpoint_from_any_link_state_converges(source, links, target):
    """From any link states (trusted ones truthful), one checkpoint Run converges the target."""
    # Linked and non-colliding refs end equal to the source, vanished ones are deleted,
    # and unlinked target refs the source does not name are never written.
    for (_, name), link in links.items():  # checkpoint's premise: a trusted link is true
        if link.trusted:
            assert link.verified_revision is not None
            target[name] = link.verified_revision
    untouchable = {n: r for n, r in target.items() if (GIT, n) not in links and n not in source}
    collisions = {
        n for n, r in source.items() if (GIT, n) not in links and n in target and target[n] != r
    }

    first = plan(PlanMode.CHECKPOINT, source, links, target)
    applied = apply(first.items, target, links)

    assert {item.target_identity for item in applied.rejected} == collisions
    assert applied.target == untouchable | {
        n: (target[n] if n in collisions else r) for n, r in source.items()
    }
    assert {name for (_, name) in applied.links} == set(source) - collisions
    assert all(link.trusted for link in applied.links.values())

    second = plan(PlanMode.CHECKPOINT, source, applied.links, applied.target)
    assert {c.source.identity for c in second.candidates if c.source is not None} == collisions
    assert all(c.reason is Reason.NEW for c in second.candidates)


@FAST
@given(
    source=ref_maps,
    target=ref_maps,
    policy=st.sampled_from(list(RefConflictPolicy)),
)
def test_baseline_adopts_reports_and_conflicts_but_never_loses_target_data(source, target, policy):
    """Baseline: adopt equal, create absent, report target-only, move collisions only if allowed."""
    # Collisions move only on a branch fast-forward or under use_source; nothing on the
    # target is lost: reported and conflicting refs keep their revision.
    first = plan(
        PlanMode.BASELINE, source, {}, target, policy=policy, is_ancestor=linear_is_ancestor
    )
    by_name = {item.target_identity: item for item in first.items}
    assert len(by_name) == len(first.items)
    assert set(by_name) == set(source) | set(target)

    for name, item in by_name.items():
        if name not in source:
            assert (item.action, item.reason) == (Action.REPORT, Reason.TARGET_ONLY)
        elif name not in target:
            assert (item.action, item.reason) == (Action.CREATE, Reason.NEW)
        elif target[name] == source[name]:
            assert (item.action, item.reason) == (Action.NOOP, Reason.ALREADY_EQUAL)
        elif name.startswith("refs/heads/") and linear_is_ancestor(target[name], source[name]):
            assert (item.action, item.reason) == (Action.UPDATE, Reason.FAST_FORWARD)
        elif policy is RefConflictPolicy.USE_SOURCE:
            assert (item.action, item.reason) == (Action.UPDATE, Reason.POLICY_USE_SOURCE)
        else:
            assert (item.action, item.reason) == (Action.CONFLICT, Reason.COLLISION)

    applied = apply(first.items, target, {})
    assert applied.rejected == []
    conflicts = {item.target_identity for item in first.items if item.action is Action.CONFLICT}
    for name, rev in target.items():
        if name not in source or name in conflicts:
            assert applied.target[name] == rev  # reported and conflicting refs are kept
    for name, rev in source.items():
        if name not in conflicts:
            assert applied.target[name] == rev
    if policy is RefConflictPolicy.USE_SOURCE:
        assert applied.target == {**target, **source}

    # The follow-up checkpoint only revisits the conflicts (still unlinked).
    second = plan(PlanMode.CHECKPOINT, source, applied.links, applied.target)
    assert {c.source.identity for c in second.candidates if c.source is not None} == conflicts
    assert all(c.reason is Reason.NEW for c in second.candidates)
