"""Wikis end to end: real repositories, real git, the pipeline in embedded mode.

A wiki is its own Git repository (a local forge's sibling ``<name>.wiki.git``, GitHub's
``<repo>.wiki.git``); its branches and tags are ``wiki_ref`` items planned, pushed with
leases, read back and reported like the repository's own refs.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from reposync.lifecycle import Stage
from reposync.service.bindings import SyncRequest, bind
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.service.runs import create_run
from reposync.sync.vocabulary import RefConflictPolicy
from tests.fakes.github import GitHubFake
from tests.github_env import embedded_world
from tests.gitrepo import commit_on, delete_refs, generate, refs, set_ref
from tests.integration.cli.test_embedded_sync import (
    finish,
    items_of,
    load_run,
    run_steps_until,
    synced_refs,
)

REPO = "acme/widgets"


def wiki_of(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".git") + ".wiki.git")


def with_wiki(path: Path) -> Path:
    """A repository with a wiki beside it: ``master`` with history, a branch, two tags."""
    generate(path, commits=4, branches=1, tags=1)
    wiki = generate(wiki_of(path), commits=6, branches=1, tags=2)
    set_ref(wiki, "refs/heads/master", refs(wiki)["refs/heads/main"])
    delete_refs(wiki, ["refs/heads/main"])
    return path


def wiki_items(ctx, run_id: int) -> set[tuple[str, str | None]]:
    return {
        (i.action, i.target_identity) for i in items_of(ctx, run_id) if i.object_type == "wiki_ref"
    }


@pytest.fixture
def pair(tmp_path, ctx):
    source = with_wiki(tmp_path / "src.git")
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    first = sync(ctx, request)
    assert first.status == "completed", first.report["problems"]
    return source, target, request, first


def test_a_local_wiki_is_created_beside_the_target_and_then_costs_nothing(pair, ctx):
    """The first Run creates the sibling wiki with every wiki ref, counted as wiki_ref;
    the next Run finds every wiki ref unchanged without reading the target."""
    source, target, request, first = pair
    assert synced_refs(wiki_of(target)) == synced_refs(wiki_of(source))
    assert synced_refs(target) == synced_refs(source)
    assert first.report["object_types"]["wiki_ref"]["created"] == 4  # master, 1 branch, 2 tags
    assert {i.object_key for i in items_of(ctx, first.id) if i.object_type == "wiki_ref"} == {
        "wiki branch master",
        "wiki branch branch-00000",
        "wiki tag v00000",
        "wiki tag v00001",
    }

    second = sync(ctx, request)
    assert second.status == "completed"
    assert items_of(ctx, second.id) == []
    assert second.report["object_types"]["wiki_ref"]["checkpoint_skipped"] == 4
    assert "target" not in second.report["io"]


def test_a_source_without_a_wiki_creates_none_on_the_target(tmp_path, ctx):
    """No wiki on the source: no wiki_ref item, and no wiki repository appears."""
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    target = tmp_path / "dst.git"
    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    assert run.status == "completed"
    assert wiki_items(ctx, run.id) == set()
    assert not wiki_of(target).exists()


def test_a_checkpoint_moves_exactly_the_changed_wiki_refs(pair, ctx):
    """A new page, a moved branch, a deleted tag and a new one: four wiki items, no
    main-repository item, and both repositories equal afterwards."""
    source, target, request, _ = pair
    wiki = wiki_of(source)
    commit_on(wiki, "refs/heads/master", "Home.md edited")
    commit_on(wiki, "refs/heads/branch-00000", "a draft page")
    delete_refs(wiki, ["refs/tags/v00001"])
    set_ref(wiki, "refs/tags/published", refs(wiki)["refs/heads/master"])

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert wiki_items(ctx, run.id) == {
        ("update", "refs/heads/master"),
        ("update", "refs/heads/branch-00000"),
        ("delete", "refs/tags/v00001"),
        ("create", "refs/tags/published"),
    }
    assert {i.object_type for i in items_of(ctx, run.id)} == {"wiki_ref"}
    assert run.report["object_types"]["wiki_ref"]["checkpoint_skipped"] == 1
    assert synced_refs(wiki_of(target)) == synced_refs(wiki)


def test_a_wiki_branch_moved_on_the_target_between_planning_and_push_is_a_conflict(pair, ctx):
    """The push lease catches an edit of the standby's wiki after planning: the item is a
    conflict, the edit is kept, nothing is overwritten."""
    source, target, request, _ = pair
    commit_on(wiki_of(source), "refs/heads/master", "authority edit")
    run = create_run(ctx, bind(ctx, request).id)
    step = run_steps_until(ctx, run.id, Stage.APPLYING)
    human = commit_on(wiki_of(target), "refs/heads/master", "standby edit meanwhile")
    finish(ctx, step)

    done = load_run(ctx, run.id)
    assert done.status == "requires_attention"
    assert done.counters["conflicts"] == 1
    assert refs(wiki_of(target))["refs/heads/master"] == human
    [item] = items_of(ctx, run.id)
    assert (item.object_type, item.state, item.error_code) == ("wiki_ref", "failed", "conflict")
    [problem] = done.report["problems"]
    assert (problem["error_code"], problem["object_type"]) == ("conflict", "wiki_ref")
    assert problem["examples"] == ["wiki branch master"]


def test_a_baseline_fast_forwards_a_wiki_branch_that_is_behind(tmp_path, ctx):
    """First Run on a standby that has a wiki: equal wiki refs are adopted, one behind is
    fast-forwarded (Git proves it in the wiki), a wiki-only page branch is preserved."""
    source = with_wiki(tmp_path / "src.git")
    target = tmp_path / "dst.git"
    for a, b in ((source, target), (wiki_of(source), wiki_of(target))):
        subprocess.run(["git", "clone", "-q", "--mirror", str(a), str(b)], check=True)
    wiki = wiki_of(target)
    behind = commit_on(wiki_of(source), "refs/heads/master", "newer page")
    set_ref(wiki, "refs/heads/standby-only", refs(wiki)["refs/heads/master"])

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert run.plan_mode == "baseline"
    assert run.status == "completed", run.report["problems"]
    reasons = {
        i.object_key: i.reason
        for i in items_of(ctx, run.id)
        if i.object_type == "wiki_ref" and i.action != "noop"
    }
    assert reasons == {
        "wiki branch master": "fast_forward",
        "wiki branch standby-only": "target_only",
    }
    assert refs(wiki)["refs/heads/master"] == behind


def test_handoff_keeps_the_wikis_equal_and_reverses_them(pair, ctx):
    """The handoff's reverse dry run sees no wiki difference; afterwards the new authority's
    wiki edits flow back."""
    source, target, request, _ = pair
    outcome = handoff(ctx, bind(ctx, request).id)
    assert outcome.switched, outcome.reason

    page = commit_on(wiki_of(target), "refs/heads/master", "edited on the new authority")
    back = sync(ctx, SyncRequest(request.target, request.source))

    assert back.status == "completed", back.report["problems"]
    assert wiki_items(ctx, back.id) == {("update", "refs/heads/master")}
    assert refs(wiki_of(source))["refs/heads/master"] == page
    assert synced_refs(wiki_of(source)) == synced_refs(wiki_of(target))


# -- GitHub ------------------------------------------------------------------------------


@pytest.fixture
def github(github_fake: GitHubFake, tmp_path: Path):
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        yield ctx, github_fake


def test_local_to_github_creates_the_wiki_by_its_first_push_then_github_to_local(tmp_path, github):
    """GitHub's wiki does not exist until the first push creates it; the rerun writes
    nothing; GitHub as a source hands the wiki on to a new local repository."""
    ctx, fake = github
    fake.state.create_repo(REPO, private=True)
    source = with_wiki(tmp_path / "src.git")
    request = SyncRequest(f"local:{source}", f"github:{REPO}")
    assert not fake.state.wiki_dir(REPO).exists()

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    assert synced_refs(fake.state.wiki_dir(REPO)) == synced_refs(wiki_of(source))
    assert first.report["object_types"]["wiki_ref"]["created"] == 4
    again = sync(ctx, request)
    assert again.status == "completed"
    assert items_of(ctx, again.id) == []

    back = tmp_path / "back.git"
    returned = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{back}"))
    assert returned.status == "completed", returned.report["problems"]
    assert synced_refs(wiki_of(back)) == synced_refs(wiki_of(source))
    assert returned.report["object_types"]["wiki_ref"]["created"] == 4


def test_a_checkpoint_to_github_pushes_only_the_changed_wiki_ref(tmp_path, github):
    """One page edited on the source: one wiki_ref update over smart HTTP, nothing else."""
    ctx, fake = github
    fake.state.create_repo(REPO, private=True)
    source = with_wiki(tmp_path / "src.git")
    request = SyncRequest(f"local:{source}", f"github:{REPO}")
    assert sync(ctx, request).status == "completed"
    commit_on(wiki_of(source), "refs/heads/master", "one more page")

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert [(i.object_type, i.action, i.target_identity) for i in items_of(ctx, run.id)] == [
        ("wiki_ref", "update", "refs/heads/master")
    ]
    assert synced_refs(fake.state.wiki_dir(REPO)) == synced_refs(wiki_of(source))


def test_a_disabled_github_wiki_is_a_problem_in_the_report_and_the_rest_syncs(tmp_path, github):
    """has_wiki off: every wiki item fails with wiki_disabled, the report says what to do,
    the repository's own refs still arrive and no wiki is created."""
    ctx, fake = github
    fake.state.create_repo(REPO, private=True, has_wiki=False)
    source = with_wiki(tmp_path / "src.git")

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "failed"
    problems = {p["error_code"]: p for p in run.report["problems"]}
    assert set(problems) == {"wiki_disabled"}
    disabled = problems["wiki_disabled"]
    assert (disabled["object_type"], disabled["count"], disabled["retryable"]) == (
        "wiki_ref",
        4,
        True,
    )
    assert "enable the wiki" in disabled["suggested_action"]
    assert "has_wiki is false" in disabled["message"]
    assert run.counters["failed"] == 4
    github_refs = synced_refs(fake.state.git_dir(REPO))
    assert github_refs == synced_refs(source)
    assert not fake.state.wiki_dir(REPO).exists()

    fake.state.repo(REPO).has_wiki = True
    enabled = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    assert enabled.status == "completed", enabled.report["problems"]
    assert synced_refs(fake.state.wiki_dir(REPO)) == synced_refs(wiki_of(source))


