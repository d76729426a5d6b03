"""``POST /webhooks/github`` through the API: signature, cap, schema, dedupe, mapping.

The Runs themselves are created by the due task (``event_runs``; real workers in
``tests/integration/distributed/test_webhooks_distributed.py``); here the dispatcher records what
the API asked for.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote_plus

import pytest
from sqlalchemy import event, func, select, update
from werkzeug.test import EnvironBuilder, run_wsgi_app

from reposync.lifecycle import RunMode, Side, Stage
from reposync.models import Binding, IncomingWebhook, Run
from reposync.service.context import ServiceContext, Step
from reposync.service.pipeline.stages.visibility import confirmation_hash
from reposync.service.runs import create_run
from reposync.service.webhooks import intake
from reposync.service.webhooks.intake import start_due_run, tick
from reposync.web.app import create_app
from reposync.web.limits import WEBHOOK_MAX_BODY_BYTES
from tests import webhooks
from tests.integration.web.conftest import WEBHOOK_SECRET, assert_problem, url
from tests.integration.web.intake import PATH, Recorder, add_binding, deliver


@pytest.fixture
def recorder(ctx: ServiceContext) -> Recorder:
    recorder = Recorder()
    ctx.dispatcher = recorder
    return recorder


SHA_A, SHA_B = "a" * 40, "b" * 40


def binding_row(ctx: ServiceContext, binding_id: int) -> Binding:
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        return binding


def deliveries(ctx: ServiceContext) -> int:
    with ctx.db.session() as session:
        return session.execute(select(func.count()).select_from(IncomingWebhook)).scalar_one()


def runs(ctx: ServiceContext, binding_id: int) -> list[Run]:
    with ctx.db.session() as session:
        return list(
            session.execute(select(Run).where(Run.binding_id == binding_id).order_by(Run.id))
            .scalars()
            .all()
        )


def make_due(ctx: ServiceContext, binding_id: int) -> None:
    """Let the debounce window pass (the tests never sleep)."""
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding)
            .where(Binding.id == binding_id, Binding.event_run_due_at.is_not(None))
            .values(event_run_due_at=datetime.now(UTC) - timedelta(seconds=1))
        )


def push(github_id: int = 7, **kw: Any) -> dict[str, Any]:
    return webhooks.push(github_id, "acme/app", "refs/heads/main", SHA_A, SHA_B, **kw)


# -- authentication and limits ------------------------------------------------------------


def test_without_a_secret_every_delivery_is_refused_and_nothing_recorded(app, ctx):
    """No REPOSYNC_GITHUB_WEBHOOK_SECRET: 503 webhooks_not_configured, even signed."""
    app.extensions["reposync.ctx"].settings = ctx.settings.with_overrides(github_webhook_secret="")
    response = deliver(app.test_client(), "push", push())
    body = assert_problem(response, 503, "webhooks_not_configured")
    assert "REPOSYNC_GITHUB_WEBHOOK_SECRET" in body["detail"]
    assert deliveries(ctx) == 0


@pytest.mark.parametrize("secret", [None, "not the secret"], ids=["unsigned", "forged"])
def test_a_forged_or_unsigned_delivery_is_401_and_records_nothing(client, ctx, recorder, secret):
    """Bad or missing signature: 401 and no delivery, no Run, no dispatch."""
    binding_id = add_binding(ctx, 7)
    response = deliver(client, "push", push(), secret=secret)
    assert_problem(response, 401, "webhook_signature_invalid")
    assert deliveries(ctx) == 0
    assert binding_row(ctx, binding_id).event_run_due_at is None
    assert recorder.event_runs == []


def test_a_body_signed_then_altered_is_refused(client, ctx):
    raw = webhooks.encode(push())
    headers = webhooks.headers("push", raw, WEBHOOK_SECRET)
    response = client.post(PATH, data=raw.replace(b"main", b"evil"), headers=headers)
    assert_problem(response, 401, "webhook_signature_invalid")
    assert deliveries(ctx) == 0


def test_the_previous_secret_counts_during_a_rotation_only(app, ctx):
    """Until ..._PREVIOUS_SECRET_UNTIL the old secret verifies; afterwards 401."""
    client = app.test_client()
    settings = ctx.settings.with_overrides(
        github_webhook_secret="new",
        github_webhook_previous_secret=WEBHOOK_SECRET,
        github_webhook_previous_secret_until=datetime.now(UTC) + timedelta(hours=1),
    )
    app.extensions["reposync.ctx"].settings = settings
    assert deliver(client, "ping", webhooks.payload("ping")).status_code == 200
    assert deliver(client, "ping", webhooks.payload("ping"), secret="new").status_code == 200
    app.extensions["reposync.ctx"].settings = settings.with_overrides(
        github_webhook_previous_secret_until=datetime.now(UTC) - timedelta(seconds=1)
    )
    assert_problem(
        deliver(client, "ping", webhooks.payload("ping")), 401, "webhook_signature_invalid"
    )


class CountingStream(io.RawIOBase):
    """A request body of ``size`` bytes (None: endless) that counts what the server reads."""

    def __init__(self, size: int | None) -> None:
        self.size, self.read_bytes = size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = len(buffer) if self.size is None else min(len(buffer), self.size - self.read_bytes)
        buffer[:count] = b"x" * count
        self.read_bytes += count
        return count


def post_stream(app, stream: CountingStream, content_length: int | None) -> tuple[int, Any]:
    """POST ``stream`` as a server would hand it over (the test client wants a seekable
    body): with a Content-Length, or streamed to the end (``wsgi.input_terminated``)."""
    environ = EnvironBuilder(
        path=PATH, method="POST", headers=webhooks.headers("push", b"{}", WEBHOOK_SECRET)
    ).get_environ()
    environ["wsgi.input"] = stream
    if content_length is None:
        environ.pop("CONTENT_LENGTH", None)
        environ["wsgi.input_terminated"] = True
    else:
        environ["CONTENT_LENGTH"] = str(content_length)
    app_iter, status, _ = run_wsgi_app(app, environ, buffered=True)
    return int(status.split()[0]), json.loads(b"".join(app_iter))


def test_a_content_length_over_25_mb_is_413_before_reading(app, ctx):
    """The declared size alone is refused: not a byte of the body is read."""
    stream = CountingStream(WEBHOOK_MAX_BODY_BYTES + 1)
    status, problem = post_stream(app, stream, WEBHOOK_MAX_BODY_BYTES + 1)
    assert (status, problem["code"]) == (413, "webhook_too_large")
    assert stream.read_bytes == 0
    assert deliveries(ctx) == 0


def test_a_body_without_length_is_never_read_past_the_cap(app, ctx):
    """A streamed body (no Content-Length) that goes on: 413 once past 25 MB, having read
    at most the cap and one chunk."""
    stream = CountingStream(None)
    status, problem = post_stream(app, stream, None)
    assert (status, problem["code"]) == (413, "webhook_too_large")
    assert WEBHOOK_MAX_BODY_BYTES <= stream.read_bytes <= WEBHOOK_MAX_BODY_BYTES + 64 * 1024
    assert deliveries(ctx) == 0


def test_a_large_but_allowed_delivery_is_accepted(client, ctx):
    """Bodies above the API's 1 MiB limit but within GitHub's 25 MB are taken whole."""
    body = push()
    body["commits"] = [dict(body["head_commit"] or webhooks.skeleton("commit"))] * 2000
    for commit in body["commits"]:
        commit["message"] = "m" * 1000
    raw = webhooks.encode(body)
    assert len(raw) > 2 * 1024 * 1024
    response = deliver(client, "push", raw)
    assert response.status_code == 202, response.get_data(as_text=True)


# -- what is accepted -------------------------------------------------------------------


def test_an_invalid_payload_is_422_with_where_and_why_and_no_run(client, ctx, recorder):
    binding_id = add_binding(ctx, 7)
    body = push()
    body["after"] = 42
    response = deliver(client, "push", body)
    problem = assert_problem(response, 422, "webhook_payload_invalid")
    assert "$.after" in problem["detail"]
    assert "42 is not of type 'string'" in problem["detail"]
    assert deliveries(ctx) == 0
    assert binding_row(ctx, binding_id).event_run_due_at is None
    assert recorder.event_runs == []


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"X-GitHub-Delivery": ""}, None),
        ({"X-GitHub-Event": ""}, None),
        ({"Content-Type": "application/x-www-form-urlencoded"}, None),
        ({"Content-Type": "text/plain"}, None),
        ({}, b"{not json"),
    ],
    ids=["no-delivery-id", "no-event", "form-without-payload", "text", "not-json"],
)
def test_malformed_deliveries_are_400(client, ctx, headers, body):
    raw = body or webhooks.encode(push())
    sent = webhooks.headers("push", raw, WEBHOOK_SECRET)
    sent.update(headers)
    response = client.post(PATH, data=raw, headers=sent)
    assert_problem(response, 400, "webhook_malformed")
    assert deliveries(ctx) == 0


def test_a_form_encoded_delivery_is_read_from_its_payload_field(client, ctx, recorder):
    """GitHub's default content type: the JSON in ``payload=``, the form body signed."""
    binding_id = add_binding(ctx, 7)
    raw = ("payload=" + quote_plus(webhooks.encode(push()).decode())).encode()
    headers = webhooks.headers("push", raw, WEBHOOK_SECRET)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    response = client.post(PATH, data=raw, headers=headers)
    assert response.status_code == 202, response.get_data(as_text=True)
    assert response.json["bindings"] == {str(binding_id): "run_requested"}


