"""A third forge's webhooks through the API with no change to the service.

``Acme`` is a forge made up here, unlike GitHub in every way the service could have
depended on: its own headers, a plain shared token rather than an HMAC, its own payload
shape. Its provider class declares ``WebhookSource`` and is registered for the test
only; its route is the one view every forge's route is (``web/endpoints/webhooks.py: receive``).
That its deliveries are authenticated, recorded, deduplicated, owe Runs and move branch
watches proves the service holds no branch for GitHub.
"""

from __future__ import annotations

import hmac
import io
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from flask import Flask
from sqlalchemy import select

from reposync.config import Settings
from reposync.errors import WebhookMalformed, WebhookSignatureInvalid, WebhooksNotConfigured
from reposync.models import Binding, BranchWatch, IncomingWebhook
from reposync.providers import registry
from reposync.providers.base import EndpointInfo, Provider, WebhookReader, WebhookSource
from reposync.providers.notifications import (
    Delivery,
    Notification,
    Outcome,
    RefMove,
    RepositoryChange,
)
from reposync.providers.webhooks import json_body
from reposync.service.accounts.users import create_user
from reposync.service.context import ServiceContext
from reposync.service.webhooks.watches import create_watch
from reposync.web.app import create_app
from reposync.web.endpoints import webhooks as web_webhooks
from tests import webhooks
from tests.integration.web.conftest import assert_problem, url
from tests.integration.web.intake import Recorder, binding_row, deliver

ACME_TOKEN = "acme's shared token"
SHA_A, SHA_B = "a" * 40, "b" * 40


class AcmeReader(WebhookReader):
    """Acme sends ``X-Acme-Token: <the shared token>`` and a flat JSON payload."""

    provider = "acme"
    signature_headers = ("X-Acme-Token",)

    def __init__(self, token: str) -> None:
        self._token = token

    def secrets(self, now: datetime) -> tuple[bytes, ...]:
        if not self._token:
            raise WebhooksNotConfigured("no Acme token is configured")
        return (self._token.encode(),)

    def verify(self, headers: Mapping[str, str], body: bytes, secrets: Sequence[bytes]) -> None:
        given = headers.get("x-acme-token", "").encode()
        if not any(hmac.compare_digest(given, secret) for secret in secrets):
            raise WebhookSignatureInvalid("X-Acme-Token is not the shared token")

    def delivery(self, headers: Mapping[str, str]) -> Delivery:
        return Delivery.from_headers(
            headers.get("x-acme-kind"),
            headers.get("x-acme-id"),
            event_header="X-Acme-Kind",
            id_header="X-Acme-Id",
        )

    def notification(
        self, delivery: Delivery, headers: Mapping[str, str], body: bytes
    ) -> Notification:
        if delivery.event not in ("moved", "relocated", "exposed"):
            return Notification(
                self.provider, delivery.delivery_id, delivery.event, None, Outcome.IGNORED
            )
        payload = json_body(body)
        if not isinstance(payload, dict) or "repo" not in payload:
            raise WebhookMalformed("an Acme delivery names its repo")
        change = RepositoryChange(
            provider=self.provider,
            repository_id=str(payload["repo"]),
            full_name=payload["path"],
            event=delivery.event,
            occurred_at=datetime.fromtimestamp(payload["at"], UTC),
        )
        if delivery.event == "moved":
            move = RefMove(payload["ref"], payload["from"], payload["to"])
            change = replace(change, refs=(move,), object_types=("git_ref",), content_changed=True)
        elif delivery.event == "relocated":
            change = replace(change, new_locator=payload["to"])
        else:
            change = replace(change, visibility=payload["to"])
        return Notification(
            self.provider,
            delivery.delivery_id,
            delivery.event,
            None,
            Outcome.ACCEPTED,
            (change,),
        )


class AcmeProvider(Provider, WebhookSource):
    """Only what a delivery asks of a provider: its name and its reader (never opened)."""

    name = "acme"
    max_ref_updates_per_push = None
    max_push_pack_bytes = None
    token: ClassVar[str] = ACME_TOKEN

    @classmethod
    def webhook_reader(cls, settings: Settings) -> WebhookReader:
        return AcmeReader(cls.token)


