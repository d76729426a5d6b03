"""``POST /webhooks/forgejo`` and ``/webhooks/gitea``, delivered by the Forgejo test server.

The API is served on a real socket and the test server's own hooks deliver to it, as a
Forgejo instance would: its headers, its signature, its payloads, its redeliveries and
the faults it can be told to make. A push owes the Binding whose authority the
repository is a Run, once, and moves its branch watch; a redelivery changes nothing; a
forged signature, another instance's secret or none configured records nothing. The
Runs themselves are the due task's (real workers: ``bench/webhook_latency.py --forge
forgejo``); here the dispatcher records what the API asked for.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from werkzeug.serving import make_server

from reposync.config import Settings
from reposync.forge_instances import ForgejoInstance
from reposync.models import Binding, BranchWatch, IncomingWebhook
from reposync.providers.base import EndpointInfo
from reposync.service.accounts.users import create_user
from reposync.service.context import ServiceContext
from reposync.service.webhooks.watches import create_watch
from reposync.web.app import create_app
from tests.fakes.forgejo import ForgejoFake
from tests.forgejo_env import instance, locator
from tests.gitrepo import commit_on, generate, refs
from tests.integration.web.conftest import url
from tests.integration.web.intake import Recorder, binding_row

REPO = "acme/app"
SECRET = "this instance's hook secret"
OTHER = ForgejoInstance("git.example.com", "https://git.example.com", "u" * 40, {}, "theirs")


@dataclass
class World:
    ctx: ServiceContext
    fake: ForgejoFake
    recorder: Recorder
    base: str  # the API's address on its socket
    repository_id: str  # <id>@<instance>
    source: Path  # a clone that pushes to the test server
    remote: str

    def push(self, message: str) -> str:
        after = commit_on(self.source, "refs/heads/main", message)
        subprocess.run(
            ["git", "--git-dir", str(self.source), "push", "-q", self.remote, "main"],
            check=True,
            capture_output=True,
        )
        return after

    def hook(self, provider: str = "forgejo", secret: str = SECRET, **kw: Any) -> None:
        kind = "gitea" if provider == "gitea" else "forgejo"
        self.fake.add_webhook(
            REPO, f"{self.base}/webhooks/{provider}", secret, events=["*"], kind=kind, **kw
        )

    def delivered(self) -> list[tuple[str, int | None]]:
        """What the test server's hooks got back: (event type, status) per delivery."""
        return [(d.event, d.status_code) for d in self.fake.webhooks.flush()]

    def records(self) -> list[tuple[str, str, str | None]]:
        with self.ctx.db.session() as session:
            rows = session.execute(
                select(
                    IncomingWebhook.provider, IncomingWebhook.event, IncomingWebhook.repository_id
                ).order_by(IncomingWebhook.id)
            ).all()
        return [tuple(row) for row in rows]  # type: ignore[misc]

    def binding(self, provider: str = "forgejo", *, authority: bool = True) -> int:
        """A Binding between the test server's repository and a local one (rows only)."""
        forgejo = {
            "provider": provider,
            "repository_id": self.repository_id,
            "locator": locator(self.fake, REPO),
        }
        local = {"provider": "local", "repository_id": f"l-{provider}-{authority}"}
        local["locator"] = f"/{local['repository_id']}.git"
        return binding_row(self.ctx, forgejo, local, authority_side="a" if authority else "b")

    def due(self, binding_id: int) -> bool:
        with self.ctx.db.session() as session:
            found = session.get(Binding, binding_id)
            assert found is not None
            return found.event_run_due_at is not None


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """The app on a socket of its own (the test server's hooks post to it)."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


def settings_for(ctx: ServiceContext, fake: ForgejoFake, secret: str = SECRET) -> Settings:
    mine = instance(fake, fake.add_token("acme"))
    return ctx.settings.with_overrides(
        forgejo_instances=(
            ForgejoInstance(mine.name, mine.url, mine.token, {}, secret),
            OTHER,
        )
    )


@pytest.fixture
def world(ctx: ServiceContext, forgejo_fake: ForgejoFake, tmp_path: Path) -> Iterator[World]:
    fake = forgejo_fake
    repo = fake.state.create_repo(REPO, auto_init=True)
    ctx.settings = settings_for(ctx, fake)
    recorder = Recorder()
    ctx.dispatcher = recorder
    source = generate(tmp_path / "source.git", commits=1, branches=0, tags=0)
    remote = fake.git_remote(REPO, fake.add_token("acme"))
    subprocess.run(
        ["git", "--git-dir", str(source), "fetch", "-q", remote, "+main:refs/heads/main"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["git", "--git-dir", str(source), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    name = instance(fake, "x").name
    with serve(create_app(ctx.settings, ctx=ctx)) as base:
        yield World(ctx, fake, recorder, base + url(""), f"{repo.id}@{name}", source, remote)


def test_a_push_the_test_server_delivers_owes_its_authority_a_run_and_moves_its_watch(world):
    """push and its pull request-less companions: 202, recorded under the repository's
    <id>@<instance>; the Binding whose authority it is owes a Run, the one where it is
    the standby does not; the branch watch on main moves to the pushed commit."""
    authority, standby = world.binding(), world.binding(authority=False)
    admin = create_user(world.ctx, "ada", role="admin")
    info = EndpointInfo("forgejo", locator(world.fake, REPO), world.repository_id)
    watch, _ = create_watch(world.ctx, info, "main", created_by=admin.id)
    world.hook()
    before = refs(world.source)["refs/heads/main"]

    after = world.push("a change")

    assert world.delivered() == [("push", 202)]
    assert world.records() == [("forgejo", "push", world.repository_id)]
    assert world.due(authority)
    assert not world.due(standby)
    assert [binding for binding, _ in world.recorder.event_runs] == [authority]
    with world.ctx.db.session() as session:
        row = session.get(BranchWatch, watch.id)
        assert row is not None
        assert (row.before, row.after, row.movements) == (before, after, 1)


def test_a_burst_owes_one_run_and_a_redelivery_changes_nothing(world):
    """Three deliveries (an issue opened, edited, commented) owe one Run; the "Redeliver"
    of the first answers 200 duplicate and records nothing more."""
    authority = world.binding()
    world.hook()
    api = world.fake.session(world.fake.add_token("acme"))
    issues = f"{world.fake.api_url}/repos/{REPO}/issues"
    api.post(issues, json={"title": "broken"}).raise_for_status()
    api.patch(f"{issues}/1", json={"title": "broken badly"}).raise_for_status()
    api.post(f"{issues}/1/comments", json={"body": "seen"}).raise_for_status()
    assert world.delivered() == [("issues", 202), ("issues", 202), ("issue_comment", 202)]
    first = world.fake.webhook_deliveries[0]
    world.fake.webhooks.redeliver(first)
    world.fake.webhooks.flush()
    assert [(a.redelivery, a.status_code) for a in first.attempts] == [(False, 202), (True, 200)]
    assert len(world.records()) == 3
    assert [binding for binding, _ in world.recorder.event_runs] == [authority]


def test_a_forged_signature_is_401_and_records_nothing(world):
    """The test server signing with a wrong secret (its bad_signature fault): 401, no
    record, no Run owed."""
    authority = world.binding()
    world.hook()
    world.fake.webhooks.faults.bad_signature("push")
    world.push("forged")
    assert world.delivered() == [("push", 401)]
    assert world.records() == []
    assert not world.due(authority)


def test_another_instance_s_secret_does_not_authenticate_this_instance_s_hook(world):
    """A hook given the other configured instance's secret: its deliveries name this
    instance's repository, so they are 401 and record nothing."""
    authority = world.binding()
    world.hook(secret=OTHER.webhook_secret)
    world.push("signed by the wrong instance")
    assert world.delivered() == [("push", 401)]
    assert world.records() == []
    assert not world.due(authority)


def test_gitea_hooks_reach_bindings_made_with_gitea_locators(world):
    """A gitea hook at /webhooks/gitea (X-Gitea-*, short refs) owes a Run to the gitea:
    Binding, not to the forgejo: one of the same repository."""
    forgejo, gitea = world.binding(), world.binding("gitea")
    world.hook("gitea", content_type="form")
    world.push("for gitea")
    assert world.delivered() == [("push", 202)]
    assert {provider for provider, _, _ in world.records()} == {"gitea"}
    assert world.due(gitea)
    assert not world.due(forgejo)


def test_without_a_secret_for_any_instance_deliveries_are_503(world):
    """No instance has a webhook_secret: 503 webhooks_not_configured, nothing recorded."""
    mine = world.ctx.settings.forgejo_instances[0]
    world.ctx.settings = world.ctx.settings.with_overrides(
        forgejo_instances=(ForgejoInstance(mine.name, mine.url, mine.token),)
    )
    world.hook()
    world.push("nobody listens")
    assert world.delivered() == [("push", 503)]
    assert world.records() == []