def test_a_ping_answers_200(client, ctx):
    response = deliver(client, "ping", webhooks.payload("ping"))
    assert response.status_code == 200
    assert response.json["outcome"] == "pong"


def test_other_events_are_202_and_recorded_as_ignored(client, ctx):
    response = deliver(client, "star", {"action": "created"})
    assert response.status_code == 202
    assert response.json["outcome"] == "ignored"
    with ctx.db.session() as session:
        (row,) = session.execute(select(IncomingWebhook)).scalars()
    assert (row.event, row.outcome) == ("star", "ignored")


def test_a_push_owes_a_run_to_the_binding_whose_authority_it_is(client, ctx, recorder):
    """202; the Run is owed after the debounce window and the due task is dispatched."""
    authority = add_binding(ctx, 7)
    standby = add_binding(ctx, 7, github_side=Side.B, name="acme/app")
    disabled = add_binding(ctx, 7, sync_enabled=False)
    other = add_binding(ctx, 8)
    before = datetime.now(UTC)
    response = deliver(client, "push", push())
    assert response.status_code == 202, response.get_data(as_text=True)
    assert response.json["bindings"] == {
        str(authority): "run_requested",
        str(standby): "nothing_to_do",
        str(disabled): "nothing_to_do",
    }
    due = binding_row(ctx, authority).event_run_due_at
    assert due is not None
    assert due >= before + timedelta(seconds=ctx.settings.webhook_debounce_seconds)
    for untouched in (standby, disabled, other):
        assert binding_row(ctx, untouched).event_run_due_at is None
    assert recorder.event_runs == [(authority, ctx.settings.webhook_debounce_seconds)]
    with ctx.db.session() as session:
        (row,) = session.execute(select(IncomingWebhook)).scalars()
    assert row.hints["refs"] == [["refs/heads/main", SHA_A, SHA_B]]


