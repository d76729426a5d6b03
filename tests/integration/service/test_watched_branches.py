"""Watchers hear every move: a Run that reads a watched branch at a new revision moves the
watch's cursor and emits ``branch.moved`` (with the files the move changed), once,
whether the delivery of that push came first, later or never.

Real SQLite and PostgreSQL databases, real Git, local forges and the GitHub test server;
the deliveries are the local hook's own intake (``intake.receive_local``), called where
the hook would call it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.lifecycle import Stage
from reposync.models import BranchWatch, WebhookDelivery
from reposync.providers.base import EndpointInfo
from reposync.providers.notifications import RefMove
from reposync.service.accounts.users import create_user
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext, Step
from reposync.service.embedded import sync
from reposync.service.pipeline.runner import execute_step
from reposync.service.runs import create_run
from reposync.service.webhooks import watches
from reposync.service.webhooks.intake import receive_local
from tests.github_env import embedded_world
from tests.gitrepo import commit_snapshot, delete_refs, init_bare, refs
from tests.integration.service.test_webhook_outbox import documented, subscribe, webhook_ctx

MAIN = "refs/heads/main"
TEXT = b"".join(b"line %d, long enough to be recognized when renamed\n" % i for i in range(40))
FIRST = {b"README": b"hello\n", b"notes": b"one\n", b"old-name": TEXT, b"obsolete": b"x\n"}
SECOND = {b"README": b"hello\n", b"notes": b"two\n", b"new-name": TEXT, b"added": b"new\n"}


class World:
    def __init__(self, ctx: ServiceContext, tmp_path: Path) -> None:
        self.ctx = ctx
        self.source = init_bare(tmp_path / "src.git")
        self.first = commit_snapshot(self.source, MAIN, FIRST)
        commit_snapshot(self.source, "refs/heads/other", {b"o": b"o\n"})
        self.request = SyncRequest(f"local:{self.source}", f"local:{tmp_path / 'dst.git'}")
        self.binding = bind(ctx, self.request)
        admin = create_user(ctx, "ops", role="admin")
        subscribe(ctx, admin.id, "http://127.0.0.1:9/hook", ["branch.moved"])
        repository = EndpointInfo("local", str(self.source), self.binding.a_repository_id)
        self.watch, _ = watches.create_watch(ctx, repository, "main", created_by=admin.id)

    def moved(self) -> list[dict]:
        """The branch.moved payloads written so far, each checked against its schema."""
        with self.ctx.db.session() as session:
            rows = session.execute(
                select(WebhookDelivery)
                .where(WebhookDelivery.event == "branch.moved")
                .order_by(WebhookDelivery.id)
            ).scalars()
            return [documented(row) for row in rows]

    def cursor(self) -> tuple[str | None, str | None]:
        with self.ctx.db.session() as session:
            watch = session.get(BranchWatch, self.watch.id)
            assert watch is not None
            return watch.before, watch.after

    def deliver(self, before: str, after: str, ref: str = MAIN) -> None:
        """What the source's post-receive hook reports for a push."""
        move = RefMove(ref, before, after)
        receive_local(self.ctx, f"local:{self.source}", event="push", refs=[move])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request, tmp_path) -> World:
    base = request.getfixturevalue("ctx" if request.param == "sqlite" else "pg_ctx")
    return World(webhook_ctx(base), tmp_path)


def test_a_lost_delivery_is_heard_from_the_next_run_once(world):
    """No hook reported the push: the Run that syncs it emits branch.moved (observed_by
    run, every changed file with its kind); a Run with nothing new and the push's late
    delivery emit nothing more."""
    first_run = sync(world.ctx, world.request)
    assert first_run.status == "completed", first_run.report["problems"]
    assert world.moved() == []  # the Binding's first Run: no movement known yet
    second = commit_snapshot(world.source, MAIN, SECOND)

    run = sync(world.ctx, world.request)

    assert run.status == "completed", run.report["problems"]
    [event] = world.moved()
    assert (event["before"], event["after"]) == (world.first, second)
    assert (event["observed_by"], event["run_id"]) == ("run", run.id)
    assert event["binding_ids"] == [world.binding.id]
    assert event["files_truncated"] is False
    assert sorted(event["files"], key=lambda f: f["path"]) == [
        {"path": "added", "change": "added", "previous_path": None},
        {"path": "new-name", "change": "renamed", "previous_path": "old-name"},
        {"path": "notes", "change": "modified", "previous_path": None},
        {"path": "obsolete", "change": "deleted", "previous_path": None},
    ]
    assert world.cursor() == (world.first, second)

    assert sync(world.ctx, world.request).status == "completed"
    world.deliver(world.first, second)  # the lost delivery turns up after all

    assert len(world.moved()) == 1
    assert world.cursor() == (world.first, second)


