"""The outbox in the service: delivery rows written with the state change they report,
claims that let one attempt through, the retry schedule, dead letters, the tick's
recovery, and each emission point (a Run's end, drift, blocked items, a handoff).

Real databases (SQLite, and PostgreSQL where concurrency matters), real Git and local
forges, a real loopback receiver; the delivery operation is called in this process (the
distributed tests run it in real workers).
"""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select, update

from reposync import faults
from reposync.lifecycle import Stage
from reposync.models import Run, RunItem, WebhookDelivery
from reposync.providers.base import EndpointSpec
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.providers.local.provider import LocalProvider
from reposync.service.accounts.users import create_user
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext, Step
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.service.pipeline.runner import execute_step
from reposync.service.runs import create_run, request_cancel
from reposync.service.webhooks.deliveries import backoff, claim, deliver, redispatch_overdue
from reposync.service.webhooks.outbox import notify
from reposync.service.webhooks.subscriptions import create_subscription
from reposync.web.schemas.subscriptions import (
    BranchMovedDataSchema,
    DriftDetectedDataSchema,
    HandoffCompletedDataSchema,
    ItemBlockedDataSchema,
    RunEventDataSchema,
    WebhookEnvelopeSchema,
)
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import WHEN, forge
from tests.integration.web.conftest import TEST_SECRET_KEY
from tests.webhook_receiver import receiver
from tests.workers import wait_for

SECRET = "sixteen-chars-or-more"