ACME_PATH = url("/webhooks/acme")
_locals = itertools.count()


def with_acme(app: Flask) -> Flask:
    """``app`` with Acme's route added as the Forgejo provider adds its own: the same
    view, under the webhooks blueprint's name."""
    app.add_url_rule(
        ACME_PATH,
        endpoint="webhooks.acme",
        view_func=lambda: web_webhooks.receive("acme"),
        methods=["POST"],
    )
    return app


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Acme in the registry, for each test only."""
    monkeypatch.setitem(registry._PROVIDERS, "acme", f"{__name__}:AcmeProvider")


@pytest.fixture
def acme(app: Flask) -> Flask:
    return with_acme(app)


@pytest.fixture
def recorder(ctx: ServiceContext) -> Recorder:
    recorder = Recorder()
    ctx.dispatcher = recorder
    return recorder


def acme_binding(ctx: ServiceContext, repo: str, *, authority: bool = True) -> int:
    """A Binding between Acme repository ``repo`` and a local one (rows only)."""
    acme = {"provider": "acme", "repository_id": repo, "locator": f"team/{repo}"}
    other = f"local-{next(_locals)}"
    local = {"provider": "local", "repository_id": other, "locator": f"/{other}.git"}
    return binding_row(ctx, acme, local, authority_side="a" if authority else "b")


def moved(repo: str, before: str, after: str, at: int = 1_800_000_000) -> bytes:
    payload = {
        "repo": repo,
        "path": f"team/{repo}",
        "ref": "refs/heads/main",
        "from": before,
        "to": after,
        "at": at,
    }
    return json.dumps(payload).encode()


def send(
    client: Any,
    body: bytes,
    delivery_id: str,
    *,
    token: str = ACME_TOKEN,
    kind: str = "moved",
    **headers: str,
) -> Any:
    sent = {"X-Acme-Token": token, "X-Acme-Kind": kind, "X-Acme-Id": delivery_id}
    sent.update(headers)
    return client.post(ACME_PATH, data=body, headers=sent)


def records(ctx: ServiceContext) -> list[tuple[str, str, str]]:
    with ctx.db.session() as session:
        rows = session.execute(
            select(
                IncomingWebhook.provider, IncomingWebhook.delivery_id, IncomingWebhook.outcome
            ).order_by(IncomingWebhook.id)
        ).all()
        return [tuple(row) for row in rows]


def test_a_third_forges_delivery_owes_a_run_once_through_the_same_view(acme, ctx, recorder):
    """Acme's move owes a Run to the Binding whose authority the repository is, not to
    the one where it is the standby; its redelivery is a duplicate; the record is
    Acme's."""
    authority = acme_binding(ctx, "r1")
    standby = acme_binding(ctx, "r1", authority=False)
    client = acme.test_client()
    first = send(client, moved("r1", SHA_A, SHA_B), "a-1")
    assert first.status_code == 202, first.get_data(as_text=True)
    assert first.json["bindings"] == {
        str(authority): "run_requested",
        str(standby): "nothing_to_do",
    }
    again = send(client, moved("r1", SHA_A, SHA_B), "a-1")
    assert (again.status_code, again.json["outcome"]) == (200, "duplicate")
    assert records(ctx) == [("acme", "a-1", "accepted")]
    assert [binding for binding, _ in recorder.event_runs] == [authority]


def test_deliveries_are_deduplicated_per_forge(acme, ctx, recorder):
    """The same delivery id from GitHub and from Acme is two deliveries, each recorded."""
    client = acme.test_client()
    assert send(client, moved("r1", SHA_A, SHA_B), "same-id").status_code == 202
    github = deliver(client, "ping", webhooks.payload("ping"), delivery_id="same-id")
    assert github.status_code == 200
    assert sorted(records(ctx)) == [("acme", "same-id", "accepted"), ("github", "same-id", "pong")]


