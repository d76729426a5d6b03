"""Every endpoint: 401 without a valid token, 403 without the role, 404 without a grant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from reposync.models import AuthFailure, utcnow
from reposync.providers.base import EndpointInfo
from reposync.service.accounts.users import find_user
from reposync.service.webhooks.watches import create_watch
from reposync.web.app import API_PREFIX
from tests.integration.web.conftest import assert_problem, bearer, url


@dataclass(frozen=True)
class Endpoint:
    method: str
    #: {binding}, {run}, {watch}, {subscription}, {delivery} and {owner} are filled in
    path: str
    body: dict[str, Any] | None = None
    #: "read": anyone who can see it; "grant": admin or a grant; "admin": admin only;
    #: "repository": admin or a grant on the repository named in the body; "owner": its
    #: owner or an admin; "state": no token, a valid one-time state (Connect GitHub);
    #: "connection": admin, or a member naming on each side a connection Connect GitHub
    #: granted them (403 naming none, 404 naming one not theirs); "signature": no token,
    #: the delivery's signature (a forge's webhook, test_webhooks.py and its siblings).
    access: str = "read"
    query: dict[str, str] | None = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


SUBSCRIPTION = {
    "url": "http://127.0.0.1:9/hook",
    "events": ["run.completed"],
    "secret": "s" * 16,
}

ENDPOINTS = [
    Endpoint("GET", "/overview"),
    Endpoint("GET", "/bindings"),
    Endpoint("POST", "/bindings", {"source": "local:/none", "target": "local:/n"}, "connection"),
    Endpoint("GET", "/bindings/{binding}"),
    Endpoint("PATCH", "/bindings/{binding}", {"sync_enabled": False}, "admin"),
    Endpoint("DELETE", "/bindings/{binding}", None, "admin"),
    Endpoint("POST", "/bindings/{binding}/handoff", None, "admin"),
    Endpoint("POST", "/bindings/{binding}/runs", {}, "grant"),
    Endpoint("POST", "/bindings/{binding}/reconcile", {"mode": "dry_run"}, "grant"),
    Endpoint("GET", "/watches"),
    Endpoint("POST", "/watches", {"repository": "local:/none", "branch": "main"}, "repository"),
    Endpoint("GET", "/watches/{watch}"),
    Endpoint("DELETE", "/watches/{watch}", None, "grant"),
    Endpoint("GET", "/runs"),
    Endpoint("GET", "/runs/{run}"),
    Endpoint("GET", "/runs/{run}/progress"),
    Endpoint("GET", "/runs/{run}/items"),
    Endpoint("GET", "/runs/{run}/events"),
    Endpoint("POST", "/runs/{run}/stream-token"),
    Endpoint("POST", "/runs/{run}/cancel", None, "grant"),
    Endpoint("POST", "/runs/{run}/retry", None, "grant"),
    Endpoint("POST", "/runs/{run}/recover", None, "grant"),
    Endpoint("GET", "/users", None, "admin"),
    Endpoint("POST", "/users", {"login": "eve"}, "admin"),
    Endpoint("DELETE", "/users/{user}", None, "admin"),
    Endpoint("GET", "/users/{user}/tokens", None, "admin"),
    Endpoint("POST", "/users/{user}/tokens", {}, "admin"),
    Endpoint("DELETE", "/tokens/{token}", None, "admin"),
    Endpoint("POST", "/users/{user}/grants", {"provider": "local", "repository_id": "x"}, "admin"),
    Endpoint(
        "DELETE", "/users/{user}/grants", None, "admin", {"provider": "local", "repository_id": "x"}
    ),
    Endpoint("GET", "/subscriptions"),
    Endpoint("POST", "/subscriptions", SUBSCRIPTION),
    Endpoint("GET", "/subscriptions/{subscription}", None, "owner"),
    Endpoint("PATCH", "/subscriptions/{subscription}", {"active": False}, "owner"),
    Endpoint("DELETE", "/subscriptions/{subscription}", None, "owner"),
    Endpoint("GET", "/subscriptions/{subscription}/deliveries", None, "owner"),
    Endpoint(
        "POST", "/subscriptions/{subscription}/deliveries/{delivery}/redeliver", None, "owner"
    ),
    # Connect GitHub: each user their own; the callback is GitHub's redirect of a browser,
    # authenticated by its one-time state and flow cookie instead of a token ("state").
    Endpoint("POST", "/github/authorize/start"),
    Endpoint("POST", "/github/install/start"),
    Endpoint("GET", "/github/install/callback", None, "state", {"code": "c", "state": "s"}),
    Endpoint("GET", "/github/installations"),
    Endpoint("GET", "/github/repositories"),
    Endpoint("DELETE", "/github/account"),
    # Whole owners (issue 24): every repository of two owners, past any grant: admin only.
    Endpoint("GET", "/owner-bindings", None, "admin"),
    Endpoint("POST", "/owner-bindings", {"source": "local:/none", "target": "local:/n"}, "admin"),
    Endpoint("GET", "/owner-bindings/{owner}", None, "admin"),
    Endpoint("DELETE", "/owner-bindings/{owner}", None, "admin"),
    Endpoint("GET", "/owner-bindings/{owner}/members", None, "admin"),
    Endpoint("POST", "/owner-bindings/{owner}/passes", {"dry_run": True}, "admin"),
    # Webhooks in: a forge's delivery, authenticated by its signature alone ("signature").
    Endpoint("POST", "/webhooks/github", {"zen": "hi"}, "signature"),
    Endpoint("POST", "/webhooks/forgejo", {"ref": "refs/heads/main"}, "signature"),
    Endpoint("POST", "/webhooks/gitea", {"ref": "refs/heads/main"}, "signature"),
]
WITH_ID = [e for e in ENDPOINTS if "{" in e.path]
WITH_TOKEN = [e for e in ENDPOINTS if e.access not in ("state", "signature")]
ADMIN_ONLY = [e for e in ENDPOINTS if e.access == "admin"]


def call(
    client,
    endpoint: Endpoint,
    headers: dict[str, str],
    binding: Any = 1,
    run: Any = 1,
    watch: Any = None,
    subscription: Any = None,
    delivery: Any = None,
):
    # Users, tokens and owner bindings take the Binding's id slot, watches, subscriptions
    # and deliveries too unless they are given: unknown and malformed ids alike.
    path = url(
        endpoint.path.format(
            binding=binding,
            run=run,
            user=binding,
            token=binding,
            watch=binding if watch is None else watch,
            subscription=binding if subscription is None else subscription,
            delivery=binding if delivery is None else delivery,
            owner=binding,
        )
    )
    return client.open(
        path,
        method=endpoint.method,
        headers=headers,
        json=endpoint.body,
        query_string=endpoint.query,
    )


def test_the_table_covers_every_documented_operation(client):
    """The access table lists each operation of the OpenAPI document (not /health, which
    takes nothing), the webhooks with the signature that stands in for a token."""
    document = client.get(url("/openapi.json")).json
    documented = {
        (method.upper(), path.removeprefix(API_PREFIX))
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method != "parameters" and not path.endswith("/health")
    }
    listed = {
        (
            e.method,
            e.path.replace("{binding}", "{binding_id}")
            .replace("{run}", "{run_id}")
            .replace("{user}", "{user_id}")
            .replace("{token}", "{token_id}")
            .replace("{watch}", "{watch_id}")
            .replace("{subscription}", "{subscription_id}")
            .replace("{delivery}", "{delivery_id}")
            .replace("{owner}", "{owner_binding_id}"),
        )
        for e in ENDPOINTS
    }
    assert listed == documented


@pytest.mark.parametrize("endpoint", WITH_TOKEN, ids=str)
def test_no_valid_token_is_401(client, endpoint):
    """Without a valid bearer token every endpoint answers 401 and asks for one."""
    for authorization in (None, "Bearer", "Bearer rs_unknown", "Basic YWRhOnM=", "rs_no-scheme"):
        headers = {"Authorization": authorization} if authorization else {}
        response = call(client, endpoint, headers)
        assert_problem(response, 401, "unauthenticated")
        assert response.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("endpoint", ADMIN_ONLY, ids=str)
def test_binding_administration_needs_the_admin_role(client, tokens, binding, endpoint):
    """A member is refused Binding administration (403), even with a grant on it."""
    for token in (tokens.member, tokens.stranger):
        response = call(client, endpoint, bearer(token), binding=binding.id)
        body = assert_problem(response, 403, "forbidden")
        assert body["suggested_action"]


@pytest.fixture
def admin_watch(ctx, binding) -> int:
    """A watch on the Binding's granted repository, made by the admin."""
    admin = find_user(ctx, "ada")
    info = EndpointInfo(binding.a_provider, binding.a_locator, binding.a_repository_id)
    return create_watch(ctx, info, "main", created_by=admin.id)[0].id


