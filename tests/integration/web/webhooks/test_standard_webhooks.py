"""Deliveries a receiver verifies with the Standard Webhooks libraries (PyPI and npm), not
with code of its own: subscriptions made through the API with a ``whsec_`` secret or a
plain one, events sent by the delivery operation to a real loopback receiver, retried,
redelivered, and signed with a secret changed in between; ``whsec_`` secrets no library
would read as meant are refused when saved."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from reposync.errors import UsageError
from reposync.service.context import ServiceContext
from reposync.service.webhooks.deliveries import deliver
from reposync.service.webhooks.outbox import notify
from reposync.service.webhooks.subscriptions import create_subscription
from reposync.service.webhooks.webhook_transport import verify
from tests.integration.web.conftest import assert_problem, bearer, url
from tests.node import NODE_DIR, package_version, run_json
from tests.webhook_receiver import Received, receiver
from tests.workers import wait_for

SCRIPT = NODE_DIR / "verify_standard_webhook.mjs"
#: A secret as reposync took them before it spoke Standard Webhooks (not base64, not ASCII).
PLAIN_SECRET = "a plain sécret, ünicode"


def whsec(key: bytes) -> str:
    return "whsec_" + base64.b64encode(key).decode()


def library_secret(secret: str) -> str:
    """What docs/webhooks.md tells a receiver to give the library for ``secret``."""
    return secret if secret.startswith("whsec_") else whsec(secret.encode("utf-8"))


def python_verdict(secret: str, request: Received) -> Any:
    """The PyPI library's verdict: the parsed body, or its error's message."""
    try:
        return Webhook(library_secret(secret)).verify(request.body, request.headers)
    except WebhookVerificationError as exc:
        return f"refused: {exc}"


def node_verdicts(secret: str, requests: list[Received]) -> list[dict[str, Any]]:
    """The npm library's verdicts, one per request, from tests/node/verify_standard_webhook.mjs."""
    deliveries = [
        {"headers": r.headers, "body_base64": base64.b64encode(r.body).decode()} for r in requests
    ]
    answer = run_json(SCRIPT, stdin=json.dumps({"secret": secret, "deliveries": deliveries}))
    assert answer["library"] == package_version("standardwebhooks")
    verdicts: list[dict[str, Any]] = answer["verdicts"]
    assert len(verdicts) == len(requests)
    return verdicts


def fast(ctx: ServiceContext) -> ServiceContext:
    """``ctx`` with a retry due 20 ms after a failed attempt."""
    return ServiceContext(
        settings=ctx.settings.with_overrides(webhook_backoff_unit=0.01), db=ctx.db
    )


def branch_moved(ctx: ServiceContext) -> int:
    """One delivery to the (one) subscription, as a branch watch's move writes it."""
    with ctx.db.transaction() as session:
        [delivery_id] = notify(
            session, "branch.moved", {"ref": "refs/heads/main", "after": "b" * 40}
        )
    return delivery_id


def deliver_due(ctx: ServiceContext, delivery_id: int) -> str | None:
    """One attempt, once the row is due (a retry waits for its backoff)."""
    outcome: list[str | None] = [None]

    def attempted() -> bool:
        outcome[0] = deliver(ctx, delivery_id, owner="test")
        return outcome[0] is not None

    wait_for(attempted, 10, f"delivery {delivery_id} to be due")
    return outcome[0]


def subscribe(client, tokens, target: str, secret: str) -> int:
    """A subscription to branch.moved at ``target`` through the API; its id."""
    created = client.post(
        url("/subscriptions"),
        headers=bearer(tokens.admin),
        json={"url": target, "events": ["branch.moved"], "secret": secret},
    )
    assert created.status_code == 201, created.json
    return int(created.json["id"])


