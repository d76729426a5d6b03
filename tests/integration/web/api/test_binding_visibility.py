"""A Binding whose standby is more public than its authority needs a confirmation when it
is made, through the API and the web page alike (the CLI's is in test_visibility.py).

The source is a local forge (private); the GitHub test server's repository is public.
A refused creation writes nothing: no Binding row, and the problem names the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

from reposync.models import Binding
from reposync.models.db import Database
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from tests.github_env import github_context
from tests.gitrepo import generate
from tests.integration.web.conftest import assert_problem, bearer, url
from tests.integration.web.pages.test_pages import csrf_of, sign_in

PUBLIC = "acme/public-mirror"
PRIVATE = "acme/private-mirror"


class World:
    def __init__(self, ctx: ServiceContext, source: Path) -> None:
        self.ctx = ctx
        self.source = f"local:{source}"
        self.client: FlaskClient = create_app(ctx.settings, ctx=ctx).test_client()
        self.token = issue_token(ctx, create_user(ctx, "ada", role="admin").id)
        self.admin = bearer(self.token)

    def bindings(self) -> int:
        with self.ctx.db.session() as session:
            return session.execute(select(func.count()).select_from(Binding)).scalar_one()


@pytest.fixture
def world(tmp_path: Path, github_fake) -> Iterator[World]:
    github_fake.state.create_repo(PUBLIC, private=False)
    github_fake.state.create_repo(PRIVATE, private=True)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    token = github_fake.add_token("acme")
    ctx, recorder = github_context(
        github_fake, db, tmp_path / "data", token, local_roots=(tmp_path,)
    )
    try:
        yield World(ctx, source)
    finally:
        db.dispose()
    assert recorder.violations == []


def test_the_api_refuses_a_more_public_standby_without_confirmation(world):
    """POST /bindings of private -> public without confirm_visibility: 409, no Binding."""
    refused = world.client.post(
        url("/bindings"),
        headers=world.admin,
        json={"source": world.source, "target": f"github:{PUBLIC}"},
    )

    problem = assert_problem(refused, 409, "visibility_unconfirmed")
    assert "public" in problem["detail"]
    assert "private" in problem["detail"]
    assert "confirm_visibility" in problem["suggested_action"]
    assert world.bindings() == 0


def test_the_api_binds_a_more_public_standby_once_confirmed(world):
    """With confirm_visibility the Binding is made, confirmed, both visibilities shown."""
    made = world.client.post(
        url("/bindings"),
        headers=world.admin,
        json={"source": world.source, "target": f"github:{PUBLIC}", "confirm_visibility": True},
    )

    assert made.status_code == 201, made.get_data(as_text=True)
    assert made.json["visibility_confirmed"] is True
    assert (made.json["a"]["visibility"], made.json["b"]["visibility"]) == ("private", "public")


def test_the_api_binds_an_equally_private_standby_without_confirmation(world):
    """private -> private needs no yes: 201, nothing confirmed."""
    made = world.client.post(
        url("/bindings"),
        headers=world.admin,
        json={"source": world.source, "target": f"github:{PRIVATE}"},
    )

    assert made.status_code == 201, made.get_data(as_text=True)
    assert made.json["visibility_confirmed"] is False


def test_the_page_refuses_a_more_public_standby_unless_its_box_is_ticked(world):
    """The New Binding form: refused with the problem page (nothing written) until the
    visibility checkbox is ticked; then the Binding's page."""
    sign_in(world.client, world.token)
    form = {"source": world.source, "target": f"github:{PUBLIC}"}

    refused = world.client.post(
        "/bindings", data={**form, "csrf": csrf_of(world.client.get("/").get_data(as_text=True))}
    )

    page = refused.get_data(as_text=True)
    assert refused.status_code == 409, page
    assert "visibility_unconfirmed" in page
    assert "visibility checkbox" in page
    assert world.bindings() == 0

    confirmed = world.client.post(
        "/bindings",
        data={
            **form,
            "confirm_visibility": "1",
            "csrf": csrf_of(world.client.get("/").get_data(as_text=True)),
        },
    )

    assert confirmed.status_code == 302, confirmed.get_data(as_text=True)
    assert world.bindings() == 1
    with world.ctx.db.session() as session:
        binding = session.execute(select(Binding)).scalar_one()
        assert binding.visibility_confirmation is not None
