"""Issue 12 #4 (part): a browser's EventSource cannot send an Authorization header, so a
Run's event stream also opens with a short-lived token of that Run in its URL, which
opens nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from freezegun import freeze_time

from tests.integration.web.conftest import assert_problem, bearer, url

STREAM = {"Accept": "text/event-stream"}


def stream_token(client, token: str, run_id: int) -> dict:
    response = client.post(url(f"/runs/{run_id}/stream-token"), headers=bearer(token))
    assert response.status_code == 201, response.json
    return response.json


def test_a_stream_token_opens_its_runs_stream_from_the_url(client, tokens, queued_run):
    issued = stream_token(client, tokens.member, queued_run.id)
    assert issued["url"].endswith(f"/runs/{queued_run.id}/events?access_token={issued['token']}")

    response = client.get(issued["url"], headers=STREAM)

    assert response.status_code == 200
    assert "retry:" in response.get_data(as_text=True)


def test_a_stream_token_opens_nothing_else(client, tokens, queued_run):
    issued = stream_token(client, tokens.member, queued_run.id)
    elsewhere = client.get(
        url(f"/runs/{queued_run.id + 1}/events?access_token={issued['token']}"), headers=STREAM
    )
    assert_problem(elsewhere, 401, "unauthenticated")
    as_bearer = client.get(url("/runs"), headers=bearer(issued["token"]))
    assert_problem(as_bearer, 401, "unauthenticated")
    in_the_url = client.get(url(f"/runs?access_token={issued['token']}"))
    assert_problem(in_the_url, 401, "unauthenticated")


def test_a_stream_token_expires_after_minutes(client, tokens, queued_run):
    issued = stream_token(client, tokens.member, queued_run.id)
    expires = datetime.fromisoformat(issued["expires_at"])
    assert expires - datetime.now(UTC) <= timedelta(minutes=5)
    with freeze_time(expires + timedelta(seconds=1)):
        late = client.get(issued["url"], headers=STREAM)
    assert_problem(late, 401, "unauthenticated")


def test_only_those_who_see_the_run_get_a_token(client, tokens, queued_run):
    response = client.post(
        url(f"/runs/{queued_run.id}/stream-token"), headers=bearer(tokens.stranger)
    )
    assert_problem(response, 404, "record_not_found")
