"""Webhooks out in the distributed mode, for real: ``reposync api`` (gunicorn), ``celery
worker`` processes, PostgreSQL, Redis, and real HTTP receivers on loopback (allowed by
REPOSYNC_WEBHOOK_ALLOWED_NETWORKS). A Run finishes on a worker; its deliveries go out
from workers, are retried, dead-lettered and redelivered; a worker SIGKILLed in the
middle of a delivery loses nothing.
"""

from __future__ import annotations

import ipaddress
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import select

from reposync.models import WebhookDelivery
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from reposync.service.webhooks.outbox import dispatch_deliveries, notify
from reposync.service.webhooks.subscriptions import create_subscription
from reposync.service.webhooks.webhook_transport import verify
from tests.gitrepo import generate
from tests.integration.web.conftest import TEST_SECRET_KEY
from tests.servers import free_port
from tests.webhook_receiver import HANG, receiver
from tests.workers import WorkerProcess, start_api, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

SECRET = "a-long-enough-secret"
#: Retries 0.2, 0.4, 0.8, 1.6 s apart (2^attempt tenths): five attempts in about 3 s.
UNIT = 0.1


@pytest.fixture
def hook_env(env: dict[str, str]) -> dict[str, str]:
    return {
        **env,
        "REPOSYNC_SECRET_KEY": TEST_SECRET_KEY,
        "REPOSYNC_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "REPOSYNC_WEBHOOK_BACKOFF_UNIT": str(UNIT),
        "REPOSYNC_WEBHOOK_TIMEOUT": "3",
    }


@pytest.fixture
def hctx(dctx: ServiceContext) -> ServiceContext:
    dctx.settings = dctx.settings.with_overrides(
        secret_key=TEST_SECRET_KEY,
        webhook_allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),),
    )
    return dctx


@pytest.fixture
def processes() -> Any:
    started: list[WorkerProcess] = []
    yield started
    for process in started:
        process.stop()


def delivery_rows(ctx: ServiceContext) -> list[WebhookDelivery]:
    with ctx.db.session() as session:
        return list(session.execute(select(WebhookDelivery).order_by(WebhookDelivery.id)).scalars())


