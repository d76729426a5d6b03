"""Webhooks in, for real: ``reposync api`` (gunicorn), celery workers with beat,
PostgreSQL, Redis, the GitHub test server as the authority and a local standby.

A change is made on the GitHub test server the way a push lands there (a commit in its
repository), and the delivery GitHub would send is built from the schema, signed and
posted to the API (until the test server delivers webhooks itself: then only
``deliver`` changes). Every wait is on an observable end state (the standby's ref, a
Run's status); "nothing happened" is asserted only on what the API did synchronously.
"""

from __future__ import annotations

import http.client
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import func, select

from reposync.lifecycle import AuditMode, Trigger
from reposync.models import Binding, IncomingWebhook, Run
from reposync.service.bindings import SyncRequest, bind, update_binding
from reposync.service.context import ServiceContext
from reposync.service.runs import enqueue_run
from reposync.web.limits import WEBHOOK_MAX_BODY_BYTES
from tests import webhooks
from tests.github_env import github_fields, github_worker_env
from tests.gitrepo import commit_on, generate, refs
from tests.integration.conftest import TERMINAL, run_row, wait_terminal
from tests.servers import free_port
from tests.workers import start_api, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

SECRET = "webhook secret of the distributed tests"
REPO = "acme/app"
PATH = "/api/ext/v1/sync/webhooks/github"


@dataclass
class World:
    ctx: ServiceContext
    binding_id: int
    repository_id: int
    git_dir: Path  # the GitHub test server's repository (a commit there is a push)
    standby: Path
    base: str
    port: int
    fake: Any
    token: str

    def deliver(
        self, event: str, body: dict[str, Any], *, delivery_id: str | None = None
    ) -> requests.Response:
        """POST the delivery as GitHub sends it (headers, signature)."""
        raw = webhooks.encode(body)
        return requests.post(
            self.base + PATH,
            data=raw,
            headers=webhooks.headers(event, raw, SECRET, delivery_id),
            timeout=30,
        )

    def push(self, ref: str, message: str) -> tuple[dict[str, Any], str]:
        """A commit lands on ``ref`` of the authority; returns GitHub's push payload."""
        before = refs(self.git_dir).get(ref, "0" * 40)
        after = commit_on(self.git_dir, ref, message)
        return webhooks.push(self.repository_id, REPO, ref, before, after), after

    def standby_ref(self, ref: str) -> str | None:
        return refs(self.standby).get(ref)

    def runs(self, trigger: Trigger | None = None) -> list[Run]:
        with self.ctx.db.session() as session:
            query = select(Run).where(Run.binding_id == self.binding_id).order_by(Run.id)
            if trigger is not None:
                query = query.where(Run.trigger == trigger.value)
            return list(session.execute(query).scalars().all())

    def deliveries(self) -> int:
        with self.ctx.db.session() as session:
            return session.execute(select(func.count()).select_from(IncomingWebhook)).scalar_one()

    def binding(self) -> Binding:
        with self.ctx.db.session() as session:
            binding = session.get(Binding, self.binding_id)
            assert binding is not None
            return binding

    def settle(self) -> None:
        """Wait until nothing is owed and every Run of the Binding has ended."""

        def settled() -> bool:
            return self.binding().event_run_due_at is None and all(
                run.status in TERMINAL for run in self.runs()
            )

        wait_for(settled, 90, "the Binding to settle")


@pytest.fixture
def world(tmp_path, github_fake, pg_ctx, env, sender, workers) -> World:
    from reposync.tasks.base import CeleryDispatcher

    fake = github_fake
    repo = fake.state.create_repo(REPO, private=True, auto_init=True)
    token = fake.add_token("acme")
    github = {
        **github_worker_env(fake, token),
        "REPOSYNC_GITHUB_WEBHOOK_SECRET": SECRET,
        "REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS": "1",
    }
    env.update(github)
    settings = pg_ctx.settings.with_overrides(
        **github_fields(fake, token),
        github_webhook_secret=SECRET,
        webhook_debounce_seconds=1.0,
    )
    ctx = ServiceContext(settings=settings, db=pg_ctx.db, dispatcher=CeleryDispatcher(sender))
    standby = tmp_path / "standby.git"
    binding = bind(ctx, SyncRequest(f"github:{REPO}", f"local:{standby}"))
    workers.append(start_worker(env, tmp_path, "w1", beat=True))
    workers.append(start_worker(env, tmp_path, "w2"))
    port = free_port()
    workers.append(start_api(env, tmp_path, port))
    full = wait_terminal(ctx, enqueue_run(ctx, binding.id, audit_mode=AuditMode.FULL).id)
    assert full.status == "completed", full.report
    update_binding(ctx, binding.id, sync_enabled=True)
    return World(
        ctx=ctx,
        binding_id=binding.id,
        repository_id=repo.id,
        git_dir=fake.state.git_dir(REPO),
        standby=standby,
        base=f"http://127.0.0.1:{port}",
        port=port,
        fake=fake,
        token=token,
    )