def test_a_redelivery_answers_200_and_changes_nothing(client, ctx, recorder):
    """The same X-GitHub-Delivery again: duplicate; one record, one owed Run, one task."""
    binding_id = add_binding(ctx, 7)
    first = deliver(client, "push", push(), delivery_id="d-1")
    due = binding_row(ctx, binding_id).event_run_due_at
    make_due(ctx, binding_id)
    start_due_run(ctx, binding_id)
    again = deliver(client, "push", push(), delivery_id="d-1")
    assert first.status_code == 202
    assert again.status_code == 200
    assert again.json["outcome"] == "duplicate"
    assert deliveries(ctx) == 1
    assert due is not None
    assert binding_row(ctx, binding_id).event_run_due_at is None  # nothing owed anew
    assert len(recorder.event_runs) == 1
    assert len(runs(ctx, binding_id)) == 1


def test_a_burst_of_deliveries_owes_one_run(client, ctx, recorder):
    """Ten pushes inside the window: one owed Run, one task, then exactly one Run."""
    binding_id = add_binding(ctx, 7)
    outcomes = [
        deliver(client, "push", push()).json["bindings"][str(binding_id)] for _ in range(10)
    ]
    assert outcomes == ["run_requested"] + ["coalesced"] * 9
    assert len(recorder.event_runs) == 1
    assert start_due_run(ctx, binding_id).due.value == "not_yet"  # the window is still open
    make_due(ctx, binding_id)
    created = start_due_run(ctx, binding_id)
    assert created.due.value == "created"
    (run,) = runs(ctx, binding_id)
    assert run.trigger == "webhook"
    assert recorder.steps == [Step(run.id, Stage.CHECKING_ACCESS, None)]
    assert start_due_run(ctx, binding_id).due.value == "nothing_owed"


