"""Every documented GitHub delivery reposync handles, posted to ``/webhooks/github``.

``@octokit/webhooks-examples`` holds what GitHub documents and sends: the api.github.com
set and the GitHub Enterprise Server ones. Each example is signed and posted as GitHub
would post it, to a Binding whose authority is the example's repository, and must be
accepted with 2xx and do what its event promises: content events owe a Run, a rename
moves the locator, a visibility change is recorded, an uninstalled App or a removed
repository leaves a notice, regained access owes a Run. The same again with a property
reposync never heard of in every object.

One database for the module (the 300-odd deliveries would otherwise each migrate one);
each example starts from no Bindings and no deliveries.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete

from reposync.config import Settings
from reposync.lifecycle import Side
from reposync.models import Binding, IncomingWebhook
from reposync.models.db import Database
from reposync.providers.github.events import HANDLED_EVENTS
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from tests import webhooks
from tests.integration.web.conftest import WEBHOOK_SECRET
from tests.integration.web.intake import PATH, Recorder, add_binding
from tests.webhook_examples import Example, examples, with_unknown_properties

EXAMPLES = examples()
#: Effects by (event, action): what each Binding concerned must show.
CONTENT = {e for e in HANDLED_EVENTS if e not in {"repository", "installation", "ping"}}
CONTENT -= {"installation_repositories"}
REPOSITORY_EFFECTS = {
    "renamed": "locator_updated",
    "transferred": "locator_updated",
    "publicized": "visibility_recorded",
    "privatized": "visibility_recorded",
    "archived": "access_lost",
    "deleted": "access_lost",
    "unarchived": "access_restored",
    "edited": "run_requested",
}
INSTALLATION_EFFECTS = {
    "created": "access_restored,run_requested",
    "new_permissions_accepted": "access_restored,run_requested",
    "unsuspend": "access_restored,run_requested",
    "deleted": "access_lost",
    "suspend": "access_lost",
}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceContext]:
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("examples") / "data",
        github_webhook_secret=WEBHOOK_SECRET,
    )
    db = Database(settings.effective_database_url)
    db.upgrade()
    context = ServiceContext(settings=settings, db=db)
    context.dispatcher = Recorder()
    yield context
    db.dispose()


@pytest.fixture(scope="module")
def client(ctx: ServiceContext) -> Any:
    return create_app(ctx.settings, ctx=ctx).test_client()


@pytest.fixture
def fresh(ctx: ServiceContext) -> ServiceContext:
    with ctx.db.transaction() as session:
        session.execute(delete(IncomingWebhook))
        session.execute(delete(Binding))
    return ctx


def expected_effects(example: Example) -> dict[str, str]:
    """Repository id (``installation:<id>`` for an installation-wide change) -> the
    effect its Binding must show (a comma-joined list, as the receipt says it)."""
    payload, event, action = example.payload, example.event, example.action
    if event in CONTENT:
        return {str(payload["repository"]["id"]): "run_requested"}
    if event == "repository":
        return {str(payload["repository"]["id"]): REPOSITORY_EFFECTS.get(action, "nothing_to_do")}
    if event == "installation":
        effect = INSTALLATION_EFFECTS.get(action or "")
        if effect is None:
            return {}
        if payload.get("repositories") is None:
            return {f"installation:{payload['installation']['id']}": effect}
        return {str(r["id"]): effect for r in payload["repositories"]}
    if event == "installation_repositories":
        added = {
            str(r["id"]): "access_restored,run_requested"
            for r in payload["repositories_added"] or []
        }
        removed = {str(r["id"]): "access_lost" for r in payload["repositories_removed"] or []}
        return {**added, **removed}
    return {}


def bind(ctx: ServiceContext, example: Example, wanted: dict[str, str]) -> dict[str, int]:
    """A Binding per repository the example concerns (GitHub its authority, opened through
    the example's installation): repository key -> Binding id."""
    installation = example.payload.get("installation", {}).get("id")
    connection = f"github:installation:{installation}" if installation else None
    made = {}
    for key in wanted:
        github_id = 990_000_001 if key.startswith("installation:") else int(key)
        made[key] = add_binding(
            ctx, github_id, github_side=Side.A, name="before/rename", connection_id=connection
        )
    return made


def post(client: Any, example: Example, payload: dict[str, Any]) -> Any:
    raw = json.dumps(payload).encode()
    headers = webhooks.headers(example.event, raw, WEBHOOK_SECRET, str(uuid.uuid4()))
    return client.post(PATH, data=raw, headers=headers)


def check(ctx: ServiceContext, client: Any, example: Example, payload: dict[str, Any]) -> None:
    wanted = expected_effects(example)
    bindings = bind(ctx, example, wanted)
    response = post(client, example, payload)
    assert response.status_code in (200, 202), response.get_data(as_text=True)
    receipt = response.get_json()
    if example.event == "ping":
        assert (response.status_code, receipt["outcome"]) == (200, "pong")
        return
    assert (response.status_code, receipt["outcome"]) == (202, "accepted")
    got = {key: receipt["bindings"].get(str(binding_id)) for key, binding_id in bindings.items()}
    assert got == wanted
    with ctx.db.session() as session:
        for key, binding_id in bindings.items():
            binding = session.get(Binding, binding_id)
            assert binding is not None
            effect = wanted[key]
            if effect == "locator_updated":
                assert binding.a_locator == payload["repository"]["full_name"]
            if effect == "visibility_recorded":
                assert binding.a_visibility == (
                    "private" if example.action == "privatized" else "public"
                )
            if effect.startswith("access_lost"):
                assert binding.access_notice
            if "run_requested" in effect:
                assert binding.event_run_due_at is not None


def test_the_corpus_covers_every_handled_event():
    """Both the api.github.com and the Enterprise Server sets, every event reposync acts on."""
    assert {e.event for e in EXAMPLES} == HANDLED_EVENTS
    assert any(s.startswith("ghes-") for e in EXAMPLES for s in e.sets)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_every_documented_delivery_is_accepted_and_does_what_its_event_promises(
    fresh, client, example
):
    check(fresh, client, example, example.fresh())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_the_same_with_an_unknown_property_in_every_object(fresh, client, example):
    """GitHub adds properties without notice: the effect is the same."""
    check(fresh, client, example, with_unknown_properties(example.fresh()))