def test_a_push_delivered_as_a_webhook_moves_the_standby_once(world):
    """Signed push -> 202 -> one webhook Run on a worker -> the standby's ref is equal."""
    body, sha = world.push("refs/heads/main", "change 1")
    response = world.deliver("push", body, delivery_id="push-1")
    assert response.status_code == 202, response.text
    assert response.json()["bindings"] == {str(world.binding_id): "run_requested"}
    wait_for(lambda: world.standby_ref("refs/heads/main") == sha, 60, "the standby to move")
    world.settle()
    (run,) = world.runs(Trigger.WEBHOOK)
    assert run.status == "completed", run.report

    replay = world.deliver("push", body, delivery_id="push-1")  # GitHub's redelivery
    assert replay.status_code == 200
    assert replay.json()["outcome"] == "duplicate"
    assert world.binding().event_run_due_at is None
    assert len(world.runs(Trigger.WEBHOOK)) == 1


def test_concurrent_copies_of_one_delivery_count_once(world):
    """Eight copies of one delivery at once: one 202, seven duplicates, one record, one Run."""
    body, sha = world.push("refs/heads/main", "change 2")
    start = threading.Barrier(8)
    answers: list[tuple[int, str]] = []

    def send() -> None:
        start.wait()
        response = world.deliver("push", body, delivery_id="same-delivery")
        answers.append((response.status_code, response.json()["outcome"]))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [(200, "duplicate")] * 7 + [(202, "accepted")]
    assert world.deliveries() == 1
    wait_for(lambda: world.standby_ref("refs/heads/main") == sha, 60, "the standby to move")
    world.settle()
    assert len(world.runs(Trigger.WEBHOOK)) == 1


def test_forged_and_oversized_deliveries_are_refused_and_leave_nothing(world):
    """401 for a wrong secret, 413 for a declared 25 MB + 1 (answered before the body)."""
    body, _ = world.push("refs/heads/main", "change 3")
    raw = webhooks.encode(body)
    forged = requests.post(
        world.base + PATH, data=raw, headers=webhooks.headers("push", raw, "guess"), timeout=30
    )
    assert forged.status_code == 401
    assert forged.json()["code"] == "webhook_signature_invalid"

    connection = http.client.HTTPConnection("127.0.0.1", world.port, timeout=30)
    connection.putrequest("POST", PATH)
    for name, value in webhooks.headers("push", raw, SECRET).items():
        connection.putheader(name, value)
    connection.putheader("Content-Length", str(WEBHOOK_MAX_BODY_BYTES + 1))
    connection.endheaders()  # not one byte of the body is sent
    response = connection.getresponse()
    assert response.status == 413
    assert b"webhook_too_large" in response.read()
    connection.close()

    assert world.deliveries() == 0
    assert world.binding().event_run_due_at is None
    assert world.runs(Trigger.WEBHOOK) == []


def test_a_burst_of_deliveries_makes_one_run(world):
    """Ten pushes delivered inside the debounce window: one webhook Run carries them all."""
    shas = []
    answers = []
    for n in range(10):
        body, sha = world.push("refs/heads/main", f"burst {n}")
        shas.append(sha)
        answers.append(world.deliver("push", body).json()["bindings"][str(world.binding_id)])
    assert answers[0] == "run_requested"
    assert set(answers[1:]) <= {"coalesced"}, answers
    wait_for(lambda: world.standby_ref("refs/heads/main") == shas[-1], 60, "the standby")
    world.settle()
    assert len(world.runs(Trigger.WEBHOOK)) == 1


def test_out_of_order_deliveries_never_move_the_standby_back(world):
    """The newer push's delivery first, the older one late: the standby ends at the newer
    commit (a Run reads the source, not the payload)."""
    first, _ = world.push("refs/heads/main", "older")
    second, newest = world.push("refs/heads/main", "newer")
    assert world.deliver("push", second).status_code == 202
    wait_for(lambda: world.standby_ref("refs/heads/main") == newest, 60, "the standby")
    world.settle()
    assert world.deliver("push", first).status_code == 202
    world.settle()
    assert world.standby_ref("refs/heads/main") == newest
    assert all(run.status == "completed" for run in world.runs(Trigger.WEBHOOK))


def install_holding_hook(standby: Path, hold: Path, entered: Path) -> None:
    """A pre-receive hook on the standby that waits while ``hold`` exists (a slow push)."""
    hook = standby / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        f'touch "{entered}"\n'
        f'while [ -e "{hold}" ]; do sleep 0.05; done\n'
        "cat >/dev/null\n"
    )
    hook.chmod(0o755)