def test_a_github_wiki_without_a_first_page_is_a_problem_and_the_rest_syncs(tmp_path, github):
    """github.com keeps no wiki repository until a first page is saved in the browser and
    answers a push to it "Repository not found": every wiki item fails with
    wiki_not_initialized and the report says what to do (it was a git_transport_failed
    stage error, retried until the Run failed with nothing of the wiki explained); the
    repository's refs arrive. Once the first page exists it is the standby's own: the
    default keeps it (a conflict), a run that lets the authority win brings the wiki."""
    ctx, fake = github
    fake.wiki_created_by_push = False
    fake.state.create_repo(REPO, private=True)
    source = with_wiki(tmp_path / "src.git")
    request = SyncRequest(f"local:{source}", f"github:{REPO}")

    run = sync(ctx, request)

    assert run.status == "failed"
    problems = {p["error_code"]: p for p in run.report["problems"]}
    assert set(problems) == {"wiki_not_initialized"}
    missing = problems["wiki_not_initialized"]
    assert (missing["object_type"], missing["count"], missing["retryable"]) == ("wiki_ref", 4, True)
    assert "first page" in missing["suggested_action"]
    assert "wiki.git/' not found" in missing["message"]
    assert synced_refs(fake.state.git_dir(REPO)) == synced_refs(source)
    assert not fake.state.wiki_dir(REPO).exists()

    fake.state.create_wiki_page(REPO)
    kept = sync(ctx, request)  # the page is the standby's own: a conflict, kept
    assert kept.status == "requires_attention"
    assert {p["error_code"] for p in kept.report["problems"]} == {"conflict"}
    assert synced_refs(fake.state.wiki_dir(REPO)) != synced_refs(wiki_of(source))
    over = replace(request, conflict_policy=RefConflictPolicy.USE_SOURCE)
    created = sync(ctx, over)
    assert created.status == "completed", created.report["problems"]
    assert synced_refs(fake.state.wiki_dir(REPO)) == synced_refs(wiki_of(source))
