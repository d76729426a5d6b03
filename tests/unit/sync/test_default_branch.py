"""The default branch in the pure engine: a setting, one per repository (issue 10 #5)."""

from __future__ import annotations

import pytest

from reposync.sync.canonical import MAPPER_VERSION, default_branch
from reposync.sync.planner import (
    Candidate,
    LinkState,
    Observation,
    PlanMode,
    Reason,
    decide,
    select_candidates,
)
from reposync.sync.vocabulary import Action, ObjectType, Phase

T = ObjectType.DEFAULT_BRANCH


def entry(branch: str):  # type: ignore[no-untyped-def]
    return default_branch(branch).index_entry()


def link(branch: str) -> LinkState:
    return LinkState(T, "HEAD", "HEAD", branch, entry(branch).content_hash, MAPPER_VERSION)


def test_builder_names_the_short_branch_and_refuses_what_is_no_branch() -> None:
    obj = default_branch("release/2.x")
    assert (obj.identity, obj.unique_key, obj.payload) == (
        "HEAD",
        "HEAD",
        {"branch": "release/2.x"},
    )
    assert obj.object_type.phase is Phase.TAXONOMY  # after the refs it names
    for bad in ("", "a..b", "x.lock", "has space"):
        with pytest.raises(ValueError, match="not a branch name"):
            default_branch(bad)
    long = "b" * 300
    assert len(default_branch(long).revision) <= 255  # stored in 255 characters


def test_a_differing_target_on_a_baseline_is_updated_never_a_conflict() -> None:
    [candidate] = select_candidates(PlanMode.BASELINE, [entry("main")], {}).candidates
    assert candidate.target_identity == "HEAD"
    item = decide(candidate, Observation(entry("master")))
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.AUTHORITY_SETTING)
    assert item.target_identity == "HEAD"


def test_a_new_one_in_a_checkpoint_is_created_on_head_unread() -> None:
    [candidate] = select_candidates(PlanMode.CHECKPOINT, [entry("main")], {}).candidates
    item = decide(candidate, None)
    assert item is not None
    assert (item.action, item.target_identity, item.phase) == (
        Action.CREATE,
        "HEAD",
        Phase.TAXONOMY,
    )


def test_unchanged_is_skipped_and_a_change_is_an_update() -> None:
    links = {(T, "HEAD"): link("main")}
    same = select_candidates(PlanMode.CHECKPOINT, [entry("main")], links)
    assert same.candidates == []
    assert same.checkpoint_skipped == {"default_branch": 1}
    [changed] = select_candidates(PlanMode.CHECKPOINT, [entry("dev")], links).candidates
    item = decide(changed, Observation(entry("main")))
    assert item is not None
    assert (item.action, item.reason) == (Action.UPDATE, Reason.CHANGED)


def test_a_source_without_one_never_deletes_the_target_setting() -> None:
    gone = Candidate(T, None, link("main"), Reason.DELETED_ON_SOURCE, "HEAD")
    item = decide(gone, Observation(entry("main")))
    assert item is not None
    assert (item.action, item.reason) == (Action.NOOP, Reason.ALREADY_DELETED)