def test_a_delivery_while_a_run_waits_to_start_is_folded_into_it(client, ctx, recorder):
    """A queued Run has not read its source: it will see the change; nothing is owed."""
    binding_id = add_binding(ctx, 7)
    queued = create_run(ctx, binding_id)
    response = deliver(client, "push", push())
    assert response.json["bindings"][str(binding_id)] == "coalesced"
    assert binding_row(ctx, binding_id).event_run_due_at is None
    assert [r.id for r in runs(ctx, binding_id)] == [queued.id]


def test_a_queued_dry_run_does_not_carry_a_delivery(client, ctx, recorder):
    """A dry run writes nothing: the change is owed a Run after it, not folded into it."""
    binding_id = add_binding(ctx, 7)
    create_run(ctx, binding_id, mode=RunMode.DRY_RUN)
    response = deliver(client, "push", push())
    assert response.json["bindings"][str(binding_id)] == "pending_after_active_run"
    assert binding_row(ctx, binding_id).event_run_due_at is not None


def test_a_delivery_during_an_active_run_owes_one_run_after_it(client, ctx, recorder):
    """Past its source inventory the active Run may miss the change: one more is owed,
    and the due task leaves it to the Run's end (finalizing creates it)."""
    binding_id = add_binding(ctx, 7)
    active = create_run(ctx, binding_id)
    with ctx.db.transaction() as session:
        session.execute(
            update(Run).where(Run.id == active.id).values(stage="applying", status="running")
        )
    for _ in range(3):
        assert deliver(client, "push", push()).status_code == 202
    assert binding_row(ctx, binding_id).event_run_due_at is not None
    assert recorder.event_runs == []  # nothing to start until the active Run ends
    make_due(ctx, binding_id)
    assert tick(ctx) == []
    assert start_due_run(ctx, binding_id).due.value == "after_active_run"
    assert len(runs(ctx, binding_id)) == 1


def test_a_lost_due_task_is_made_up_by_the_tick(client, ctx, recorder):
    binding_id = add_binding(ctx, 7)
    deliver(client, "push", push())
    recorder.event_runs.clear()  # the task's message is lost
    make_due(ctx, binding_id)
    created = tick(ctx)
    assert [r.id for r in runs(ctx, binding_id)] == created
    assert len(created) == 1


def test_an_owed_run_is_dropped_when_sync_was_disabled_meanwhile(client, ctx, recorder):
    binding_id = add_binding(ctx, 7)
    deliver(client, "push", push())
    with ctx.db.transaction() as session:
        session.execute(update(Binding).where(Binding.id == binding_id).values(sync_enabled=False))
    make_due(ctx, binding_id)
    assert start_due_run(ctx, binding_id).due.value == "dropped_sync_disabled"
    assert runs(ctx, binding_id) == []
    assert binding_row(ctx, binding_id).event_run_due_at is None


# -- repository and installation events -----------------------------------------------------


def test_a_rename_moves_the_locator_and_an_older_one_arriving_late_does_not(client, ctx):
    """Out of order: the newer rename wins whatever the arrival order."""
    authority = add_binding(ctx, 7, name="acme/app")
    standby = add_binding(ctx, 7, github_side=Side.B, name="acme/app")
    newer = webhooks.renamed(7, "acme/newest", "app-2", at="2026-12-05T11:00:00Z")
    older = webhooks.renamed(7, "acme/app-2", "app", at="2026-12-05T10:00:00Z")
    assert deliver(client, "repository", newer).json["bindings"] == {
        str(authority): "locator_updated",
        str(standby): "locator_updated",
    }
    late = deliver(client, "repository", older)
    assert late.status_code == 202
    assert set(late.json["bindings"].values()) == {"stale_rename_ignored"}
    assert binding_row(ctx, authority).a_locator == "acme/newest"
    assert binding_row(ctx, standby).b_locator == "acme/newest"
    assert deliveries(ctx) == 2


