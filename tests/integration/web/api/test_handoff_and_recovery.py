"""``POST /bindings/{id}/handoff`` and ``POST /runs/{id}/recover``."""

from __future__ import annotations

from sqlalchemy import select

from reposync.models import Binding, Run
from tests.integration.web.conftest import assert_problem, bearer, url


def test_handoff_queues_a_handoff_run(client, tokens, binding, finished_run):
    """An admin starts a handoff: 202 with the queued handoff Run and its Location."""
    response = client.post(url(f"/bindings/{binding.id}/handoff"), headers=bearer(tokens.admin))
    assert response.status_code == 202, response.json
    run = response.json
    assert (run["kind"], run["audit_mode"], run["status"]) == ("handoff", "full", "queued")
    assert response.headers["Location"] == url(f"/runs/{run['id']}")


def test_handoff_is_409_while_a_run_is_active(client, tokens, binding, queued_run):
    """A Binding with an active Run cannot hand over (not_allowed_now)."""
    response = client.post(url(f"/bindings/{binding.id}/handoff"), headers=bearer(tokens.admin))
    assert_problem(response, 409, "not_allowed_now")


def test_handoff_takes_only_the_confirmation_that_writes_stopped(
    client, tokens, binding, finished_run
):
    """The body's one field is ``confirm_writes_stopped``; anything else is refused."""
    response = client.post(
        url(f"/bindings/{binding.id}/handoff"), headers=bearer(tokens.admin), json={"x": 1}
    )
    assert_problem(response, 422, "validation_error")


def test_a_handoff_from_github_needs_the_word_that_writes_stopped(
    ctx, client, tokens, binding, finished_run
):
    """reposync cannot freeze a GitHub authority: 409 writes_not_stopped and no Run,
    until the request confirms writes to it stopped (then 202 as any handoff)."""
    with ctx.db.transaction() as session:  # the authority's side is a GitHub repository
        session.get(Binding, binding.id).a_provider = "github"
    path = url(f"/bindings/{binding.id}/handoff")

    refused = client.post(path, headers=bearer(tokens.admin))
    body = assert_problem(refused, 409, "writes_not_stopped")
    assert "confirm_writes_stopped" in body["detail"]
    with ctx.db.session() as session:
        assert session.execute(select(Run.id).where(Run.kind == "handoff")).first() is None

    confirmed = client.post(
        path, headers=bearer(tokens.admin), json={"confirm_writes_stopped": True}
    )
    assert confirmed.status_code == 202, confirmed.json
    assert confirmed.json["kind"] == "handoff"


def test_recover_of_a_run_without_unknown_writes_proves_nothing(client, tokens, finished_run):
    """A granted member may recover; nothing was unknown, so every count is zero."""
    response = client.post(url(f"/runs/{finished_run.id}/recover"), headers=bearer(tokens.member))
    assert response.status_code == 200, response.json
    assert response.json == {
        "run_id": finished_run.id,
        "counts": {"proven_written": 0, "proven_absent": 0, "still_unknown": 0},
    }


def test_recover_of_an_active_run_is_409(client, tokens, queued_run):
    """A Run still active cannot be recovered yet."""
    response = client.post(url(f"/runs/{queued_run.id}/recover"), headers=bearer(tokens.admin))
    assert_problem(response, 409, "not_allowed_now")
