"""``GET /overview``: visible Bindings with health, latest and active Run and progress."""

from __future__ import annotations

from tests.integration.web.conftest import assert_problem, bearer, url


def test_an_active_run_shows_with_its_progress(client, tokens, binding, queued_run):
    """A queued Run is both the latest and the active one; its progress is counted."""
    body = client.get(url("/overview"), headers=bearer(tokens.admin)).json
    [entry] = body["bindings"]
    assert entry["binding"]["id"] == binding.id
    assert entry["latest_run"]["id"] == entry["active_run"]["id"] == queued_run.id
    assert entry["active_progress"] == {"totals": {}, "object_types": {}, "items": 0}
    assert entry["connection_health"] == "ok"
    assert entry["result_unknown"] == 0


def test_a_finished_run_is_latest_and_nothing_is_active(client, tokens, finished_run):
    """After a completed Run there is no active Run and no progress to show."""
    [entry] = client.get(url("/overview"), headers=bearer(tokens.admin)).json["bindings"]
    assert entry["latest_run"]["id"] == finished_run.id
    assert entry["latest_run"]["status"] == "completed"
    assert entry["active_run"] is None
    assert entry["active_progress"] is None


def test_a_binding_without_runs_has_unknown_health(client, tokens, binding):
    """Nothing ran yet: health is unknown."""
    [entry] = client.get(url("/overview"), headers=bearer(tokens.admin)).json["bindings"]
    assert entry["latest_run"] is None
    assert entry["connection_health"] == "unknown"


def test_a_member_sees_the_bindings_it_was_granted(client, tokens, binding):
    """A grant on one repository of the Binding shows it; no grant shows nothing."""
    granted = client.get(url("/overview"), headers=bearer(tokens.member)).json
    assert [e["binding"]["id"] for e in granted["bindings"]] == [binding.id]
    assert client.get(url("/overview"), headers=bearer(tokens.stranger)).json == {
        "bindings": [],
        "next_after_id": None,
    }


def test_overview_takes_no_arguments_and_refuses_other_methods(client, tokens):
    """Query strings are ignored; a POST is 405 in the problem shape."""
    assert client.get(url("/overview?x=1"), headers=bearer(tokens.admin)).status_code == 200
    assert_problem(
        client.post(url("/overview"), headers=bearer(tokens.admin)), 405, "method_not_allowed"
    )