def test_a_standby_made_public_turns_sync_off_as_the_access_stage_would(client, ctx):
    """The standby (GitHub) became more public than its private authority, unconfirmed:
    sync and the schedule stop, and the Run in flight is asked to stop."""
    binding_id = add_binding(ctx, 7, github_side=Side.B)
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding)
            .where(Binding.id == binding_id)
            .values(a_visibility="private", b_visibility="private", next_run_at=datetime.now(UTC))
        )
    active = create_run(ctx, binding_id)
    response = deliver(client, "repository", webhooks.visibility_changed(7, "acme/app", "public"))
    assert response.json["bindings"] == {str(binding_id): "sync_disabled_visibility_unconfirmed"}
    binding = binding_row(ctx, binding_id)
    assert (binding.sync_enabled, binding.next_run_at, binding.b_visibility) == (
        False,
        None,
        "public",
    )
    (run,) = runs(ctx, binding_id)
    assert run.id == active.id
    assert run.cancel_requested_at is not None


def test_a_confirmed_visibility_keeps_sync_on_and_a_later_change_voids_it(client, ctx):
    """The confirmation of exactly (private -> public) holds; once the authority changes
    too, the same hash no longer matches and sync stops."""
    binding_id = add_binding(ctx, 7, github_side=Side.B)
    with ctx.db.transaction() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        binding.a_visibility, binding.b_visibility = "private", "private"
        binding.visibility_confirmation = confirmation_hash(binding, Side.A, "private", "public")
    response = deliver(client, "repository", webhooks.visibility_changed(7, "acme/app", "public"))
    assert response.json["bindings"] == {str(binding_id): "visibility_recorded"}
    assert binding_row(ctx, binding_id).sync_enabled
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding).where(Binding.id == binding_id).values(a_visibility="internal")
        )
    response = deliver(
        client,
        "repository",
        webhooks.visibility_changed(7, "acme/app", "public", at="2026-12-05T11:00:00Z"),
    )
    assert response.json["bindings"] == {str(binding_id): "sync_disabled_visibility_unconfirmed"}
    assert not binding_row(ctx, binding_id).sync_enabled


def test_a_repository_removed_from_the_installation_leaves_a_notice_until_added(client, ctx):
    binding_id = add_binding(ctx, 7)
    entry = {"id": 7, "node_id": "n", "name": "app", "full_name": "acme/app", "private": True}
    removed = webhooks.payload("installation_repositories", "removed", repositories_removed=[entry])
    response = deliver(client, "installation_repositories", removed)
    assert response.json["bindings"] == {str(binding_id): "access_lost"}
    assert "removed from the GitHub App installation" in (
        binding_row(ctx, binding_id).access_notice or ""
    )
    added = webhooks.payload("installation_repositories", "added", repositories_added=[entry])
    response = deliver(client, "installation_repositories", added)
    assert response.json["bindings"] == {str(binding_id): "access_restored,run_requested"}
    assert binding_row(ctx, binding_id).access_notice is None


def test_the_configured_installation_uninstalled_concerns_every_github_binding(app, ctx):
    app.extensions["reposync.ctx"].settings = ctx.settings.with_overrides(
        github_installation_id="99"
    )
    first, second = add_binding(ctx, 7), add_binding(ctx, 8, github_side=Side.B)
    body = webhooks.payload("installation", "deleted")
    body["installation"]["id"] = 99
    response = deliver(app.test_client(), "installation", body)
    assert response.json["bindings"] == {str(first): "access_lost", str(second): "access_lost"}
    assert "uninstalled" in (binding_row(ctx, second).access_notice or "")


def test_an_installation_event_concerns_the_bindings_whose_side_names_it(app, ctx):
    """A Connect GitHub Binding opens its GitHub side through its own installation
    (``github:installation:<id>``): that installation's uninstall concerns it, though it
    is not the configured one; the configured installation's concerns the sides without
    a connection (and the one naming it), never a side on another installation."""
    app.extensions["reposync.ctx"].settings = ctx.settings.with_overrides(
        github_installation_id="99"
    )
    configured = add_binding(ctx, 7)
    connected = add_binding(ctx, 8, github_side=Side.B, connection_id="github:installation:42")
    named = add_binding(ctx, 9, connection_id="github:installation:99")
    body = webhooks.payload("installation", "deleted")
    body["installation"]["id"] = 42
    response = deliver(app.test_client(), "installation", body)
    assert response.json["bindings"] == {str(connected): "access_lost"}
    assert "uninstalled" in (binding_row(ctx, connected).access_notice or "")
    assert binding_row(ctx, configured).access_notice is None
    body["installation"]["id"] = 99
    response = deliver(app.test_client(), "installation", body)
    assert response.json["bindings"] == {str(configured): "access_lost", str(named): "access_lost"}
    assert "uninstalled" in (binding_row(ctx, connected).access_notice or "")