@pytest.mark.parametrize(
    "secret", [whsec(os.urandom(32)), PLAIN_SECRET], ids=["whsec-secret", "plain-secret"]
)
def test_a_delivery_retried_and_redelivered_verifies_with_both_libraries(
    client, tokens, ctx, secret
):
    """A 503 then a 200, then a redelivery through the API: three requests under one
    webhook-id, each accepted by the PyPI and the npm library; the same bytes with one
    byte changed, or checked with another secret, are refused by both."""
    sender = fast(ctx)
    with receiver() as hook:
        hook.answer(503, then=200)
        subscription_id = subscribe(client, tokens, hook.url, secret)
        delivery_id = branch_moved(ctx)
        assert deliver_due(sender, delivery_id) == "pending"
        assert deliver_due(sender, delivery_id) == "delivered"
        again = client.post(
            url(f"/subscriptions/{subscription_id}/deliveries/{delivery_id}/redeliver"),
            headers=bearer(tokens.admin),
        )
        assert again.status_code == 202, again.json
        assert deliver_due(sender, again.json["id"]) == "delivered"
        requests = hook.wait(3)

    guid = again.json["guid"]
    assert [r.header("webhook-id") for r in requests] == [guid] * 3
    assert [r.header("X-Reposync-Attempt") for r in requests] == ["1", "2", "1"]
    assert len({r.body for r in requests}) == 1
    for request in requests:
        # The Standard Webhooks timestamp is the one reposync's own signature signs.
        assert request.header("webhook-timestamp") == request.header("X-Reposync-Timestamp")
        assert verify(
            secret,
            request.header("X-Reposync-Timestamp") or "",
            request.body,
            request.header("X-Reposync-Signature-256") or "",
        )
        sent = python_verdict(secret, request)
        assert isinstance(sent, dict), sent
        assert (sent["id"], sent["event"], sent["data"]["ref"]) == (
            guid,
            "branch.moved",
            "refs/heads/main",
        )
    for verdict in node_verdicts(secret, requests):
        assert verdict["ok"], verdict
        assert verdict["payload"]["id"] == guid

    first = requests[0]
    tampered = Received(first.path, first.headers, first.body.replace(b"refs/heads/main", b"x"))
    assert python_verdict(secret, tampered) == "refused: No matching signature found"
    other = whsec(os.urandom(32))
    assert python_verdict(other, first) == "refused: No matching signature found"
    refused = node_verdicts(secret, [tampered]) + node_verdicts(other, [first])
    assert [v["ok"] for v in refused] == [False, False]
    assert all("No matching signature found" in v["error"] for v in refused), refused


def test_a_secret_changed_between_attempts_signs_the_next_attempt(client, tokens, ctx):
    """A pending delivery's next attempt is signed with the secret saved since: the new
    one verifies it, the old one no longer does (one secret signs at a time)."""
    old, new = whsec(os.urandom(32)), whsec(os.urandom(32))
    sender = fast(ctx)
    with receiver() as hook:
        hook.answer(503, then=200)
        subscription_id = subscribe(client, tokens, hook.url, old)
        delivery_id = branch_moved(ctx)
        assert deliver_due(sender, delivery_id) == "pending"
        changed = client.patch(
            url(f"/subscriptions/{subscription_id}"),
            headers=bearer(tokens.admin),
            json={"secret": new},
        )
        assert changed.status_code == 200, changed.json
        assert deliver_due(sender, delivery_id) == "delivered"
        before, after = hook.wait(2)
    assert isinstance(python_verdict(old, before), dict)
    assert isinstance(python_verdict(new, after), dict)
    assert python_verdict(old, after) == "refused: No matching signature found"
    assert [v["ok"] for v in node_verdicts(new, [before, after])] == [False, True]


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        (whsec(b"k" * 16), "24 to 64 bytes"),
        ("whsec_" + base64.urlsafe_b64encode(b"\xfb" * 24).decode(), "standard base64"),
        ("whsec_my-old-password-here", "standard base64"),
    ],
)
def test_a_whsec_secret_no_library_reads_as_meant_is_refused_when_saved(
    client, tokens, ctx, secret, problem
):
    """422 on create and on change through the API, a usage error in the service."""
    body = {"url": "http://127.0.0.1:9/hook", "events": ["branch.moved"], "secret": secret}
    response = client.post(url("/subscriptions"), headers=bearer(tokens.admin), json=body)
    assert problem in json.dumps(assert_problem(response, 422, "validation_error"))

    subscription_id = subscribe(client, tokens, body["url"], whsec(os.urandom(24)))
    changed = client.patch(
        url(f"/subscriptions/{subscription_id}"),
        headers=bearer(tokens.admin),
        json={"secret": secret},
    )
    assert problem in json.dumps(assert_problem(changed, 422, "validation_error"))

    with pytest.raises(UsageError, match=problem):
        create_subscription(ctx, 1, url=body["url"], events=body["events"], secret=secret)