@pytest.fixture
def members_delivery(ctx, tokens, binding) -> tuple[int, int]:
    """A subscription of the granted member, with a delivery: (subscription, delivery)."""
    from reposync.service.webhooks.outbox import notify
    from reposync.service.webhooks.subscriptions import create_subscription

    member = find_user(ctx, "mel")
    subscription = create_subscription(ctx, member.id, **SUBSCRIPTION, binding_id=binding.id)
    with ctx.db.transaction() as session:
        [delivery] = notify(session, "run.completed", {}, binding_id=binding.id)
    return subscription.id, delivery


@pytest.mark.parametrize("endpoint", WITH_ID, ids=str)
def test_a_member_without_a_grant_sees_no_record(
    client, tokens, binding, queued_run, admin_watch, members_delivery, endpoint
):
    """Records of Bindings a member was not granted do not exist for it (404, or 403 by
    role); nor does another user's watch, even on a repository granted to it, nor another
    user's subscription."""
    subscription, delivery = members_delivery
    response = call(
        client,
        endpoint,
        bearer(tokens.stranger),
        binding.id,
        queued_run.id,
        admin_watch,
        subscription=subscription,
        delivery=delivery,
    )
    if endpoint.access == "admin":
        assert_problem(response, 403, "forbidden")
    else:
        assert_problem(response, 404, "record_not_found")