def test_a_runs_end_is_delivered_retried_dead_lettered_and_redelivered_over_http(
    tmp_path: Path, hctx: ServiceContext, hook_env, processes
):
    """Four subscriptions to one Run's end: one receiver answers 200, one 500 then 429
    then 200, one 404, one 503 for ever. Everything goes through the API; the worker
    sends, retries with the backoff, and dead-letters; a redelivery over the API is
    sent again with the same delivery id."""
    source = generate(tmp_path / "src.git", commits=10, branches=3, tags=2)
    port = free_port()
    processes.append(start_worker(hook_env, tmp_path, "w1"))
    processes.append(start_api(hook_env, tmp_path, port))
    admin = create_user(hctx, "ops", role="admin")
    headers = {"Authorization": f"Bearer {issue_token(hctx, admin.id)}"}
    base = f"http://127.0.0.1:{port}/api/ext/v1/sync"

    with ExitStack() as stack:
        ok, flaky, refused, down = (stack.enter_context(receiver()) for _ in range(4))
        flaky.answer(500, (429, {"Retry-After": "0"}), then=200)
        refused.answer(then=404)
        down.answer(then=503)
        subscriptions = {}
        for name, hook in (("ok", ok), ("flaky", flaky), ("refused", refused), ("down", down)):
            created = requests.post(
                f"{base}/subscriptions",
                json={"url": hook.url, "events": ["run.completed"], "secret": SECRET},
                headers=headers,
                timeout=30,
            )
            assert created.status_code == 201, created.text
            subscriptions[name] = created.json()["id"]

        bound = requests.post(
            f"{base}/bindings",
            json={"source": f"local:{source}", "target": f"local:{tmp_path / 'dst.git'}"},
            headers=headers,
            timeout=30,
        )
        assert bound.status_code == 201, bound.text
        queued = requests.post(
            f"{base}/bindings/{bound.json()['id']}/runs", json={}, headers=headers, timeout=30
        )
        assert queued.status_code == 202, queued.text
        run_id = queued.json()["id"]

        def listing(name: str) -> list[dict[str, Any]]:
            response = requests.get(
                f"{base}/subscriptions/{subscriptions[name]}/deliveries",
                headers=headers,
                timeout=10,
            )
            assert response.status_code == 200, response.text
            return list(response.json()["items"])

        def settled() -> bool:
            return all(
                (items := listing(name)) and items[0]["status"] != "pending"
                for name in subscriptions
            )

        wait_for(settled, 120, "every delivery to settle", interval=0.5)

        [delivered] = listing("ok")
        assert (delivered["status"], delivered["attempts"], delivered["response_status"]) == (
            "delivered",
            1,
            200,
        )
        [request] = ok.wait(1)
        assert request.json["data"]["run"]["id"] == run_id
        assert request.json["data"]["run"]["status"] == "completed"
        assert request.header("X-Reposync-Event") == "run.completed"
        assert request.header("X-Reposync-Delivery") == delivered["guid"]
        assert verify(
            SECRET,
            request.header("X-Reposync-Timestamp") or "",
            request.body,
            request.header("X-Reposync-Signature-256") or "",
        )

        [retried] = listing("flaky")
        assert (retried["status"], retried["attempts"], retried["response_status"]) == (
            "delivered",
            3,
            200,
        )
        attempts = flaky.wait(3)
        assert {r.header("X-Reposync-Delivery") for r in attempts} == {retried["guid"]}
        assert [r.header("X-Reposync-Attempt") for r in attempts] == ["1", "2", "3"]
        assert len({r.body for r in attempts}) == 1  # the same bytes each time
        for r in attempts:  # each attempt signed with its own timestamp
            assert verify(
                SECRET,
                r.header("X-Reposync-Timestamp") or "",
                r.body,
                r.header("X-Reposync-Signature-256") or "",
            )
        # Never earlier than the backoff: 2^1 and 2^2 units after attempts 1 and 2.
        assert attempts[1].at - attempts[0].at >= 2 * UNIT
        assert attempts[2].at - attempts[1].at >= 4 * UNIT

        [failed] = listing("refused")
        assert (failed["status"], failed["attempts"], failed["response_status"]) == (
            "failed",
            1,
            404,
        )
        assert failed["next_attempt_at"] is None
        assert len(refused.requests) == 1  # a 4xx is not retried

        [dead] = listing("down")
        assert (dead["status"], dead["attempts"], dead["response_status"]) == ("failed", 5, 503)
        assert dead["last_error"].startswith("gave up after 5 attempts")
        assert len(down.wait(5)) == 5

        # The receiver is fixed; the operator sends the dead letter again.
        refused.answer(then=200)
        again = requests.post(
            f"{base}/subscriptions/{subscriptions['refused']}/deliveries/{failed['id']}/redeliver",
            headers=headers,
            timeout=10,
        )
        assert again.status_code == 202, again.text
        assert again.json()["guid"] == failed["guid"]
        wait_for(lambda: listing("refused")[0]["status"] == "delivered", 60, "the redelivery")
        first, second = refused.wait(2)
        assert first.header("X-Reposync-Delivery") == second.header("X-Reposync-Delivery")
        assert first.body == second.body
        newest, original = listing("refused")
        assert newest["redelivery_of"] == original["id"] == failed["id"]
        assert original["status"] == "failed"  # the history stays as it was


def test_a_worker_killed_mid_delivery_loses_nothing(tmp_path: Path, hctx, hook_env, processes):
    """SIGKILL the worker while the receiver holds its request open: the row stays
    pending under an expiring claim; the recovery tick of a new worker sends it again,
    with the same delivery id, and it is delivered once the receiver answers."""
    with receiver() as hook:
        hook.answer(HANG, then=200)
        admin = create_user(hctx, "ops", role="admin")
        create_subscription(hctx, admin.id, url=hook.url, events=["branch.moved"], secret=SECRET)
        with hctx.db.transaction() as session:
            [delivery_id] = notify(session, "branch.moved", {"ref": "refs/heads/main"})
        first = start_worker(hook_env, tmp_path, "w1")
        processes.append(first)
        dispatch_deliveries(hctx, [delivery_id])

        [held] = hook.wait(1, timeout=60)  # the worker is inside the HTTP exchange
        first.kill()
        hook.release()  # the request it made is answered into the void
        [row] = delivery_rows(hctx)
        assert (row.status, row.attempts) == ("pending", 1)
        assert row.lease_owner is not None  # claimed by the dead worker

        processes.append(start_worker(hook_env, tmp_path, "w2", beat=True))
        wait_for(
            lambda: delivery_rows(hctx)[0].status == "delivered", 90, "the delivery after recovery"
        )
        [row] = delivery_rows(hctx)
        assert row.attempts == 2
        assert row.lease_owner is None
        assert row.response_status == 200
        requests_seen = hook.wait(2)
        assert len(hook.requests) == 2
        assert [r.header("X-Reposync-Delivery") for r in requests_seen] == [row.guid, row.guid]
        assert [r.header("X-Reposync-Attempt") for r in requests_seen] == ["1", "2"]
        assert held.body == requests_seen[1].body
        assert f"delivery {delivery_id} is overdue; re-dispatching" in processes[-1].log()
