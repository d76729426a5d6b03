"""The default branch (Git's HEAD, GitHub's ``default_branch``) is synced like any object.

Issue 10 #5: the source's HEAD named ``refs/heads/main`` while the target's stayed at a
nonexistent ``refs/heads/master`` (``git clone`` warned "remote HEAD refers to
nonexistent ref"). Real git, real repositories, the GitHub test server over HTTP.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.sync.vocabulary import ObjectType
from tests.fakes.github import GitHubFake
from tests.github_env import embedded_world
from tests.gitrepo import generate

REPO = "acme/widgets"


def head_of(path: Path) -> str:
    """What a bare repository's HEAD points at (a symbolic ref, existing or not)."""
    return subprocess.run(
        ["git", f"--git-dir={path}", "symbolic-ref", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def set_head(path: Path, ref: str) -> None:
    subprocess.run(["git", f"--git-dir={path}", "symbolic-ref", "HEAD", ref], check=True)


def clone_warnings(url: str, where: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", "clone", "-q", url, str(where)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return result.stderr


def default_branch_items(ctx: ServiceContext, run_id: int) -> list[RunItem]:
    with ctx.db.session() as session:
        return list(
            session.execute(
                select(RunItem).where(
                    RunItem.run_id == run_id,
                    RunItem.object_type == ObjectType.DEFAULT_BRANCH.value,
                )
            ).scalars()
        )


def source_repo(tmp_path: Path) -> Path:
    source = generate(tmp_path / "src.git", commits=6, branches=2, tags=1)
    set_head(source, "refs/heads/main")  # ``git init --bare`` left it at master
    return source


def test_local_target_gets_the_source_head_and_follows_its_changes(tmp_path, ctx):
    source = source_repo(tmp_path)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    assert head_of(target) == "refs/heads/main"
    assert first.report["default_branch"] == {
        "source": "main",
        "action": "create",
        "state": "completed",
    }
    assert first.report["object_types"]["default_branch"]["created"] == 1
    assert "nonexistent" not in clone_warnings(str(target), tmp_path / "clone")

    second = sync(ctx, request)  # no change: nothing planned, nothing written
    assert second.status == "completed"
    assert default_branch_items(ctx, second.id) == []
    assert second.report["default_branch"] == {"source": "main", "action": "unchanged"}

    set_head(source, "refs/heads/branch-00001")
    dry = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}", dry_run=True))
    assert dry.report["default_branch"] == {
        "source": "branch-00001",
        "action": "update",
        "state": "planned",
    }
    assert head_of(target) == "refs/heads/main"  # a dry run writes nothing

    third = sync(ctx, request)  # a checkpoint picks the change up
    assert third.status == "completed", third.report["problems"]
    assert third.plan_mode == "checkpoint"
    [item] = default_branch_items(ctx, third.id)
    assert (item.action, item.state) == ("update", "completed")
    assert head_of(target) == "refs/heads/branch-00001"


def test_a_source_head_naming_no_branch_leaves_the_target_alone(tmp_path, ctx):
    source = generate(tmp_path / "src.git", commits=3, branches=0, tags=0)  # HEAD: master
    target = tmp_path / "dst.git"
    result = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    assert result.status == "completed", result.report["problems"]
    assert default_branch_items(ctx, result.id) == []
    assert "default_branch" not in result.report


def test_first_baseline_moves_a_differing_target_head(tmp_path, ctx):
    """A non-empty target whose HEAD differs: the source's default branch wins (it is a
    setting, nothing is lost), never a conflict."""
    source = source_repo(tmp_path)
    target = tmp_path / "dst.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(source), str(target)], check=True)
    set_head(target, "refs/heads/branch-00000")

    result = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert result.status == "completed", result.report["problems"]
    assert result.plan_mode == "baseline"
    assert head_of(target) == "refs/heads/main"
    [item] = default_branch_items(ctx, result.id)
    assert (item.action, item.state) == ("update", "completed")


@pytest.fixture(params=["github.com", "ghes"])
def github(tmp_path: Path, request: pytest.FixtureRequest):
    """Both layouts of the GitHub test server (GitHub Enterprise Server: one host)."""
    with GitHubFake(layout=request.param) as fake:
        # A repository whose default branch will name nothing once reposync pushed main.
        fake.state.create_repo(REPO, private=True, default_branch="master")
        with embedded_world(fake, tmp_path) as (world_ctx, _):
            yield world_ctx, fake
        fake.assert_clean()


def test_github_target_default_branch_is_set_after_the_refs(tmp_path, github):
    ctx, fake = github
    source = source_repo(tmp_path)
    request = SyncRequest(f"local:{source}", f"github:{REPO}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    token = fake.add_token("acme")
    data = fake.session(token).get(f"{fake.api_url}/repos/{REPO}").json()
    assert data["default_branch"] == "main"
    assert head_of(Path(fake.state.git_dir(REPO))) == "refs/heads/main"
    patches = [r for r in fake.requests_log if r.method == "PATCH" and r.path == f"/repos/{REPO}"]
    assert [r.status for r in patches] == [200]

    second = sync(ctx, request)
    assert second.status == "completed"
    assert default_branch_items(ctx, second.id) == []

    # And back: GitHub's default branch becomes a local standby's HEAD.
    back = tmp_path / "back.git"
    returned = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{back}"))
    assert returned.status == "completed", returned.report["problems"]
    assert head_of(back) == "refs/heads/main"


def test_a_lost_patch_answer_is_settled_by_reading_the_default_branch_back(tmp_path, github):
    """The PATCH lands but its answer is lost (502 after the commit): read-back proves it,
    the item completes in the same Run, nothing is blocked and nothing sent twice."""
    ctx, fake = github
    source = source_repo(tmp_path)
    rule = fake.faults.commit_then_drop("PATCH", f"/repos/{REPO}")

    result = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert result.status == "completed", result.report["problems"]
    assert rule.hits == 1
    assert head_of(Path(fake.state.git_dir(REPO))) == "refs/heads/main"
    patches = [r for r in fake.requests_log if r.method == "PATCH" and r.path == f"/repos/{REPO}"]
    assert [r.status for r in patches] == [502]
    [item] = default_branch_items(ctx, result.id)
    assert (item.state, item.attempt_count) == ("completed", 1)


def test_handoff_carries_the_default_branch_both_ways(tmp_path, ctx):
    source = source_repo(tmp_path)
    standby = tmp_path / "b.git"
    request = SyncRequest(f"local:{source}", f"local:{standby}")
    assert sync(ctx, request).status == "completed"
    set_head(source, "refs/heads/branch-00000")  # changed just before the handoff

    outcome = handoff(ctx, bind(ctx, request).id)

    assert outcome.switched, outcome.reason
    assert head_of(standby) == "refs/heads/branch-00000"  # the final forward sync set it
    set_head(standby, "refs/heads/main")  # the new authority changes it
    back = sync(ctx, SyncRequest(f"local:{standby}", f"local:{source}"))
    assert back.status == "completed", back.report["problems"]
    assert head_of(source) == "refs/heads/main"


def test_a_handoff_from_a_source_whose_head_names_no_branch_succeeds(tmp_path):
    """The old authority's HEAD names no branch (``git init --bare`` left ``master``), the
    standby has one (GitHub's): the reverse dry-run plans to give the old authority that
    default branch. Nothing of its is lost by it, so the handoff no longer aborts."""
    with GitHubFake() as fake:
        fake.state.create_repo(REPO, private=True, default_branch="main")
        with embedded_world(fake, tmp_path) as (ctx, _):
            source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)
            assert head_of(source) == "refs/heads/master"  # names no branch
            request = SyncRequest(f"local:{source}", f"github:{REPO}")
            assert sync(ctx, request).status == "completed"

            outcome = handoff(ctx, bind(ctx, request).id)

            assert outcome.switched, outcome.reason
