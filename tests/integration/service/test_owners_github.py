"""Whole owners with GitHub on one side, against the GitHub test server (every exchange
contract-checked): an organization's repositories created as private as their local
sources, a GitHub organization bound into a directory, the visibility rule for an
existing target more public than its source, credentials that may not create reported
per repository, and the write budget spent under each Binding's own name."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.lifecycle import Stage
from reposync.models import Binding, WriteBudgetEvent
from reposync.service import owners
from reposync.service.context import Step
from reposync.service.owners import OwnerRequest
from reposync.service.pipeline.runner import run_until_done
from tests.fakes.github import GitHubFake
from tests.github_env import embedded_world
from tests.gitrepo import generate, refs
from tests.integration.forges.test_forge_sync import forge


@pytest.fixture
def world(github_fake: GitHubFake, tmp_path: Path):
    """An embedded context with acme's token; acme is a member of the acme-org
    organization (members create its repositories)."""
    github_fake.state.add_member("acme-org", "acme")
    github_fake.limiter.secondary.per_minute = github_fake.limiter.secondary.per_hour = 10_000
    with embedded_world(github_fake, tmp_path) as (ctx, _recorder):
        yield ctx, github_fake


def outcomes(report: owners.PassReport | None) -> dict[str, str]:
    assert report is not None
    return {repo.name: repo.outcome.value for repo in report.repositories}


def test_a_directory_is_bound_into_an_organization_as_private_repositories(world, tmp_path):
    """Each local repository gets a private GitHub repository of its name in the
    organization (local is private: never more public) and a Binding whose first Run
    brings its history there."""
    ctx, fake = world
    for name in ("api", "web"):
        generate(tmp_path / "src" / f"{name}.git", commits=2, branches=1, tags=1)
    _, report = owners.bind_all(ctx, OwnerRequest(f"local:{tmp_path / 'src'}", "github:acme-org"))
    assert outcomes(report) == {"api": "created", "web": "created"}
    for name in ("api", "web"):
        made = fake.state.repo(f"acme-org/{name}")
        assert made.private
    assert report is not None
    first = report.repositories[0]
    assert first.run_id is not None
    run_until_done(ctx, Step(first.run_id, Stage.CHECKING_ACCESS, None))
    assert refs(fake.state.git_dir("acme-org/api")) == refs(tmp_path / "src" / "api.git")


def test_an_organization_is_bound_into_a_directory(world, tmp_path):
    """A GitHub organization's repositories, public and private, each get a local
    repository of their name (private: less public than either is allowed)."""
    ctx, fake = world
    fake.state.create_repo("acme-org/open", auto_init=True, collaborators=["acme"])
    fake.state.create_repo("acme-org/closed", private=True, collaborators=["acme"])
    (tmp_path / "mirror").mkdir()
    _, report = owners.bind_all(
        ctx, OwnerRequest("github:acme-org", f"local:{tmp_path / 'mirror'}")
    )
    assert outcomes(report) == {"closed": "created", "open": "created"}
    assert sorted(p.name for p in (tmp_path / "mirror").iterdir()) == ["closed.git", "open.git"]
    with ctx.db.session() as session:
        visibilities = dict(session.execute(select(Binding.a_locator, Binding.a_visibility)).all())
    assert visibilities == {"acme-org/closed": "private", "acme-org/open": "public"}


def test_an_existing_public_target_of_a_private_source_needs_the_operators_yes(world, tmp_path):
    """An empty public GitHub repository named like a local (private) one is not bound
    without confirm_visibility (failed, visibility_unconfirmed, no Binding); with it, it
    is bound and the confirmation stored."""
    ctx, fake = world
    generate(tmp_path / "src" / "site.git", commits=1, branches=0, tags=0)
    fake.state.create_repo("acme-org/site", collaborators=["acme"])
    plain = OwnerRequest(f"local:{tmp_path / 'src'}", "github:acme-org")
    _, report = owners.bind_all(ctx, plain)
    assert report is not None
    [refused] = report.repositories
    assert (refused.outcome.value, refused.error_code) == ("failed", "visibility_unconfirmed")
    with ctx.db.session() as session:
        assert session.execute(select(Binding)).first() is None
    confirmed = OwnerRequest(
        f"local:{tmp_path / 'src'}", "github:acme-org", confirm_visibility=True
    )
    _, report = owners.bind_all(ctx, confirmed)
    assert outcomes(report) == {"site": "bound"}
    with ctx.db.session() as session:
        binding = session.execute(select(Binding)).scalar_one()
    assert binding.visibility_confirmation is not None


def test_credentials_that_may_not_create_are_reported_per_repository(world, tmp_path):
    """In an organization the token's user is no member of, every missing target is a
    failed outcome with GitHub's refusal (permission_denied), and the pass goes on."""
    ctx, fake = world
    fake.state.user("strangers", type="Organization")
    for name in ("a", "b"):
        generate(tmp_path / "src" / f"{name}.git", commits=1, branches=0, tags=0)
    _, report = owners.bind_all(ctx, OwnerRequest(f"local:{tmp_path / 'src'}", "github:strangers"))
    assert report is not None
    assert [(r.outcome.value, r.error_code) for r in report.repositories] == [
        ("failed", "permission_denied"),
        ("failed", "permission_denied"),
    ]
    assert report.needs_action()


