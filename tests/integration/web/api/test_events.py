"""``GET /runs/{id}/events``: the history after a seq, as JSON or Server-Sent Events."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.web.conftest import assert_problem, bearer, url

STREAM = {"Accept": "text/event-stream"}


def parse_stream(text: str) -> list[dict[str, str]]:
    """SSE messages as dicts of their fields (comments and retry lines dropped)."""
    messages = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":")
        )
        if "data" in fields:
            messages.append(fields)
    return messages


def test_events_after_a_seq_by_page(client, tokens, finished_run):
    """after_seq + limit walk the history; next_after_seq is the cursor to ask again."""
    headers = bearer(tokens.member)
    first = client.get(url(f"/runs/{finished_run.id}/events?limit=2"), headers=headers).json
    assert [e["seq"] for e in first["items"]] == [1, 2]
    assert first["items"][0]["type"] == "run_created"
    assert first["next_after_seq"] == 2
    rest = client.get(url(f"/runs/{finished_run.id}/events?after_seq=2&limit=200"), headers=headers)
    seqs = [e["seq"] for e in rest.json["items"]]
    assert seqs == list(range(3, 3 + len(seqs)))
    assert rest.json["next_after_seq"] is None  # the Run ended: nothing will follow


def test_paging_a_finished_run_ends_on_its_last_page(client, tokens, finished_run):
    """Issue 15: ``next_after_seq`` is null on the last page of a Run that ended, so a
    paging loop stops (it was the last seq, or the given after_seq, for ever), also when
    the history fills the last page exactly or the cursor is past the end."""
    headers = bearer(tokens.member)
    every = client.get(url(f"/runs/{finished_run.id}/events?limit=200"), headers=headers).json
    total = len(every["items"])
    assert every["next_after_seq"] is None
    for size in (1, 3, total):
        seen: list[int] = []
        after: int | None = 0
        for _ in range(total + 2):  # a loop that never ends fails here, not by hanging
            page = client.get(
                url(f"/runs/{finished_run.id}/events?after_seq={after}&limit={size}"),
                headers=headers,
            ).json
            seen += [event["seq"] for event in page["items"]]
            after = page["next_after_seq"]
            if after is None:
                break
        assert after is None, f"limit={size}: still paging after {seen}"
        assert seen == list(range(1, total + 1))
    past = client.get(url(f"/runs/{finished_run.id}/events?after_seq={total + 5}"), headers=headers)
    assert past.json == {"items": [], "next_after_seq": None}


def test_paging_an_active_run_keeps_a_cursor(client, tokens, queued_run):
    """While the Run is active its history grows: a short page still says where to ask
    again (its last seq, or the given after_seq when it is empty)."""
    headers = bearer(tokens.admin)
    page = client.get(url(f"/runs/{queued_run.id}/events"), headers=headers).json
    assert [e["type"] for e in page["items"]] == ["run_created"]
    assert page["next_after_seq"] == 1
    again = client.get(url(f"/runs/{queued_run.id}/events?after_seq=1"), headers=headers).json
    assert again == {"items": [], "next_after_seq": 1}


@pytest.mark.parametrize("query", ["after_seq=-1", "after_seq=x", "limit=0", "limit=201"])
def test_events_validate_their_query(client, tokens, finished_run, query):
    """Negative or non-numeric cursors and limits are 422."""
    response = client.get(
        url(f"/runs/{finished_run.id}/events?{query}"), headers=bearer(tokens.admin)
    )
    problem = assert_problem(response, 422, "validation_error")
    assert query.split("=")[0] in problem["errors"]["query"]


def test_stream_of_a_finished_run_sends_every_event_then_end(client, tokens, finished_run):
    """SSE: each event with id = seq, then an ``end`` event with the final status."""
    json_events = client.get(
        url(f"/runs/{finished_run.id}/events?limit=200"), headers=bearer(tokens.admin)
    ).json["items"]
    response = client.get(
        url(f"/runs/{finished_run.id}/events"), headers={**bearer(tokens.admin), **STREAM}
    )
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    messages = parse_stream(response.get_data(as_text=True))
    *events, end = messages
    assert [int(m["id"]) for m in events] == [e["seq"] for e in json_events]
    assert [json.loads(m["data"]) for m in events] == json_events
    assert end["event"] == "end"
    assert json.loads(end["data"]) == {"run_id": finished_run.id, "status": "completed"}


def test_stream_resumes_after_last_event_id(client, tokens, finished_run):
    """A reconnecting client gets only the events after Last-Event-ID."""
    response = client.get(
        url(f"/runs/{finished_run.id}/events"),
        headers={**bearer(tokens.admin), **STREAM, "Last-Event-ID": "5"},
    )
    ids = [int(m["id"]) for m in parse_stream(response.get_data(as_text=True)) if "id" in m]
    assert ids[0] == 6


def test_stream_of_an_active_run_ends_after_its_time(client, app, tokens, queued_run):
    """An active Run's stream sends what exists and ends quietly (no ``end``) when its
    time is up; the keep-alive cadence is tested with a fake clock (tests/unit/web)."""
    started = time.monotonic()
    response = client.get(
        url(f"/runs/{queued_run.id}/events"), headers={**bearer(tokens.admin), **STREAM}
    )
    text = response.get_data(as_text=True)
    assert time.monotonic() - started >= app.config["REPOSYNC_SSE_MAX_SECONDS"]
    messages = parse_stream(text)
    assert [json.loads(m["data"])["type"] for m in messages] == ["run_created"]
    assert "event: end" not in text  # the Run is still active: the client reconnects


def test_stream_rejects_a_bad_last_event_id(client, tokens, finished_run):
    """A Last-Event-ID that is no seq is 422, as a problem document."""
    response = client.get(
        url(f"/runs/{finished_run.id}/events"),
        headers={**bearer(tokens.admin), **STREAM, "Last-Event-ID": "abc"},
    )
    problem = assert_problem(response, 422, "validation_error")
    assert "Last-Event-ID" in problem["errors"]["headers"]


def test_stream_of_an_invisible_run_is_a_404_problem(client, tokens, finished_run):
    """The 404 comes before the stream starts, in the problem shape."""
    response = client.get(
        url(f"/runs/{finished_run.id}/events"), headers={**bearer(tokens.stranger), **STREAM}
    )
    assert_problem(response, 404, "record_not_found")
