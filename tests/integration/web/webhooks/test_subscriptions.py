"""``/subscriptions``: create, list, change, delete; deliveries and redelivery; who sees
what. In-process API on the embedded database; deliveries are sent by calling the
delivery operation directly against a real loopback receiver (the distributed tests
send them from real workers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.models import WebhookDelivery, WebhookSubscription
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.webhooks.deliveries import deliver
from reposync.service.webhooks.outbox import notify
from reposync.service.webhooks.webhook_transport import verify
from reposync.web.app import create_app
from tests.gitrepo import generate
from tests.integration.web.conftest import assert_problem, bearer, url
from tests.webhook_receiver import receiver

SECRET = "a-secret-of-some-length"


def subscribe(client, token, hook_url, **extra):
    body = {"url": hook_url, "events": ["run.completed"], "secret": SECRET, **extra}
    return client.post(url("/subscriptions"), headers=bearer(token), json=body)


def deliveries(ctx: ServiceContext, subscription_id: int | None = None) -> list[WebhookDelivery]:
    with ctx.db.session() as session:
        query = select(WebhookDelivery).order_by(WebhookDelivery.id)
        if subscription_id is not None:
            query = query.where(WebhookDelivery.subscription_id == subscription_id)
        return list(session.execute(query).scalars())


def run_pair(ctx: ServiceContext, source: Path, target: Path):
    return sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))


def test_create_show_list_change_and_delete(client, tokens, binding, ctx):
    """The secret goes in sealed and never comes out; the owner sees and changes it."""
    created = subscribe(
        client,
        tokens.admin,
        "http://127.0.0.1:9/hook",
        binding_id=binding.id,
        branch="main",
        description="ci",
    )
    assert created.status_code == 201, created.json
    body = created.json
    assert "secret" not in body
    assert "secret_sealed" not in body
    assert body["events"] == ["run.completed"]
    assert (body["binding_id"], body["branch"], body["active"]) == (binding.id, "main", True)
    assert created.headers["Location"].endswith(f"/subscriptions/{body['id']}")
    with ctx.db.session() as session:
        stored = session.get(WebhookSubscription, body["id"])
        assert stored is not None
        assert SECRET not in stored.secret_sealed  # sealed at rest

    shown = client.get(created.headers["Location"], headers=bearer(tokens.admin))
    assert shown.json == body
    listed = client.get(url("/subscriptions"), headers=bearer(tokens.admin)).json
    assert [s["id"] for s in listed["items"]] == [body["id"]]

    changed = client.patch(
        url(f"/subscriptions/{body['id']}"),
        headers=bearer(tokens.admin),
        json={
            "events": ["run.failed", "run.completed", "run.failed"],
            "active": False,
            "branch": None,
            "secret": "another-secret-of-length",
        },
    )
    assert changed.status_code == 200, changed.json
    assert changed.json["events"] == ["run.completed", "run.failed"]  # one order, no repeats
    assert (changed.json["active"], changed.json["branch"]) == (False, None)
    with ctx.db.session() as session:
        resealed = session.get(WebhookSubscription, body["id"])
        assert resealed is not None
        assert resealed.secret_sealed != stored.secret_sealed

    gone = client.delete(url(f"/subscriptions/{body['id']}"), headers=bearer(tokens.admin))
    assert gone.status_code == 204
    again = client.get(url(f"/subscriptions/{body['id']}"), headers=bearer(tokens.admin))
    assert_problem(again, 404, "record_not_found")


@pytest.mark.parametrize(
    ("hook_url", "fragment"),
    [
        ("http://10.0.0.1/hook", "private"),
        ("http://169.254.169.254/latest", "link-local"),
        ("http://[::1]:8080/", "loopback"),  # the allow-list names 127.0.0.0/8 only
        ("http://[::ffff:10.1.1.1]/", "private"),
        ("ftp://127.0.0.1/", "https://"),
        ("http://user:pw@127.0.0.1/", "credentials"),
    ],
)
def test_internal_targets_are_refused_with_422(client, tokens, hook_url, fragment):
    body = assert_problem(subscribe(client, tokens.admin, hook_url), 422, "webhook_target_refused")
    assert fragment in body["detail"]
    assert "REPOSYNC_WEBHOOK_ALLOWED_NETWORKS" in body["suggested_action"]


def test_loopback_is_refused_without_the_allow_list(ctx, tokens):
    settings = ctx.settings.with_overrides(webhook_allowed_networks=())
    client = create_app(settings, ctx=ServiceContext(settings=settings, db=ctx.db)).test_client()
    response = subscribe(client, tokens.admin, "http://127.0.0.1:8080/hook")
    assert "loopback" in assert_problem(response, 422, "webhook_target_refused")["detail"]
    changed = client.patch(
        url("/subscriptions/1"), headers=bearer(tokens.admin), json={"url": "http://localhost/"}
    )
    assert changed.status_code == 404  # nothing to change: no subscription was saved


def test_bad_bodies_are_422(client, tokens):
    for body in (
        {"url": "http://127.0.0.1/", "events": [], "secret": SECRET},
        {"url": "http://127.0.0.1/", "events": ["run.exploded"], "secret": SECRET},
        {"url": "http://127.0.0.1/", "events": ["run.completed"], "secret": "short"},
        {"url": "http://127.0.0.1/", "events": ["run.completed"]},
        {"events": ["run.completed"], "secret": SECRET},
    ):
        response = client.post(url("/subscriptions"), headers=bearer(tokens.admin), json=body)
        assert_problem(response, 422, "validation_error")


def test_without_a_secret_key_the_api_says_so_with_503(ctx, tokens):
    settings = ctx.settings.with_overrides(secret_key="")
    client = create_app(settings, ctx=ServiceContext(settings=settings, db=ctx.db)).test_client()
    body = assert_problem(
        subscribe(client, tokens.admin, "http://127.0.0.1/hook"), 503, "secret_key_missing"
    )
    assert "REPOSYNC_SECRET_KEY" in body["suggested_action"]


def test_members_filter_only_on_visible_bindings_and_see_only_their_own(client, tokens, binding):
    """A Binding filter needs the Binding visible (404 otherwise); a subscription is its
    owner's and the admins' (404 for anyone else)."""
    mine = subscribe(client, tokens.member, "http://127.0.0.1/m", binding_id=binding.id)
    assert mine.status_code == 201, mine.json
    refused = subscribe(client, tokens.stranger, "http://127.0.0.1/s", binding_id=binding.id)
    assert_problem(refused, 404, "record_not_found")
    assert_problem(
        subscribe(client, tokens.admin, "http://127.0.0.1/a", binding_id=424242),
        404,
        "record_not_found",
    )
    theirs = subscribe(client, tokens.stranger, "http://127.0.0.1/s")  # no filter: fine
    assert theirs.status_code == 201

    path = url(f"/subscriptions/{mine.json['id']}")
    for method in ("get", "patch", "delete"):
        response = client.open(
            path,
            method=method.upper(),
            headers=bearer(tokens.stranger),
            json={"active": False} if method == "patch" else None,
        )
        assert_problem(response, 404, "record_not_found")
    assert client.get(path, headers=bearer(tokens.admin)).status_code == 200
    # The stranger may not move its own subscription onto an invisible Binding either.
    moved = client.patch(
        url(f"/subscriptions/{theirs.json['id']}"),
        headers=bearer(tokens.stranger),
        json={"binding_id": binding.id},
    )
    assert_problem(moved, 404, "record_not_found")

    def ids(token):
        return [
            s["id"] for s in client.get(url("/subscriptions"), headers=bearer(token)).json["items"]
        ]

    assert ids(tokens.member) == [mine.json["id"]]
    assert ids(tokens.stranger) == [theirs.json["id"]]
    assert ids(tokens.admin) == [mine.json["id"], theirs.json["id"]]


def test_a_runs_end_is_delivered_signed_listed_and_redelivered(
    client, tokens, ctx, source_repo, tmp_path
):
    """run.completed: a pending row at the Run's end; one attempt sends it signed; the
    listing shows it; a redelivery sends the same id and body again."""
    with receiver() as hook:
        created = subscribe(client, tokens.admin, hook.url, events=["run.completed", "run.failed"])
        subscription_id = created.json["id"]
        run = run_pair(ctx, source_repo, tmp_path / "dst.git")
        assert run.status == "completed"
        [row] = deliveries(ctx)
        assert (row.event, row.status, row.attempts) == ("run.completed", "pending", 0)

        listing = client.get(
            url(f"/subscriptions/{subscription_id}/deliveries"), headers=bearer(tokens.admin)
        ).json
        [shown] = listing["items"]
        assert shown["status"] == "pending"
        assert shown["next_attempt_at"]
        assert shown["payload"]["data"]["run"]["id"] == run.id
        redeliver_path = url(f"/subscriptions/{subscription_id}/deliveries/{row.id}/redeliver")
        assert_problem(
            client.post(redeliver_path, headers=bearer(tokens.admin)), 409, "not_allowed_now"
        )

        assert deliver(ctx, row.id, owner="test") == "delivered"
        [request] = hook.wait(1)
        assert request.header("X-Reposync-Event") == "run.completed"
        assert request.header("X-Reposync-Delivery") == row.guid
        assert request.header("X-Reposync-Attempt") == "1"
        assert verify(
            SECRET,
            request.header("X-Reposync-Timestamp") or "",
            request.body,
            request.header("X-Reposync-Signature-256") or "",
        )
        sent = request.json
        assert (sent["id"], sent["event"], sent["binding_id"]) == (
            row.guid,
            "run.completed",
            run.binding_id,
        )
        data = sent["data"]
        assert data["run"]["status"] == "completed"
        assert data["run"]["counters"]["created"] == run.counters["created"]
        assert data["binding"]["target"].startswith("local:")

        shown = client.get(
            url(f"/subscriptions/{subscription_id}/deliveries"), headers=bearer(tokens.admin)
        ).json["items"][0]
        assert (shown["status"], shown["attempts"], shown["response_status"]) == (
            "delivered",
            1,
            200,
        )
        assert shown["next_attempt_at"] is None
        assert shown["finished_at"]

        again = client.post(redeliver_path, headers=bearer(tokens.admin))
        assert again.status_code == 202, again.json
        assert again.json["guid"] == row.guid
        assert again.json["redelivery_of"] == row.id
        assert deliver(ctx, again.json["id"], owner="test") == "delivered"
        second = hook.wait(2)[1]
        assert second.header("X-Reposync-Delivery") == row.guid
        assert second.body == request.body  # the same bytes

        stranger_path = url(f"/subscriptions/{subscription_id}/deliveries")
        assert_problem(
            client.get(stranger_path, headers=bearer(tokens.stranger)), 404, "record_not_found"
        )
        assert_problem(
            client.post(redeliver_path, headers=bearer(tokens.stranger)), 404, "record_not_found"
        )
        other = url(f"/subscriptions/{subscription_id}/deliveries/424242/redeliver")
        assert_problem(client.post(other, headers=bearer(tokens.admin)), 404, "record_not_found")


def test_deliveries_are_paged_newest_first(client, tokens, ctx, source_repo, tmp_path):
    created = subscribe(client, tokens.admin, "http://127.0.0.1:9/hook")
    for _ in range(3):
        run_pair(ctx, source_repo, tmp_path / "dst.git")
    path = url(f"/subscriptions/{created.json['id']}/deliveries")
    seen: list[int] = []
    after = None
    while True:
        query = {"limit": 2, **({"after_id": after} if after else {})}
        page = client.get(path, headers=bearer(tokens.admin), query_string=query).json
        seen += [item["id"] for item in page["items"]]
        after = page["next_after_id"]
        if after is None:
            break
    assert len(seen) == 3
    assert seen == sorted(seen, reverse=True)
    pending = client.get(
        path, headers=bearer(tokens.admin), query_string={"status": "delivered"}
    ).json
    assert pending["items"] == []


def test_a_member_hears_only_of_visible_bindings_and_never_server_paths(
    ctx, tokens, binding, source_repo, tmp_path, client
):
    """A member's subscription without a filter gets the events of Bindings it may see,
    with absolute paths redacted as the API redacts them; the admin's gets everything."""
    other_source = generate(tmp_path / "other.git", commits=2, branches=0, tags=0)
    other = bind(ctx, SyncRequest(f"local:{other_source}", f"local:{tmp_path / 'o-dst.git'}"))
    member_sub = subscribe(client, tokens.member, "http://127.0.0.1:9/m").json["id"]
    admin_sub = subscribe(client, tokens.admin, "http://127.0.0.1:9/a").json["id"]
    stranger_sub = subscribe(client, tokens.stranger, "http://127.0.0.1:9/s").json["id"]

    run_pair(ctx, source_repo, tmp_path / "dst.git")  # the member's Binding
    run_pair(ctx, other_source, tmp_path / "o-dst.git")  # not the member's

    def bindings_of(subscription_id):
        return [row.binding_id for row in deliveries(ctx, subscription_id)]

    assert bindings_of(admin_sub) == [binding.id, other.id]
    assert bindings_of(member_sub) == [binding.id]
    assert bindings_of(stranger_sub) == []
    [member_row] = deliveries(ctx, member_sub)
    member_body = json.loads(member_row.body)
    assert member_body["data"]["binding"]["source"] == f"local:{source_repo}"  # as the API

    # Messages naming the server's files: whole for admins, redacted for members.
    with ctx.db.transaction() as session:
        ids = notify(
            session,
            "run.completed",
            {"error": {"message": "cannot open /srv/reposync/data/x.db: locked"}},
            binding_id=binding.id,
        )
    bodies = {row.subscription_id: json.loads(row.body) for row in deliveries(ctx) if row.id in ids}
    assert set(bodies) == {admin_sub, member_sub}
    assert bodies[admin_sub]["data"]["error"]["message"] == (
        "cannot open /srv/reposync/data/x.db: locked"
    )
    assert bodies[member_sub]["data"]["error"]["message"] == "cannot open <path>: locked"