@pytest.mark.parametrize("endpoint", WITH_ID, ids=str)
def test_unknown_ids_are_404(client, tokens, endpoint):
    """An id that names no record is 404 record_not_found, for an admin too."""
    response = call(client, endpoint, bearer(tokens.admin), binding=424242, run=424242)
    assert_problem(response, 404, "record_not_found")


@pytest.mark.parametrize("endpoint", WITH_ID, ids=str)
def test_malformed_ids_are_404_route_not_found(client, tokens, endpoint):
    """A path id that is not a positive 32-bit integer matches no route (404, never 500)."""
    for bad_id in ("abc", "0", "-1", str(2**31), "1.5"):
        response = call(client, endpoint, bearer(tokens.admin), binding=bad_id, run=bad_id)
        assert_problem(response, 404, "route_not_found")


@pytest.mark.parametrize("endpoint", [e for e in WITH_ID if "{watch}" in e.path], ids=str)
def test_a_granted_member_sees_no_watch_of_another_user(client, tokens, admin_watch, endpoint):
    response = call(client, endpoint, bearer(tokens.member), watch=admin_watch)
    assert_problem(response, 404, "record_not_found")


def test_watching_needs_a_grant_on_the_repository(client, tokens, binding):
    """POST /watches: the stranger's 404 reads as for a repository that does not exist."""
    body = {"repository": f"local:{binding.a_locator}", "branch": "main"}
    response = client.post(url("/watches"), headers=bearer(tokens.stranger), json=body)
    assert_problem(response, 404, "repository_not_found")
    response = client.post(url("/watches"), headers=bearer(tokens.member), json=body)
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/overview", "bindings"),
        ("/bindings", "items"),
        ("/runs", "items"),
        ("/watches", "items"),
        ("/subscriptions", "items"),
    ],
)
def test_listings_of_a_member_without_grants_are_empty(
    client, tokens, queued_run, admin_watch, members_delivery, path, key
):
    """Listings answer a member without grants with nothing, not an error."""
    response = client.get(url(path), headers=bearer(tokens.stranger))
    assert response.status_code == 200
    assert response.json[key] == []