def test_the_binding_shows_what_webhooks_left_on_it(client, ctx, tokens, binding):
    """GET /bindings/{id}: the owed Run's time and the access notice."""
    from tests.integration.web.conftest import bearer

    shown = client.get(url(f"/bindings/{binding.id}"), headers=bearer(tokens.admin)).json
    assert shown["event_run_due_at"] is None
    assert shown["access_notice"] is None


def test_a_push_delivery_moves_a_branch_watch_once(client, ctx):
    """The delivery's ref move reaches the watch's cursor in the delivery's transaction:
    a redelivery is a duplicate and moves nothing twice; an older move arriving late
    does not move the cursor back."""
    from reposync.models import BranchWatch
    from reposync.providers.base import EndpointInfo
    from reposync.service.accounts.users import create_user
    from reposync.service.webhooks.watches import create_watch

    owner = create_user(ctx, "wanda", role="admin")
    watch, _ = create_watch(
        ctx, EndpointInfo("github", "acme/app", "7"), "main", created_by=owner.id
    )
    newer = webhooks.push(7, "acme/app", "refs/heads/main", SHA_A, SHA_B, pushed_at=1_800_000_100)
    older = webhooks.push(
        7, "acme/app", "refs/heads/main", "c" * 40, SHA_A, pushed_at=1_800_000_000
    )
    assert deliver(client, "push", newer, delivery_id="w-1").status_code == 202
    assert deliver(client, "push", newer, delivery_id="w-1").status_code == 200
    assert deliver(client, "push", older, delivery_id="w-2").status_code == 202
    with ctx.db.session() as session:
        row = session.get(BranchWatch, watch.id)
        assert row is not None
        assert (row.before, row.after, row.movements) == (SHA_A, SHA_B, 1)


# -- values out of range, names outside the grammar -------------------------------------


@pytest.mark.parametrize("pushed_at", [253_402_300_800, 10**20, -(10**15)])
def test_a_time_out_of_range_is_422_not_500_and_records_nothing(client, ctx, recorder, pushed_at):
    """A signed push whose pushed_at no datetime holds: a precise refusal, nothing kept."""
    binding_id = add_binding(ctx, 7)
    problem = assert_problem(
        deliver(client, "push", push(pushed_at=pushed_at)), 422, "webhook_payload_invalid"
    )
    assert "$.repository.pushed_at" in problem["detail"]
    assert "out of range" in problem["detail"]
    assert deliveries(ctx) == 0
    assert binding_row(ctx, binding_id).event_run_due_at is None


@pytest.mark.parametrize("full_name", ["acme/app/../../x", "evil/<script>", "acme/.."])
def test_a_rename_to_a_name_github_cannot_have_leaves_the_locator_alone(client, ctx, full_name):
    """The new owner/name is held to GitHub's grammar before any Binding takes it."""
    binding_id = add_binding(ctx, 7, name="acme/app")
    body = webhooks.renamed(7, "acme/new", "app")
    body["repository"]["full_name"] = full_name
    problem = assert_problem(deliver(client, "repository", body), 422, "webhook_payload_invalid")
    assert "$.repository.full_name" in problem["detail"]
    assert binding_row(ctx, binding_id).a_locator == "acme/app"
    assert deliveries(ctx) == 0


# -- large deliveries ---------------------------------------------------------------------


def listed(count: int, start: int = 1_000) -> list[dict[str, Any]]:
    return [
        {
            "id": start + i,
            "node_id": f"R{i}",
            "name": f"r{i}",
            "full_name": f"big/r{i}",
            "private": True,
        }
        for i in range(count)
    ]


def bind_many(ctx: ServiceContext, github_ids: list[int]) -> list[int]:
    """Bindings on these GitHub repositories (alternately as side a and side b)."""
    ids = [
        add_binding(ctx, github_id, github_side=Side.A if n % 2 else Side.B)
        for n, github_id in enumerate(github_ids)
    ]
    return ids


