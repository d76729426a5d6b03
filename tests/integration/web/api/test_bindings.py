"""``/bindings``: create, list (by repository, by cursor), show, change, delete."""

from __future__ import annotations

from pathlib import Path

import pytest

from reposync.service.runs import create_run
from tests.gitrepo import generate
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def admin(tokens) -> dict[str, str]:
    return bearer(tokens.admin)


def test_create_returns_201_with_location_and_creates_the_target(client, admin, tmp_path):
    """POST /bindings binds two repositories, creating the missing target."""
    source = generate(tmp_path / "new-src.git", commits=2, branches=0, tags=0)
    target = tmp_path / "new-dst.git"
    response = client.post(
        url("/bindings"),
        headers=admin,
        json={"source": f"local:{source}", "target": f"local:{target}"},
    )
    assert response.status_code == 201, response.json
    body = response.json
    assert response.headers["Location"] == url(f"/bindings/{body['id']}")
    assert body["source"] == f"local:{source}"
    assert body["target"] == f"local:{target}"
    assert body["authority_side"] == "a"
    assert body["ref_conflict_policy"] == "keep_target"
    assert body["sync_enabled"] is False
    assert target.exists()
    shown = client.get(response.headers["Location"], headers=admin)
    assert shown.json == body


def test_create_of_a_bound_pair_returns_its_binding(client, admin, binding, source_repo, tmp_path):
    """Binding the same pair again answers the existing Binding, with the new policy."""
    response = client.post(
        url("/bindings"),
        headers=admin,
        json={
            "source": f"local:{source_repo}",
            "target": f"local:{tmp_path / 'dst.git'}",
            "ref_conflict_policy": "use_source",
        },
    )
    assert response.status_code == 200
    assert response.json["id"] == binding.id
    assert response.json["ref_conflict_policy"] == "use_source"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"target": "local:/x"}, "source"),
        ({"source": "local:/x"}, "target"),
        ({"source": "", "target": "local:/x"}, "source"),
        ({"source": "local:/x", "target": "local:/y", "ref_conflict_policy": "nope"}, None),
        ({"source": "local:/x", "target": "local:/y", "extra": 1}, "extra"),
        ({"source": "local:/\x00", "target": "local:/y"}, "source"),
        ({"source": 1, "target": "local:/y"}, "source"),
    ],
)
def test_create_validates_its_body(client, admin, body, field):
    """A body that does not fit BindingCreateSchema is 422 with the field named."""
    problem = assert_problem(
        client.post(url("/bindings"), headers=admin, json=body), 422, "validation_error"
    )
    assert (field or "ref_conflict_policy") in problem["errors"]["json"]


def test_create_refuses_a_body_that_is_not_json(client, admin):
    """Malformed JSON is 400 invalid_input; a missing body is 422."""
    bad = client.post(url("/bindings"), headers=admin, data="{", content_type="application/json")
    assert_problem(bad, 400, "invalid_input")
    assert_problem(client.post(url("/bindings"), headers=admin), 422, "validation_error")


def test_create_maps_service_errors(client, admin, tmp_path):
    """A bad locator is 400 invalid_locator; a missing source is 404 repository_not_found."""
    bad = client.post(url("/bindings"), headers=admin, json={"source": "nope", "target": "x:y"})
    assert_problem(bad, 400, "invalid_locator")
    missing = client.post(
        url("/bindings"),
        headers=admin,
        json={"source": f"local:{tmp_path / 'none.git'}", "target": f"local:{tmp_path / 'd'}"},
    )
    assert_problem(missing, 404, "repository_not_found")


def test_create_with_confirm_visibility_confirms_it(client, admin, tmp_path):
    """confirm_visibility stores a confirmation (reposync.service.bindings)."""
    source = generate(tmp_path / "vis-src.git", commits=1, branches=0, tags=0)
    response = client.post(
        url("/bindings"),
        headers=admin,
        json={
            "source": f"local:{source}",
            "target": f"local:{tmp_path / 'vis-dst.git'}",
            "confirm_visibility": True,
        },
    )
    assert response.status_code == 201, response.json
    assert response.json["visibility_confirmed"] is True


def _bindings(ctx_binding_count: int, tmp_path: Path, client, admin) -> list[int]:
    ids = []
    for n in range(ctx_binding_count):
        source = generate(tmp_path / f"s{n}.git", commits=1, branches=0, tags=0)
        body = {"source": f"local:{source}", "target": f"local:{tmp_path / f'd{n}.git'}"}
        ids.append(client.post(url("/bindings"), headers=admin, json=body).json["id"])
    return ids


def test_list_pages_by_cursor_oldest_first(client, admin, binding, tmp_path):
    """limit + after_id walk every Binding once; the last page has no next cursor."""
    ids = [binding.id, *_bindings(4, tmp_path, client, admin)]
    seen, after = [], None
    while True:
        query = f"?limit=2&after_id={after}" if after else "?limit=2"
        body = client.get(url("/bindings" + query), headers=admin).json
        seen += [b["id"] for b in body["items"]]
        after = body["next_after_id"]
        if after is None:
            break
    assert seen == sorted(ids)


def test_list_filters_by_either_repository(client, admin, binding):
    """repository_id matches side a or side b; an unknown id matches nothing."""
    for repository_id in (binding.a_repository_id, binding.b_repository_id):
        body = client.get(url(f"/bindings?repository_id={repository_id}"), headers=admin).json
        assert [b["id"] for b in body["items"]] == [binding.id]
        assert body["next_after_id"] is None
    assert client.get(url("/bindings?repository_id=other"), headers=admin).json["items"] == []


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=201", "limit=x", "after_id=-1", f"after_id={2**31}"]
)
def test_list_validates_its_query(client, admin, query):
    """Out-of-range cursors and limits are 422 with the parameter named."""
    problem = assert_problem(
        client.get(url(f"/bindings?{query}"), headers=admin), 422, "validation_error"
    )
    assert query.split("=")[0] in problem["errors"]["query"]