def test_a_delivery_during_an_active_run_makes_exactly_one_more_run(world, tmp_path):
    """Run 1 is held mid-push; three deliveries arrive; once it ends exactly one more Run
    (trigger webhook, created by finalizing) follows and syncs what they reported."""
    hold, entered = tmp_path / "hold", tmp_path / "entered"
    hold.touch()
    install_holding_hook(world.standby, hold, entered)
    body, _ = world.push("refs/heads/main", "held change")
    assert world.deliver("push", body).status_code == 202
    wait_for(entered.exists, 60, "run 1 to be pushing")
    (first,) = world.runs(Trigger.WEBHOOK)
    assert run_row(world.ctx, first.id).stage == "applying"

    later = []
    for n in range(3):
        body, sha = world.push(f"refs/heads/feature-{n}", f"feature {n}")
        later.append(sha)
        later_answer = world.deliver("push", body).json()["bindings"][str(world.binding_id)]
        assert later_answer == ("pending_after_active_run" if n == 0 else "coalesced")
    hold.unlink()

    wait_for(
        lambda: all(world.standby_ref(f"refs/heads/feature-{n}") == later[n] for n in range(3)),
        90,
        "the features on the standby",
    )
    world.settle()
    runs = world.runs()
    after = [run for run in runs if run.id > first.id]
    assert len(after) == 1, [(r.id, r.trigger, r.status) for r in runs]
    assert after[0].trigger == Trigger.WEBHOOK.value
    assert after[0].parent_run_id == first.id
    assert run_row(world.ctx, first.id).status == "completed"


def test_rename_and_visibility_events_through_the_api(world, tmp_path):
    """A rename moves the locator (a late, older rename does not); a GitHub standby made
    public turns its Binding's sync off."""
    renamed = world.fake.state.rename_repo(REPO, "renamed")
    newer = webhooks.renamed(world.repository_id, "acme/renamed", "app", at="2026-12-05T11:00:00Z")
    older = webhooks.renamed(world.repository_id, "acme/app-1", "app", at="2026-12-05T10:00:00Z")
    assert world.deliver("repository", newer).json()["bindings"] == {
        str(world.binding_id): "locator_updated"
    }
    assert world.deliver("repository", older).json()["bindings"] == {
        str(world.binding_id): "stale_rename_ignored"
    }
    assert world.binding().a_locator == f"acme/{renamed.name}"
    body, sha = world.push("refs/heads/main", "after the rename")
    body["repository"]["full_name"] = "acme/renamed"
    assert world.deliver("push", body).status_code == 202
    wait_for(lambda: world.standby_ref("refs/heads/main") == sha, 60, "the standby")
    world.settle()

    mirror = world.fake.state.create_repo("acme/mirror", private=True)
    source = generate(tmp_path / "source.git", commits=2, branches=0, tags=0)
    other = bind(world.ctx, SyncRequest(f"local:{source}", "github:acme/mirror"))
    with world.ctx.db.transaction() as session:
        row = session.get(Binding, other.id)
        assert row is not None
        row.sync_enabled, row.a_visibility, row.b_visibility = True, "private", "private"
    public = webhooks.visibility_changed(mirror.id, "acme/mirror", "public")
    response = world.deliver("repository", public)
    assert response.json()["bindings"] == {str(other.id): "sync_disabled_visibility_unconfirmed"}
    with world.ctx.db.session() as session:
        row = session.get(Binding, other.id)
        assert row is not None
        assert (row.sync_enabled, row.b_visibility) == (False, "public")


def test_the_github_test_server_delivers_and_redelivers_its_own_webhooks(world, tmp_path):
    """The test server's own Hookshot: a ``git push`` over HTTP -> its push delivery ->
    a Run; its "Redeliver" is answered as a duplicate; a delivery it signs with another
    secret is refused (401) and records nothing; a form-encoded hook works too."""
    hub = world.fake.webhooks
    hook = world.fake.add_webhook(REPO, world.base + PATH, SECRET, events=["push"])
    (ping,) = hub.flush()
    assert ping.event == "ping"
    assert ping.status_code == 200

    clone = tmp_path / "clone"
    remote = world.fake.git_remote(REPO, world.token)
    subprocess.run(["git", "clone", "-q", remote, str(clone)], check=True)

    def push(message: str) -> str:
        (clone / "file.txt").write_text(message)
        for command in (
            ["git", "add", "file.txt"],
            ["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", message],
            ["git", "push", "-q", "origin", "HEAD:main"],
        ):
            subprocess.run(command, cwd=clone, check=True)
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True, text=True
        ).stdout.strip()

    sha = push("delivered by the test server")
    wait_for(lambda: world.standby_ref("refs/heads/main") == sha, 60, "the standby")
    (delivery,) = hub.deliveries_of("push")
    assert delivery.status_code == 202
    world.settle()
    assert len(world.runs(Trigger.WEBHOOK)) == 1

    hub.redeliver(delivery)
    hub.flush()
    assert delivery.status_code == 200  # a duplicate: nothing changes
    assert world.binding().event_run_due_at is None

    recorded = world.deliveries()
    hub.faults.bad_signature("push", count=1)
    push("signed with another secret")
    forged = hub.flush()[-1]
    assert (forged.event, forged.status_code) == ("push", 401)
    assert world.deliveries() == recorded

    hub.update(hook, content_type="form")
    sha = push("a form-encoded delivery")
    wait_for(lambda: world.standby_ref("refs/heads/main") == sha, 60, "the standby")
    assert hub.flush()[-1].status_code == 202
    world.settle()
