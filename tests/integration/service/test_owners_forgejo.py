"""Whole owners with Forgejo on one side, against the Forgejo test server (every exchange
checked against Forgejo's description): a directory bound into a Forgejo organization
creates its repositories there, as private as their sources, and the first Runs bring
their history; a Forgejo organization is bound into a directory; a second pass binds
nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.lifecycle import Stage
from reposync.models import Binding
from reposync.service import owners
from reposync.service.context import ServiceContext, Step
from reposync.service.owners import OwnerRequest
from reposync.service.pipeline.runner import run_until_done
from tests.fakes.forgejo import ForgejoFake
from tests.forgejo_env import embedded_world, locator
from tests.gitrepo import generate, refs

ORG = "acme-org"


@pytest.fixture
def world(forgejo_fake: ForgejoFake, tmp_path: Path) -> Iterator[tuple[ServiceContext, Any]]:
    """An embedded context with acme's token; acme is a member of the organization."""
    forgejo_fake.state.create_org(ORG, members=["acme"])
    with embedded_world(forgejo_fake, tmp_path) as ctx:
        yield ctx, forgejo_fake


def owner(fake: ForgejoFake) -> str:
    """``forgejo:<instance>/acme-org``: the organization, on the test server's instance."""
    return f"forgejo:{locator(fake, ORG).rsplit('/', 1)[0]}/{ORG}"


def outcomes(report: owners.PassReport | None) -> dict[str, str]:
    assert report is not None
    return {repo.name: repo.outcome.value for repo in report.repositories}


def test_a_directory_is_bound_into_a_forgejo_organization(world, tmp_path):
    """Each local repository gets a private Forgejo repository of its name in the
    organization and a Binding whose first Run brings its history there; binding the
    same owners again creates and binds nothing more."""
    ctx, fake = world
    for name in ("api", "web"):
        generate(tmp_path / "src" / f"{name}.git", commits=2, branches=1, tags=1)
    request = OwnerRequest(f"local:{tmp_path / 'src'}", owner(fake))

    _, report = owners.bind_all(ctx, request)

    assert outcomes(report) == {"api": "created", "web": "created"}
    assert report is not None
    for name, member in zip(("api", "web"), report.repositories, strict=True):
        made = fake.state.repo(f"{ORG}/{name}")
        assert made.private
        assert member.run_id is not None
        run_until_done(ctx, Step(member.run_id, Stage.CHECKING_ACCESS, None))
        assert refs(made.git_dir) == refs(tmp_path / "src" / f"{name}.git")
    _, again = owners.bind_all(ctx, request)
    assert set(outcomes(again).values()) == {"already_bound"}
    with ctx.db.session() as session:
        assert len(session.execute(select(Binding.id)).all()) == 2


def test_a_forgejo_organization_is_bound_into_a_directory(world, tmp_path):
    """A Forgejo organization's repositories, public and private, each get a local
    repository of their name; the Bindings name them <id>@<instance>."""
    ctx, fake = world
    public = fake.state.create_repo(f"{ORG}/open", auto_init=True)
    private = fake.state.create_repo(f"{ORG}/closed", private=True, auto_init=True)
    (tmp_path / "mirror").mkdir()

    _, report = owners.bind_all(ctx, OwnerRequest(owner(fake), f"local:{tmp_path / 'mirror'}"))

    assert outcomes(report) == {"closed": "created", "open": "created"}
    assert sorted(p.name for p in (tmp_path / "mirror").iterdir()) == ["closed.git", "open.git"]
    instance = locator(fake, ORG).rsplit("/", 1)[0]
    with ctx.db.session() as session:
        sides = set(session.execute(select(Binding.a_repository_id, Binding.a_visibility)).all())
    assert sides == {(f"{public.id}@{instance}", "public"), (f"{private.id}@{instance}", "private")}