def test_each_bindings_writes_are_counted_under_its_own_name(world, tmp_path):
    """The write budget records which Binding spent each write (its fair share's
    claimant): a Run creating labels on GitHub spends them as ``binding:<id>``."""
    ctx, _fake = world
    path = generate(tmp_path / "src" / "tools.git", commits=1, branches=0, tags=0)
    with forge(path) as authoring:
        authoring.create_label("bug", color="d73a4a")
        authoring.create_label("feature", color="a2eeef")
    _, report = owners.bind_all(ctx, OwnerRequest(f"local:{tmp_path / 'src'}", "github:acme-org"))
    assert report is not None
    [made] = report.repositories
    assert made.run_id is not None
    run_until_done(ctx, Step(made.run_id, Stage.CHECKING_ACCESS, None))
    with ctx.db.session() as session:
        claimants = session.execute(select(WriteBudgetEvent.claimant)).scalars().all()
    # the repository's creation (outside any Run) and the Run's two labels
    assert sorted(claimants, key=str) == sorted(
        [None, *[f"binding:{made.binding_id}"] * 2], key=str
    )


def test_the_git_hosts_rate_limit_stops_a_pass_as_the_apis_does(world, tmp_path):
    """Binding into existing repositories asks each whether it is empty, and git lists
    its refs; the Git host answering 429 is its limit (``git_rate_limited``), which
    every repository after it would meet too: the pass stops and says so, as it does for
    the API's limit, and the next pass goes on. Before, each repository failed on its
    own with the same answer, and the pass went on asking."""
    ctx, fake = world
    for name in ("api", "web"):
        generate(tmp_path / "src" / f"{name}.git", commits=1, branches=0, tags=0)
        fake.state.create_repo(f"acme-org/{name}", private=True, collaborators=["acme"])
    fake.faults.error("GET", r"/info/refs$", status=429, host="git", count=None)

    _, report = owners.bind_all(ctx, OwnerRequest(f"local:{tmp_path / 'src'}", "github:acme-org"))

    assert report is not None
    assert report.error_code == "git_rate_limited", outcomes(report)
    assert "HTTP 429" in (report.message or "")
    assert [repo.outcome.value for repo in report.repositories if repo.error_code] == []
    asked = fake.requests_log.matching("GET", r"/info/refs$", host="git")
    assert len(asked) == 1, "the pass asked again after the limit"

    fake.faults.clear()
    _, report = owners.bind_all(ctx, OwnerRequest(f"local:{tmp_path / 'src'}", "github:acme-org"))
    assert outcomes(report) == {"api": "bound", "web": "bound"}