def test_a_member_lists_and_shows_its_granted_binding(client, tokens, binding):
    """A member with a grant sees the Binding in the list and by id."""
    member = bearer(tokens.member)
    assert [b["id"] for b in client.get(url("/bindings"), headers=member).json["items"]] == [
        binding.id
    ]
    assert client.get(url(f"/bindings/{binding.id}"), headers=member).json["id"] == binding.id


def test_patch_changes_schedule_policy_and_audit_interval(client, admin, binding):
    """PATCH changes only the fields sent and answers the new state."""
    response = client.patch(
        url(f"/bindings/{binding.id}"),
        headers=admin,
        json={
            "schedule_cron": "*/5 * * * *",
            "ref_conflict_policy": "use_source",
            "full_audit_interval": 7200,
        },
    )
    assert response.status_code == 200, response.json
    body = response.json
    assert body["schedule_cron"] == "*/5 * * * *"
    assert body["ref_conflict_policy"] == "use_source"
    assert body["full_audit_interval"] == 7200
    assert body["next_run_at"] is None  # sync is not enabled
    cleared = client.patch(
        url(f"/bindings/{binding.id}"), headers=admin, json={"schedule_cron": None}
    )
    assert cleared.json["schedule_cron"] is None
    assert cleared.json["ref_conflict_policy"] == "use_source"


def test_patch_enables_sync_after_a_full_apply(client, admin, binding, ctx, source_repo, tmp_path):
    """sync_enabled needs a full apply in the epoch (409 before; 200 after, with a slot)."""
    refused = client.patch(
        url(f"/bindings/{binding.id}"), headers=admin, json={"sync_enabled": True}
    )
    assert_problem(refused, 409, "not_allowed_now")
    from reposync.service.bindings import SyncRequest
    from reposync.service.embedded import sync

    run = sync(
        ctx, SyncRequest(f"local:{source_repo}", f"local:{tmp_path / 'dst.git'}", full_audit=True)
    )
    assert run.status == "completed"
    enabled = client.patch(
        url(f"/bindings/{binding.id}"),
        headers=admin,
        json={"sync_enabled": True, "schedule_cron": "0 3 * * *"},
    )
    assert enabled.status_code == 200, enabled.json
    assert enabled.json["sync_enabled"] is True
    assert enabled.json["next_run_at"] is not None


@pytest.mark.parametrize(
    "body",
    [
        {"full_audit_interval": 10},
        {"full_audit_interval": 2**40},
        {"sync_enabled": "maybe"},
        {"ref_conflict_policy": "merge"},
        {"schedule_cron": "x" * 300},
        {"source": "local:/elsewhere"},
    ],
)
def test_patch_validates_its_body(client, admin, binding, body):
    """Fields out of their domain, and fields PATCH cannot change, are 422."""
    response = client.patch(url(f"/bindings/{binding.id}"), headers=admin, json=body)
    problem = assert_problem(response, 422, "validation_error")
    assert set(body) <= set(problem["errors"]["json"])


def test_patch_refuses_a_cron_that_is_no_cron(client, admin, binding):
    """The service's cron check answers 400 invalid_input."""
    response = client.patch(
        url(f"/bindings/{binding.id}"), headers=admin, json={"schedule_cron": "every day"}
    )
    assert_problem(response, 400, "invalid_input")


@pytest.mark.parametrize("cron", ["0 0 31 2 *", "0 0 1 1 * 0 2025"])
def test_patch_refuses_a_cron_that_never_fires_again(client, admin, binding, cron):
    """A cron with no future slot answered 500 (February 31st) or was stored and later
    stopped every schedule (a past year): 422 with its own code, nothing stored."""
    response = client.patch(
        url(f"/bindings/{binding.id}"),
        headers=admin,
        json={"schedule_cron": cron, "sync_enabled": False},
    )
    problem = assert_problem(response, 422, "cron_has_no_future_slot")
    assert "has no time after" in problem["detail"]
    shown = client.get(url(f"/bindings/{binding.id}"), headers=admin).json
    assert shown["schedule_cron"] is None
    assert shown["schedule_problem"] is None


def test_patch_withdraws_and_confirms_visibility(client, admin, binding):
    """confirm_visibility false withdraws the confirmation; true stores one."""
    path = url(f"/bindings/{binding.id}")
    withdrawn = client.patch(path, headers=admin, json={"confirm_visibility": False})
    assert withdrawn.json["visibility_confirmed"] is False
    confirmed = client.patch(path, headers=admin, json={"confirm_visibility": True})
    assert confirmed.status_code == 200, confirmed.json
    assert confirmed.json["visibility_confirmed"] is True


def test_delete_removes_the_binding(client, admin, binding, finished_run):
    """DELETE answers 204; the Binding and its Runs are gone."""
    response = client.delete(url(f"/bindings/{binding.id}"), headers=admin)
    assert response.status_code == 204
    assert response.data == b""
    assert_problem(
        client.get(url(f"/bindings/{binding.id}"), headers=admin), 404, "record_not_found"
    )
    assert_problem(
        client.get(url(f"/runs/{finished_run.id}"), headers=admin), 404, "record_not_found"
    )


def test_delete_is_refused_while_a_run_is_active(client, admin, ctx, binding):
    """An active Run keeps its Binding (409 not_allowed_now)."""
    create_run(ctx, binding.id)
    response = client.delete(url(f"/bindings/{binding.id}"), headers=admin)
    body = assert_problem(response, 409, "not_allowed_now")
    assert "active Run" in body["detail"]