class Recording:
    """A dispatcher that keeps what it was handed (nothing is sent by it)."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[int, float]] = []
        self.steps: list[Step] = []

    def dispatch(self, step: Step) -> None:
        self.steps.append(step)

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        return None

    def dispatch_delivery(self, delivery_id: int, delay: float = 0.0) -> None:
        self.deliveries.append((delivery_id, delay))


def webhook_ctx(base: ServiceContext, **overrides) -> ServiceContext:
    settings = base.settings.with_overrides(
        secret_key=TEST_SECRET_KEY,
        webhook_allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),),
        webhook_backoff_unit=0.01,
        webhook_timeout=3.0,
        **overrides,
    )
    return ServiceContext(settings=settings, db=base.db, dispatcher=Recording())


@pytest.fixture
def wctx(ctx) -> ServiceContext:
    return webhook_ctx(ctx)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_ctx(request) -> ServiceContext:
    base = request.getfixturevalue("ctx" if request.param == "sqlite" else "pg_ctx")
    return webhook_ctx(base)


@pytest.fixture
def admin_id(wctx) -> int:
    return create_user(wctx, "ops", role="admin").id


def rows(ctx: ServiceContext) -> list[WebhookDelivery]:
    with ctx.db.session() as session:
        return list(session.execute(select(WebhookDelivery).order_by(WebhookDelivery.id)).scalars())


def row(ctx: ServiceContext, delivery_id: int) -> WebhookDelivery:
    with ctx.db.session() as session:
        found = session.get(WebhookDelivery, delivery_id)
        assert found is not None
        return found


DOCUMENTED = {
    "run.completed": RunEventDataSchema,
    "run.failed": RunEventDataSchema,
    "run.requires_attention": RunEventDataSchema,
    "item.blocked": ItemBlockedDataSchema,
    "drift.detected": DriftDetectedDataSchema,
    "handoff.completed": HandoffCompletedDataSchema,
    "branch.moved": BranchMovedDataSchema,
}


def documented(delivery: WebhookDelivery) -> dict:
    """The delivery's data, after checking the body is exactly what the OpenAPI
    documents (no field missing, none undocumented)."""
    body = json.loads(delivery.body)
    assert WebhookEnvelopeSchema().validate(body) == {}
    assert DOCUMENTED[delivery.event]().validate(body["data"]) == {}
    return dict(body["data"])


def outbound(status: str) -> float:
    """reposync_webhook_deliveries_total{direction="outbound", status=...} in this process."""
    value = REGISTRY.get_sample_value(
        "reposync_webhook_deliveries_total", {"direction": "outbound", "status": status}
    )
    return value or 0.0


def subscribe(ctx, owner_id, url, events, **extra):
    return create_subscription(ctx, owner_id, url=url, events=events, secret=SECRET, **extra)


def one_delivery(ctx: ServiceContext, owner_id: int, url: str) -> int:
    subscribe(ctx, owner_id, url, ["branch.moved"])
    with ctx.db.transaction() as session:
        [delivery_id] = notify(session, "branch.moved", {"ref": "refs/heads/main"})
    return delivery_id


# -- the outbox rule -------------------------------------------------------------------


def test_a_runs_end_and_its_delivery_commit_together(any_ctx, tmp_path, monkeypatch):
    """A failure right after the final status and its delivery rows were written rolls
    both back: the Run is still unfinished and no delivery exists; resumed, it finishes
    with exactly one delivery."""
    ctx = webhook_ctx(any_ctx, lease_ttl=1.0)
    admin = create_user(ctx, "ops", role="admin")
    subscribe(ctx, admin.id, "http://127.0.0.1:9/hook", ["run.completed", "run.failed"])
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)
    binding = bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}"))
    run = create_run(ctx, binding.id)
    step: Step | None = Step(run.id, Stage.CHECKING_ACCESS, None)
    while step is not None and step.stage is not Stage.FINALIZING:
        step = execute_step(ctx, step)
    assert step is not None

    # Both the finish and the bug report the runner writes after it fail at that point.
    monkeypatch.setenv(faults.ENV, "finalizing.after_notify:fail:times=2")
    faults.reset()
    try:
        with pytest.raises(faults.InjectedFault):
            execute_step(ctx, step)
    finally:
        monkeypatch.delenv(faults.ENV)
        faults.reset()
    with ctx.db.session() as session:
        unfinished = session.get(Run, run.id)
        assert unfinished is not None
        assert (unfinished.status, unfinished.stage) == ("running", "finalizing")
    assert rows(ctx) == []
    assert ctx.dispatcher.deliveries == []

    def resumed() -> bool:  # claimable once the dead execution's lease ran out
        execute_step(ctx, Step(run.id, None, None))
        with ctx.db.session() as session:
            return session.get(Run, run.id).status == "completed"

    wait_for(resumed, 30, "the Run to be resumed and finished")
    [written] = rows(ctx)
    assert written.event == "run.completed"
    assert documented(written)["run"]["id"] == run.id
    assert ctx.dispatcher.deliveries == [(written.id, 0.0)]


def test_a_cancelled_run_tells_nobody(wctx, admin_id, tmp_path):
    subscribe(
        wctx,
        admin_id,
        "http://127.0.0.1:9/h",
        ["run.completed", "run.failed", "run.requires_attention"],
    )
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    binding = bind(wctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}"))
    run = create_run(wctx, binding.id)
    request_cancel(wctx, run.id)
    step: Step | None = Step(run.id, Stage.CHECKING_ACCESS, None)
    while step is not None:
        step = execute_step(wctx, step)
    with wctx.db.session() as session:
        assert session.get(Run, run.id).status == "cancelled"
    assert rows(wctx) == []


# -- claims ----------------------------------------------------------------------------


def test_two_workers_never_claim_the_same_attempt(any_ctx):
    """Many rounds of two concurrent claims of one due row: exactly one wins each."""
    admin = create_user(any_ctx, "ops", role="admin")
    delivery_id = one_delivery(any_ctx, admin.id, "http://127.0.0.1:9/h")
    for attempt in range(1, 5):
        barrier = threading.Barrier(2)
        results: list[object] = []

        def contend(name: str, barrier=barrier, results=results) -> None:
            barrier.wait()
            results.append(claim(any_ctx, delivery_id, name))

        threads = [threading.Thread(target=contend, args=(f"w{n}",)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        won = [r for r in results if r is not None and not isinstance(r, float)]
        assert len(results) == 2
        assert len(won) == 1, results
        assert won[0].attempt == attempt
        # The lease holds against a third claimer; then it "expires" for the next round.
        assert claim(any_ctx, delivery_id, "late") is None
        with any_ctx.db.transaction() as session:
            session.execute(
                update(WebhookDelivery).values(
                    lease_expires_at=datetime.now(UTC) - timedelta(seconds=1),
                    next_attempt_at=datetime.now(UTC) - timedelta(seconds=1),
                )
            )


# -- one attempt after another ---------------------------------------------------------


def test_retries_follow_the_backoff_then_the_last_failure_is_a_dead_letter(wctx, admin_id):
    """503 five times: attempts 1-4 are rescheduled 2^n units later (the dispatcher is
    handed exactly that delay, and the row says so), the fifth fails for good."""
    before = {status: outbound(status) for status in ("retrying", "failed", "delivered")}
    with receiver() as hook:
        hook.answer(then=503)
        delivery_id = one_delivery(wctx, admin_id, hook.url)
        dispatched = wctx.dispatcher.deliveries
        delays = []
        for attempt in range(1, 6):
            wait_for(lambda: deliver(wctx, delivery_id, owner="t") is not None, 10, "due")
            state = row(wctx, delivery_id)
            assert state.attempts == attempt
            assert state.response_status == 503
            if attempt < 5:
                assert state.status == "pending"
                delay = backoff(wctx.settings, attempt)
                assert dispatched[-1] == (delivery_id, delay)
                delays.append(delay)
                # Counted from the failure, which came after the claim (last_attempt_at).
                assert state.next_attempt_at - state.last_attempt_at >= timedelta(seconds=delay)
        assert delays == [0.02, 0.04, 0.08, 0.16]  # 2^attempt units
        assert state.status == "failed"
        assert state.next_attempt_at is None
        assert (
            state.last_error == "gave up after 5 attempts; the last: HTTP 503 Service Unavailable"
        )
        assert len(hook.requests) == 5
        assert {r.header("X-Reposync-Delivery") for r in hook.requests} == {state.guid}
        assert [r.header("X-Reposync-Attempt") for r in hook.requests] == ["1", "2", "3", "4", "5"]
        assert deliver(wctx, delivery_id, owner="t") is None  # a dead letter stays dead
        assert len(hook.requests) == 5
    # Every attempt counted once, by what it came to (the metrics' hook point).
    assert {status: outbound(status) - count for status, count in before.items()} == {
        "retrying": 4,
        "failed": 1,
        "delivered": 0,
    }


def test_a_429_waits_as_long_as_retry_after_asks_within_the_cap(wctx, admin_id):
    with receiver() as hook:
        hook.answer((429, {"Retry-After": "30"}), then=200)
        delivery_id = one_delivery(wctx, admin_id, hook.url)
        assert deliver(wctx, delivery_id, owner="t") == "pending"
        state = row(wctx, delivery_id)
        wanted = wctx.settings.webhook_backoff_max  # 30 s asked, 60 s cap
        assert state.next_attempt_at - state.last_attempt_at >= timedelta(seconds=min(30, wanted))
        assert deliver(wctx, delivery_id, owner="t") is None  # not due: nothing sent
        assert len(hook.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422, 301])
def test_other_answers_fail_at_once(wctx, admin_id, status):
    with receiver() as hook:
        hook.answer(status if status != 301 else (301, {"Location": hook.url + "/moved"}))
        delivery_id = one_delivery(wctx, admin_id, hook.url)
        assert deliver(wctx, delivery_id, owner="t") == "failed"
        state = row(wctx, delivery_id)
        assert (state.attempts, state.response_status) == (1, status)
        assert state.next_attempt_at is None
        assert len(hook.requests) == 1  # a redirect is not followed either
        assert wctx.dispatcher.deliveries == []  # no retry


def test_a_target_that_turned_internal_is_refused_at_send_time(wctx, admin_id):
    """The allow-list lets the subscription be saved; it is gone when the row is sent."""
    delivery_id = one_delivery(wctx, admin_id, "http://127.0.0.1:9/hook")
    strict = ServiceContext(
        settings=wctx.settings.with_overrides(webhook_allowed_networks=()),
        db=wctx.db,
        dispatcher=Recording(),
    )
    assert deliver(strict, delivery_id, owner="t") == "failed"
    assert "loopback" in (row(wctx, delivery_id).last_error or "")


def test_a_secret_no_key_opens_is_a_dead_letter_not_a_crash(wctx, admin_id):
    from cryptography.fernet import Fernet

    delivery_id = one_delivery(wctx, admin_id, "http://127.0.0.1:9/hook")
    rekeyed = ServiceContext(
        settings=wctx.settings.with_overrides(secret_key=Fernet.generate_key().decode()),
        db=wctx.db,
        dispatcher=Recording(),
    )
    assert deliver(rekeyed, delivery_id, owner="t") == "failed"
    assert "REPOSYNC_SECRET_KEY" in (row(wctx, delivery_id).last_error or "")


def test_a_paused_subscription_holds_its_pending_deliveries(wctx, admin_id):
    from reposync.service.webhooks.subscriptions import update_subscription

    with receiver() as hook:
        delivery_id = one_delivery(wctx, admin_id, hook.url)
        [subscription_id] = {r.subscription_id for r in rows(wctx)}
        update_subscription(wctx, subscription_id, active=False)
        assert deliver(wctx, delivery_id, owner="t") is None
        assert row(wctx, delivery_id).status == "pending"
        update_subscription(wctx, subscription_id, active=True)
        assert deliver(wctx, delivery_id, owner="t") == "delivered"
        assert len(hook.requests) == 1


# -- the tick --------------------------------------------------------------------------


def test_the_tick_redispatches_overdue_rows_and_dead_letters_abandoned_last_attempts(
    any_ctx,
):
    ctx = webhook_ctx(any_ctx, dispatch_grace=5.0)
    admin = create_user(ctx, "ops", role="admin")
    fresh = one_delivery(ctx, admin.id, "http://127.0.0.1:9/a")
    assert redispatch_overdue(ctx) == 0  # due, but within the grace: its message is coming
    long_ago = datetime.now(UTC) - timedelta(minutes=5)
    with ctx.db.transaction() as session:
        session.execute(update(WebhookDelivery).values(next_attempt_at=long_ago))
    claimed = claim(ctx, fresh, "dying-worker")
    assert claimed is not None
    assert not isinstance(claimed, float)
    assert redispatch_overdue(ctx) == 0  # its claim is alive: someone is sending it

    with ctx.db.transaction() as session:  # the worker died; its claim ran out
        session.execute(update(WebhookDelivery).values(lease_expires_at=long_ago))
    dispatcher: Recording = ctx.dispatcher
    dispatcher.deliveries.clear()
    assert redispatch_overdue(ctx) == 1
    assert dispatcher.deliveries == [(fresh, 0.0)]

    # The same, on its last attempt: nothing is left to try; it becomes a dead letter.
    with ctx.db.transaction() as session:
        session.execute(update(WebhookDelivery).values(attempts=5))
    assert redispatch_overdue(ctx) == 0
    dead = row(ctx, fresh)
    assert dead.status == "failed"
    assert "stopped before recording" in (dead.last_error or "")


# -- emission points -------------------------------------------------------------------


@contextmanager
def outside_reposync(path: Path) -> Iterator[ForgeAuthoring]:
    """Edit a standby as someone who ignores its standby mark would (the mark is put
    back afterwards)."""
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    authority = provider.standby_of()
    provider.mark_standby(None)
    try:
        yield ForgeAuthoring(provider.forge)
    finally:
        provider.mark_standby(authority)
        provider.close()


@pytest.fixture
def forges(tmp_path, wctx):
    a = generate(tmp_path / "a.git", commits=4, branches=1, tags=1)
    b = tmp_path / "b.git"
    with forge(a) as f:
        f.create_label("bug", color="d73a4a")
        issue = f.create_issue("Synced", author="ann", created_at=WHEN)
        f.add_comment("issue", issue, "a comment", author="bob", created_at=WHEN)
    request = SyncRequest(f"local:{a}", f"local:{b}")
    assert sync(wctx, request).status == "completed"
    return a, b, bind(wctx, request).id


def test_drift_found_by_a_full_audit_is_reported_by_kind(wctx, admin_id, forges):
    """Changed on the standby behind reposync's back: a managed label edited, a managed
    comment deleted, and a label created there under a name the authority also uses."""
    a, b, binding_id = forges
    subscribe(
        wctx,
        admin_id,
        "http://127.0.0.1:9/h",
        ["drift.detected", "run.requires_attention", "run.completed"],
        binding_id=binding_id,
    )
    with outside_reposync(b) as f:
        [label] = [o for o in f.reader.objects_of("label") if o.payload["name"] == "bug"]
        f.update("label", label.identity, color="000000")
        [comment] = f.reader.objects_of("issue_comment")
        f.delete("issue_comment", comment.identity)
        f.create_label("both", color="111111")
    with forge(a) as f:
        f.create_label("both", color="222222")

    run = sync(wctx, SyncRequest(f"local:{a}", f"local:{b}", full_audit=True))
    assert run.status == "requires_attention", run.report["problems"]
    by_event = {r.event: documented(r) for r in rows(wctx)}
    assert set(by_event) == {"drift.detected", "run.requires_attention"}
    drift = by_event["drift.detected"]
    assert drift["kinds"] == {"modified": 1, "deleted": 1, "conflicting": 1}
    assert drift["count"] == 3
    assert not drift["truncated"]
    assert {(o["object_type"], o["kind"]) for o in drift["objects"]} == {
        ("label", "modified"),
        ("issue_comment", "deleted"),
        ("label", "conflicting"),
    }
    assert drift["run"]["id"] == run.id
    attention = by_event["run.requires_attention"]
    assert attention["run"]["status"] == "requires_attention"
    assert attention["run"]["counters"]["conflicts"] == 1
    assert any(p["error_code"] == "conflict" for p in attention["problems"])


def test_items_left_blocked_are_reported_once_per_run(wctx, admin_id, forges):
    """An item whose write's outcome stayed unknown ends blocked: the Run ends blocked and
    says so, and one ``item.blocked`` names the item. (The item's state is planted
    before finalizing: a local target always proves an outcome by read-back.)"""
    a, _, binding_id = forges
    subscribe(
        wctx,
        admin_id,
        "http://127.0.0.1:9/h",
        ["item.blocked", "run.requires_attention", "drift.detected"],
    )
    with forge(a) as f:
        f.create_label("new", color="00ff00")
    run = create_run(wctx, binding_id)
    step: Step | None = Step(run.id, Stage.CHECKING_ACCESS, None)
    while step is not None and step.stage is not Stage.FINALIZING:
        step = execute_step(wctx, step)
    assert step is not None
    with wctx.db.transaction() as session:
        session.execute(
            update(RunItem)
            .where(RunItem.run_id == run.id, RunItem.object_type == "label")
            .values(state="blocked", error_code="result_unknown", error_message="lost answer")
        )
    execute_step(wctx, step)

    by_event = {r.event: documented(r) for r in rows(wctx)}
    assert set(by_event) == {"item.blocked", "run.requires_attention"}
    blocked = by_event["item.blocked"]
    assert blocked["count"] == 1
    [item] = blocked["items"]
    assert (item["object_type"], item["error_code"], item["state"]) == (
        "label",
        "result_unknown",
        "blocked",
    )
    assert item["object_key"]
    assert by_event["run.requires_attention"]["run"]["status"] == "blocked"


def test_a_handoff_is_announced_with_the_switch(wctx, admin_id, forges):
    _, _, binding_id = forges
    subscribe(wctx, admin_id, "http://127.0.0.1:9/h", ["handoff.completed"], binding_id=binding_id)
    outcome = handoff(wctx, binding_id)
    assert outcome.switched, outcome.reason
    [written] = rows(wctx)
    data = documented(written)
    assert data["binding"]["authority_side"] == "b"
    assert data["binding"]["authority_epoch"] == 2
    assert data["previous_authority_side"] == "a"
    assert data["forward_run_id"] == outcome.forward_run_id
    assert data["reverse_run_id"] == outcome.reverse_run_id
    assert data["binding"]["source"].endswith("b.git")
    assert (written.event, written.binding_id) == ("handoff.completed", binding_id)

    again = handoff(wctx, binding_id, forward_run_id=outcome.forward_run_id)
    assert again.reason.startswith("already settled")  # a duplicate of the handoff task ...
    assert len(rows(wctx)) == 1  # ... announces nothing twice


def test_events_of_another_binding_or_branch_are_filtered_out(wctx, admin_id, forges, tmp_path):
    _, _, binding_id = forges
    other_source = generate(tmp_path / "o.git", commits=2, branches=0, tags=0)
    other = bind(wctx, SyncRequest(f"local:{other_source}", f"local:{tmp_path / 'o-dst.git'}"))
    mine = subscribe(
        wctx,
        admin_id,
        "http://127.0.0.1:9/h",
        ["branch.moved"],
        binding_id=binding_id,
        branch="main",
    )
    with wctx.db.transaction() as session:
        assert notify(session, "branch.moved", {}, binding_id=other.id, branch="main") == []
        assert notify(session, "branch.moved", {}, binding_id=binding_id, branch="dev") == []
        assert notify(session, "run.completed", {}, binding_id=binding_id) == []
        [hit] = notify(session, "branch.moved", {}, binding_id=binding_id, branch="refs/heads/main")
    assert row(wctx, hit).subscription_id == mine.id
    with pytest.raises(ValueError, match="unknown event"), wctx.db.transaction() as session:
        notify(session, "run.exploded", {})


def test_a_members_repository_event_reaches_it_through_its_grant(wctx, tmp_path):
    """An event about a repository (a branch watch's) rather than a Binding reaches a
    member's subscription when the member holds a grant on that repository."""
    from reposync.service.accounts.users import grant

    member = create_user(wctx, "mel")
    stranger = create_user(wctx, "sam")
    grant(wctx, member.id, "github", "R_1")
    for user in (member, stranger):
        subscribe(wctx, user.id, "http://127.0.0.1:9/h", ["branch.moved"])
    with wctx.db.transaction() as session:
        ids = notify(
            session,
            "branch.moved",
            {"ref": "refs/heads/main"},
            branch="main",
            repositories=[("github", "R_1")],
        )
        assert notify(session, "branch.moved", {}, branch="main") == []  # about nothing
    assert [row(wctx, i).subscription_id for i in ids] == [1]


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_watched_branch_moving_writes_branch_moved_with_the_cursor(backend, request, tmp_path):
    """RECONCILE's watches call the outbox in the transaction that moves the cursor: a
    subscription filtered on a Binding of the repository and a granted member's get the
    event; a stranger's does not; a late (older) delivery moves nothing and sends nothing."""
    from reposync.providers.base import EndpointInfo
    from reposync.service.accounts.users import grant
    from reposync.service.webhooks import watches
    from reposync.service.webhooks.outbox import written_in

    ctx = webhook_ctx(request.getfixturevalue("ctx" if backend == "sqlite" else "pg_ctx"))
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    binding = bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}"))
    provider, repository_id = binding.a_provider, binding.a_repository_id
    admin = create_user(ctx, "ops", role="admin")
    member = create_user(ctx, "mel")
    stranger = create_user(ctx, "sam")
    grant(ctx, member.id, provider, repository_id)
    watched = EndpointInfo(provider, str(source), repository_id)
    watches.create_watch(ctx, watched, "main", created_by=admin.id)
    filtered = subscribe(
        ctx,
        admin.id,
        "http://127.0.0.1:9/a",
        ["branch.moved"],
        binding_id=binding.id,
        branch="main",
    )
    granted = subscribe(ctx, member.id, "http://127.0.0.1:9/m", ["branch.moved"])
    subscribe(ctx, stranger.id, "http://127.0.0.1:9/s", ["branch.moved"])
    subscribe(ctx, admin.id, "http://127.0.0.1:9/d", ["branch.moved"], branch="dev")

    at = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    with ctx.db.transaction() as session:
        moved = watches.observe_branch_moves(
            session, provider, repository_id, [("refs/heads/main", "a" * 40, "b" * 40)], at
        )
        ids = written_in(session)
    assert len(moved) == 1
    written = [row(ctx, i) for i in ids]
    assert {w.subscription_id for w in written} == {filtered.id, granted.id}
    body = json.loads(written[0].body)
    documented(written[0])
    assert (body["event"], body["branch"], body["binding_id"]) == ("branch.moved", "main", None)
    assert (body["data"]["before"], body["data"]["after"]) == ("a" * 40, "b" * 40)
    assert body["data"]["binding_ids"] == [binding.id]

    with ctx.db.transaction() as session:  # an older movement, delivered late
        late = watches.observe_branch_moves(
            session,
            provider,
            repository_id,
            [("refs/heads/main", "c" * 40, "a" * 40)],
            at - timedelta(minutes=1),
        )
        assert written_in(session) == []
    assert late == []
    assert len(rows(ctx)) == 2