class WriteTransactions:
    """How many Binding rows each write transaction changed."""

    def __init__(self, ctx: ServiceContext) -> None:
        self.current = 0
        self.sizes: list[int] = []
        self.engine = ctx.db.engine
        event.listen(self.engine, "after_cursor_execute", self._statement)
        event.listen(self.engine, "commit", self._end)

    def _statement(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("UPDATE BINDINGS"):
            self.current += max(cursor.rowcount, 1)

    def _end(self, conn) -> None:
        if self.current:
            self.sizes.append(self.current)
        self.current = 0

    def close(self) -> None:
        event.remove(self.engine, "after_cursor_execute", self._statement)
        event.remove(self.engine, "commit", self._end)


@pytest.mark.parametrize("count", [50, 5_000], ids=["few-looked-up", "many-scanned"])
def test_an_uninstall_listing_many_repositories_is_applied_in_bounded_transactions(
    client, ctx, recorder, count
):
    """Every bound repository of the list gets its notice; no write transaction changes
    more than APPLY_CHUNK Bindings; the delivery record keeps a bounded sample."""
    bound_ids = [1_000 + i for i in range(0, count, count // 25)][:25]
    if count > intake.LOOKUP_CHUNK:
        bound_ids += [1_000 + i for i in range(1, count, 11)][: intake.APPLY_CHUNK * 2]
    bindings = bind_many(ctx, bound_ids)
    unrelated = add_binding(ctx, 999_999)
    body = webhooks.payload("installation", "deleted", repositories=listed(count))
    writes = WriteTransactions(ctx)
    try:
        response = deliver(client, "installation", body)
    finally:
        writes.close()
    assert response.status_code == 202
    assert response.json["bindings"] == {str(b): "access_lost" for b in bindings}
    assert all("uninstalled" in (binding_row(ctx, b).access_notice or "") for b in bindings)
    assert binding_row(ctx, unrelated).access_notice is None
    assert max(writes.sizes) <= intake.APPLY_CHUNK
    assert sum(writes.sizes) >= len(bindings)
    if len(bindings) > intake.APPLY_CHUNK:
        assert len(writes.sizes) > 1
    with ctx.db.session() as session:
        (record,) = session.execute(select(IncomingWebhook)).scalars()
        assert record.hints["repository_count"] == count
        assert len(record.hints["repositories"]) == min(count, intake.RECORDED_REPOSITORIES)


def test_a_large_delivery_cut_short_is_applied_whole_by_its_redelivery(
    client, ctx, recorder, monkeypatch
):
    """The process dies after a first chunk: nothing is recorded, so GitHub's redelivery
    (same id) is no duplicate and applies every chunk."""
    bindings = bind_many(ctx, [1_000 + i for i in range(intake.APPLY_CHUNK + 5)])
    body = webhooks.payload("installation", "deleted", repositories=listed(300))
    applied = intake._apply_chunk
    calls = []

    def dies_on_the_second(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the worker died")
        applied(*args, **kwargs)

    monkeypatch.setattr(intake, "_apply_chunk", dies_on_the_second)
    assert deliver(client, "installation", body, delivery_id="cut-short").status_code == 500
    assert deliveries(ctx) == 0
    noticed = [b for b in bindings if binding_row(ctx, b).access_notice]
    assert 0 < len(noticed) < len(bindings)
    monkeypatch.setattr(intake, "_apply_chunk", applied)
    again = deliver(client, "installation", body, delivery_id="cut-short")
    assert again.status_code == 202
    assert again.json["outcome"] == "accepted"
    assert all(binding_row(ctx, b).access_notice for b in bindings)
    assert deliveries(ctx) == 1


@pytest.mark.postgres
@pytest.mark.parametrize("count", [10, 3_000], ids=["few-looked-up", "many-scanned"])
def test_installation_lists_find_their_bindings_on_postgresql(pg_ctx, count):
    """Both lookups (indexed IN, and the scan past LOOKUP_CHUNK) on PostgreSQL, either side."""
    pg_ctx.settings = pg_ctx.settings.with_overrides(github_webhook_secret=WEBHOOK_SECRET)
    pg_ctx.dispatcher = Recorder()
    client = create_app(pg_ctx.settings, ctx=pg_ctx).test_client()
    bindings = bind_many(pg_ctx, [1_000, 1_000 + count - 1])
    add_binding(pg_ctx, 1_000 + count)  # not listed
    body = webhooks.payload("installation_repositories", "added", repositories_added=listed(count))
    response = deliver(client, "installation_repositories", body)
    standby, authority = bindings  # GitHub is side b of the first, the authority of the second
    assert response.json["bindings"] == {
        str(standby): "access_restored",
        str(authority): "access_restored,run_requested",
    }