def test_a_delivery_first_then_the_run_is_one_event(world):
    """The hook reported the push (with its files: the repository is here): the Run
    that syncs it afterwards emits nothing more."""
    sync(world.ctx, world.request)
    second = commit_snapshot(world.source, MAIN, SECOND)
    world.deliver(world.first, second)
    [event] = world.moved()
    assert (event["observed_by"], event["run_id"]) == ("delivery", None)
    assert {f["change"] for f in event["files"]} == {"added", "renamed", "modified", "deleted"}

    assert sync(world.ctx, world.request).status == "completed"

    assert len(world.moved()) == 1


def test_a_deleted_branch_is_a_move_to_the_zero_id(world):
    """A watched branch is gone from the source when the Run reads it: a move to Git's
    all-zero id, with no files (there is nothing to compare with)."""
    repository = EndpointInfo("local", str(world.source), world.binding.a_repository_id)
    watches.create_watch(world.ctx, repository, "other", created_by=world.watch.created_by)
    sync(world.ctx, world.request)
    other = refs(world.source)["refs/heads/other"]
    delete_refs(world.source, ["refs/heads/other"])

    sync(world.ctx, world.request)

    [event] = world.moved()
    assert (event["branch"], event["before"], event["after"]) == ("other", other, "0" * 40)
    assert (event["files"], event["files_truncated"]) == (None, False)


def test_a_newer_delivery_during_the_run_is_never_undone_by_it(world):
    """The Run read main at 2; a push to 3 and its delivery land before the Run ends:
    the Run's end must not move the cursor back to 2 (nor announce 2)."""
    sync(world.ctx, world.request)
    second = commit_snapshot(world.source, MAIN, SECOND)
    run = create_run(world.ctx, world.binding.id)
    step: Step | None = Step(run.id, Stage.CHECKING_ACCESS, None)
    while step is not None and step.stage is not Stage.INVENTORY_TARGET:
        step = execute_step(world.ctx, step)
    third = commit_snapshot(world.source, MAIN, {**SECOND, b"third": b"3\n"})
    world.deliver(second, third)
    while step is not None:
        step = execute_step(world.ctx, step)

    assert [(e["before"], e["after"], e["observed_by"]) for e in world.moved()] == [
        (second, third, "delivery")
    ]
    assert world.cursor() == (second, third)


def test_the_run_lists_at_most_300_files(world):
    """A move that changed 301 files lists 300 and says it was cut."""
    sync(world.ctx, world.request)
    commit_snapshot(
        world.source, MAIN, {**FIRST, **{b"f%03d" % i: b"%d\n" % i for i in range(301)}}
    )

    sync(world.ctx, world.request)

    [event] = world.moved()
    assert (len(event["files"]), event["files_truncated"]) == (300, True)
    body = json.dumps(event)
    assert len(body) < 64 * 1024  # bounded, whatever the push


def test_a_github_sources_move_lists_files_from_the_local_standby(tmp_path, github_fake):
    """GitHub's push was never delivered: the Run that syncs it to a local standby emits
    branch.moved, its files read from the standby, which holds both revisions."""
    github_fake.state.create_repo("acme/app", private=True)
    bare = Path(github_fake.state.git_dir("acme/app"))
    first = commit_snapshot(bare, MAIN, FIRST)
    with embedded_world(github_fake, tmp_path) as (base, _):
        hooked = webhook_ctx(base)  # its settings seal secrets; GitHub's environment stays
        ctx = ServiceContext(
            settings=hooked.settings,
            db=base.db,
            dispatcher=hooked.dispatcher,
            environment=base.environment,
        )
        request = SyncRequest("github:acme/app", f"local:{tmp_path / 'standby.git'}")
        binding = bind(ctx, request)
        admin = create_user(ctx, "ops", role="admin")
        subscribe(ctx, admin.id, "http://127.0.0.1:9/hook", ["branch.moved"])
        repository = EndpointInfo("github", "acme/app", binding.a_repository_id)
        watches.create_watch(ctx, repository, "main", created_by=admin.id)
        assert sync(ctx, request).status == "completed"
        second = commit_snapshot(bare, MAIN, SECOND)

        run = sync(ctx, request)

        assert run.status == "completed", run.report["problems"]
        with ctx.db.session() as session:
            [row] = session.execute(select(WebhookDelivery)).scalars()
            event = documented(row)
    assert (event["before"], event["after"], event["run_id"]) == (first, second, run.id)
    assert {f["path"]: f["change"] for f in event["files"]} == {
        "added": "added",
        "new-name": "renamed",
        "notes": "modified",
        "obsolete": "deleted",
    }
