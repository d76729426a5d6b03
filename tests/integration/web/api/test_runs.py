"""``/runs`` and ``POST /bindings/{id}/runs``: create, list, show, progress, cancel, retry."""

from __future__ import annotations

import pytest

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def admin(tokens) -> dict[str, str]:
    return bearer(tokens.admin)


@pytest.fixture
def three_runs(ctx, binding, source_repo, tmp_path) -> list[int]:
    request = SyncRequest(f"local:{source_repo}", f"local:{tmp_path / 'dst.git'}")
    return [sync(ctx, request).id for _ in range(3)]


def test_create_queues_a_run_and_answers_202_with_location(client, admin, binding):
    """POST /bindings/{id}/runs answers 202 at once with the queued Run."""
    response = client.post(url(f"/bindings/{binding.id}/runs"), headers=admin, json={})
    assert response.status_code == 202, response.json
    run = response.json
    assert response.headers["Location"] == url(f"/runs/{run['id']}")
    assert (run["status"], run["stage"], run["mode"], run["audit_mode"]) == (
        "queued",
        "queued",
        "apply",
        "checkpoint",
    )
    assert run["binding_id"] == binding.id
    assert client.get(response.headers["Location"], headers=admin).json["id"] == run["id"]


def test_a_granted_member_creates_a_dry_run_full_audit(client, tokens, binding):
    """A member with a grant may create Runs; mode and audit_mode are taken."""
    response = client.post(
        url(f"/bindings/{binding.id}/runs"),
        headers=bearer(tokens.member),
        json={"mode": "dry_run", "audit_mode": "full"},
    )
    assert response.status_code == 202, response.json
    assert (response.json["mode"], response.json["audit_mode"]) == ("dry_run", "full")


def test_create_is_409_while_a_run_is_active(client, admin, binding, queued_run):
    """One active Run per Binding: the second is refused with binding_busy."""
    response = client.post(url(f"/bindings/{binding.id}/runs"), headers=admin, json={})
    assert_problem(response, 409, "binding_busy")


@pytest.mark.parametrize(
    "body", [{"mode": "fast"}, {"audit_mode": "half"}, {"mode": 1}, {"extra": True}]
)
def test_create_validates_its_body(client, admin, binding, body):
    """Unknown modes and fields are 422."""
    response = client.post(url(f"/bindings/{binding.id}/runs"), headers=admin, json=body)
    problem = assert_problem(response, 422, "validation_error")
    assert set(body) <= set(problem["errors"]["json"])


def test_list_is_newest_first_with_a_descending_cursor(client, admin, three_runs):
    """Runs come newest first; after_id continues below the last id seen."""
    first = client.get(url("/runs?limit=2"), headers=admin).json
    assert [r["id"] for r in first["items"]] == sorted(three_runs, reverse=True)[:2]
    assert first["next_after_id"] == first["items"][-1]["id"]
    second = client.get(url(f"/runs?limit=2&after_id={first['next_after_id']}"), headers=admin)
    assert [r["id"] for r in second.json["items"]] == [min(three_runs)]
    assert second.json["next_after_id"] is None
    assert "report" not in first["items"][0]  # listings show summaries


def test_list_filters_by_status_and_binding(client, admin, binding, three_runs, queued_run):
    """status and binding_id narrow the listing."""
    queued = client.get(url("/runs?status=queued"), headers=admin).json["items"]
    assert [r["id"] for r in queued] == [queued_run.id]
    completed = client.get(url(f"/runs?status=completed&binding_id={binding.id}"), headers=admin)
    assert {r["id"] for r in completed.json["items"]} == set(three_runs)
    assert client.get(url("/runs?binding_id=999"), headers=admin).json["items"] == []


@pytest.mark.parametrize(
    "query", ["status=done", "binding_id=x", "limit=0", "limit=1000", "after_id=-5"]
)
def test_list_validates_its_query(client, admin, query):
    """Unknown statuses and out-of-range numbers are 422."""
    problem = assert_problem(
        client.get(url(f"/runs?{query}"), headers=admin), 422, "validation_error"
    )
    assert query.split("=")[0] in problem["errors"]["query"]


def test_show_has_stage_counters_and_report(client, tokens, finished_run):
    """GET /runs/{id} explains the Run; a granted member may read it."""
    body = client.get(url(f"/runs/{finished_run.id}"), headers=bearer(tokens.member)).json
    assert (body["status"], body["stage"]) == ("completed", "completed")
    assert body["counters"]["created"] == 3
    assert body["report"]
    assert body["finished_at"] is not None


def test_progress_counts_items_by_type_and_state(client, admin, finished_run):
    """GET /runs/{id}/progress: totals and per-type state counts."""
    body = client.get(url(f"/runs/{finished_run.id}/progress"), headers=admin).json
    assert body == {
        "run_id": finished_run.id,
        "stage": "completed",
        "status": "completed",
        "plan_complete": True,
        "totals": {"completed": 3},
        "object_types": {"git_ref": {"completed": 3}},
        "items": 3,
    }


def test_cancel_requests_the_stop_of_an_active_run(client, tokens, queued_run):
    """POST /runs/{id}/cancel records the request (a granted member may ask)."""
    response = client.post(url(f"/runs/{queued_run.id}/cancel"), headers=bearer(tokens.member))
    assert response.status_code == 200, response.json
    assert response.json["cancel_requested_at"] is not None
    assert response.json["status"] == "queued"  # honoured at the next cancellation point


def test_cancel_of_a_finished_run_changes_nothing(client, admin, finished_run):
    """A Run that ended is answered unchanged."""
    response = client.post(url(f"/runs/{finished_run.id}/cancel"), headers=admin)
    assert response.status_code == 200
    assert response.json["cancel_requested_at"] is None
    assert response.json["status"] == "completed"


def test_retry_queues_a_child_run(client, tokens, finished_run):
    """POST /runs/{id}/retry answers 202 with a new Run: parent, attempt + 1, trigger retry."""
    response = client.post(url(f"/runs/{finished_run.id}/retry"), headers=bearer(tokens.member))
    assert response.status_code == 202, response.json
    run = response.json
    assert (run["parent_run_id"], run["attempt"], run["trigger"]) == (finished_run.id, 2, "retry")
    assert response.headers["Location"] == url(f"/runs/{run['id']}")


def test_retry_is_409_while_the_binding_is_busy(client, admin, queued_run):
    """Retrying while a Run is active is binding_busy."""
    assert_problem(
        client.post(url(f"/runs/{queued_run.id}/retry"), headers=admin), 409, "binding_busy"
    )


def test_post_only_operations_refuse_get(client, admin, finished_run):
    """cancel, retry and recover are POST only (405 with Allow)."""
    for action in ("cancel", "retry", "recover"):
        response = client.get(url(f"/runs/{finished_run.id}/{action}"), headers=admin)
        assert_problem(response, 405, "method_not_allowed")
        assert "POST" in response.headers["Allow"]