@pytest.mark.parametrize("endpoint", [e for e in ENDPOINTS if e.access == "connection"], ids=str)
def test_a_member_creates_only_through_a_connection_granted_to_them(client, tokens, endpoint):
    """Without a connection on each side a member is refused (403, as when creating
    Bindings was admin-only); naming a connection not granted to them is not found."""
    for token in (tokens.member, tokens.stranger):
        body = assert_problem(call(client, endpoint, bearer(token)), 403, "forbidden")
        assert body["suggested_action"]
        named = {
            **(endpoint.body or {}),
            "source": "github:acme/app",
            "target": "github:acme/mirror",
            "source_connection_id": "github:installation:7",
            "target_connection_id": "github:installation:7",
        }
        response = client.post(url(endpoint.path), headers=bearer(token), json=named)
        assert_problem(response, 404, "connection_not_granted")


def test_the_role_is_checked_before_the_body(client, tokens, binding):
    """A member sending an invalid body to an admin-only endpoint gets 403, not 422."""
    headers = bearer(tokens.member)
    response = client.patch(url(f"/bindings/{binding.id}"), headers=headers, json={"x": 1})
    assert_problem(response, 403, "forbidden")


@pytest.mark.parametrize("endpoint", [e for e in ENDPOINTS if e.access == "state"], ids=str)
def test_a_state_endpoint_refuses_an_unknown_state_with_or_without_a_token(
    client, tokens, endpoint
):
    """The callback takes no token, and a token does not stand in for its state: without
    GitHub configured it is 503, and configured it refuses an unknown state (400)."""
    for headers in ({}, bearer(tokens.admin)):
        response = call(client, endpoint, headers)
        assert response.status_code in (400, 503), response.get_data(as_text=True)
        assert response.json["code"] in ("github_state_invalid", "github_connect_unconfigured")


@pytest.mark.parametrize("endpoint", [e for e in ENDPOINTS if e.access == "signature"], ids=str)
def test_a_webhook_takes_its_signature_never_a_token(client, tokens, endpoint):
    """A forge's delivery is authenticated by its signature alone: unsigned, it is 401
    webhook_signature_invalid (503 where the forge has no secret configured) with or
    without an admin's bearer token."""
    for headers in ({}, bearer(tokens.admin)):
        response = call(client, endpoint, headers)
        assert response.status_code in (401, 503), response.get_data(as_text=True)
        assert response.json["code"] in ("webhook_signature_invalid", "webhooks_not_configured")


@pytest.mark.parametrize("path", ["/github/installations", "/github/repositories"])
def test_connect_github_reads_of_a_member_never_connected_are_empty(client, tokens, path):
    response = client.get(url(path), headers=bearer(tokens.stranger))
    assert response.status_code == 200
    assert response.json.get("installations", response.json.get("items")) == []


def test_a_throttled_client_is_refused_everywhere_even_with_a_valid_token(
    client, ctx, tokens, binding
):
    """Once a client's refused tokens are over the limit, every operation answers it 429
    too_many_attempts with Retry-After, before it reads anything, the admin's token
    notwithstanding (issue 23 #7). One setup for the whole table: the refusal comes
    before any record is read."""
    with ctx.db.transaction() as session:
        session.add(
            AuthFailure(
                client="127.0.0.1",
                failures=ctx.settings.auth_failure_limit,
                window_ends_at=utcnow() + timedelta(seconds=30),
            )
        )
    answers = {}
    for endpoint in WITH_TOKEN:
        response = call(client, endpoint, bearer(tokens.admin), binding=binding.id)
        answers[str(endpoint)] = (
            response.status_code,
            response.json["code"],
            0 < int(response.headers.get("Retry-After", "0")) <= 30,
        )
    assert answers == dict.fromkeys(answers, (429, "too_many_attempts", True))