def test_a_grant_taken_back_stops_the_members_deliveries(
    ctx, tokens, binding, source_repo, tmp_path, client
):
    from reposync.service.accounts.users import revoke_grant

    member_sub = subscribe(
        client, tokens.member, "http://127.0.0.1:9/m", binding_id=binding.id
    ).json["id"]
    run_pair(ctx, source_repo, tmp_path / "dst.git")
    assert len(deliveries(ctx, member_sub)) == 1
    with ctx.db.session() as session:
        from reposync.models import User

        member = session.execute(select(User).where(User.login == "mel")).scalar_one()
    revoke_grant(ctx, member.id, binding.a_provider, binding.a_repository_id)
    run_pair(ctx, source_repo, tmp_path / "dst.git")
    assert len(deliveries(ctx, member_sub)) == 1  # nothing new


def test_a_paused_subscription_gets_no_new_deliveries(client, tokens, ctx, source_repo, tmp_path):
    created = subscribe(client, tokens.admin, "http://127.0.0.1:9/hook", active=False)
    run_pair(ctx, source_repo, tmp_path / "dst.git")
    assert deliveries(ctx, created.json["id"]) == []


def test_deleting_a_binding_deletes_the_subscriptions_filtered_on_it(client, tokens, binding, ctx):
    filtered = subscribe(client, tokens.admin, "http://127.0.0.1/f", binding_id=binding.id)
    unfiltered = subscribe(client, tokens.admin, "http://127.0.0.1/u")
    assert (
        client.delete(url(f"/bindings/{binding.id}"), headers=bearer(tokens.admin)).status_code
        == 204
    )
    path = url(f"/subscriptions/{filtered.json['id']}")
    assert_problem(client.get(path, headers=bearer(tokens.admin)), 404, "record_not_found")
    kept = client.get(url(f"/subscriptions/{unfiltered.json['id']}"), headers=bearer(tokens.admin))
    assert kept.status_code == 200  # a filter never silently widens into "every Binding"