def test_a_third_forges_ref_move_reaches_its_branch_watch(acme, ctx, recorder):
    """Branch watches take Acme's move in the delivery's transaction, as GitHub's."""
    owner = create_user(ctx, "wanda", role="admin")
    watch, _ = create_watch(ctx, EndpointInfo("acme", "team/r1", "r1"), "main", created_by=owner.id)
    client = acme.test_client()
    assert send(client, moved("r1", SHA_A, SHA_B), "w-1").status_code == 202
    assert send(client, moved("r1", SHA_A, SHA_B), "w-1").status_code == 200
    with ctx.db.session() as session:
        row = session.get(BranchWatch, watch.id)
        assert row is not None
        assert (row.before, row.after, row.movements) == (SHA_A, SHA_B, 1)


def changed(repo: str, to: str, at: int) -> bytes:
    return json.dumps({"repo": repo, "path": f"team/{repo}", "to": to, "at": at}).encode()


@pytest.mark.parametrize(
    "database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_a_third_forges_older_rename_or_visibility_arriving_late_moves_nothing_back(
    request, database
):
    """Out of order, by what a change sets and not by its forge's event names: the newer
    locator and visibility stay whatever the arrival order (on both databases: the
    recorded hints are read as JSON)."""
    ctx = request.getfixturevalue("ctx" if database == "sqlite" else "pg_ctx")
    ctx.dispatcher = Recorder()
    client = with_acme(create_app(ctx.settings, ctx=ctx)).test_client()
    binding_id = acme_binding(ctx, "r9")
    late = 1_800_000_000
    for kind, newer, older, ignored in [
        ("relocated", "team/new", "team/old", "stale_rename_ignored"),
        ("exposed", "public", "private", "stale_visibility_ignored"),
    ]:
        first = send(client, changed("r9", newer, late + 60), f"{kind}-1", kind=kind)
        assert first.status_code == 202, first.get_data(as_text=True)
        second = send(client, changed("r9", older, late), f"{kind}-2", kind=kind)
        assert second.json["bindings"] == {str(binding_id): ignored}
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert (binding.a_locator, binding.a_visibility) == ("team/new", "public")


@pytest.mark.parametrize(
    ("token", "headers", "status", "code"),
    [
        ("not the token", {}, 401, "webhook_signature_invalid"),
        (ACME_TOKEN, {"X-Acme-Id": ""}, 400, "webhook_malformed"),
        (ACME_TOKEN, {"X-Acme-Kind": "k" * 65}, 400, "webhook_malformed"),
    ],
    ids=["wrong-token", "no-id", "long-kind"],
)
def test_a_third_forges_refusals_are_the_apis_and_record_nothing(
    acme, ctx, recorder, token, headers, status, code
):
    """Its reader's refusals come back as every delivery's do; nothing is recorded."""
    binding_id = acme_binding(ctx, "r1")
    response = send(acme.test_client(), moved("r1", SHA_A, SHA_B), "a-1", token=token, **headers)
    assert_problem(response, status, code)
    assert records(ctx) == []
    assert recorder.event_runs == []
    with ctx.db.session() as session:
        assert session.get(Binding, binding_id).event_run_due_at is None


def test_a_third_forge_without_its_secret_is_refused_before_its_body_is_read(
    acme, ctx, monkeypatch
):
    """503 from the reader's secrets, as for GitHub: the stream is never read."""
    monkeypatch.setattr(AcmeProvider, "token", "")
    body = io.BytesIO(moved("r1", SHA_A, SHA_B))
    response = acme.test_client().post(
        ACME_PATH,
        input_stream=body,
        headers={"X-Acme-Token": "", "X-Acme-Kind": "moved", "X-Acme-Id": "a-1"},
    )
    assert_problem(response, 503, "webhooks_not_configured")
    assert body.tell() == 0
    assert records(ctx) == []


def test_a_route_of_a_provider_that_sends_no_webhooks_is_404(app, ctx):
    """A forge without a reader (the local one) takes no delivery: 404, nothing kept."""
    app.add_url_rule(
        url("/webhooks/local"),
        endpoint="webhooks.local",
        view_func=lambda: web_webhooks.receive("local"),
        methods=["POST"],
    )
    response = app.test_client().post(url("/webhooks/local"), data=b"{}")
    problem = assert_problem(response, 404, "record_not_found")
    assert "local" in problem["detail"]
    assert records(ctx) == []
