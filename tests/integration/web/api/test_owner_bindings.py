"""``/owner-bindings`` through the Flask client: a dry run answers and writes nothing,
creating one queues its first pass (run here as the worker would), its passes and
members read back, local owners and every repository bound stay under the roots, and
forgetting an owner binding keeps its Bindings."""

from __future__ import annotations

import os

import pytest

from reposync.models import Binding, OwnerBinding, utcnow
from reposync.service import owners
from reposync.service.accounts.users import create_user, issue_token
from tests.gitrepo import generate
from tests.integration.service.test_owners import count
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def admin(ctx) -> dict[str, str]:
    return bearer(issue_token(ctx, create_user(ctx, "ada", role="admin").id))


def test_a_dry_run_answers_what_a_pass_would_do_and_writes_nothing(client, ctx, admin, owners_dirs):
    """POST with dry_run: 200, no owner binding, each repository would be created."""
    source, target = owners_dirs
    body = {"source": f"local:{source}", "target": f"local:{target}", "dry_run": True}
    response = client.post(url("/owner-bindings"), headers=admin, json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    answer = response.json
    assert answer["owner_binding"] is None
    assert [(r["name"], r["outcome"]) for r in answer["pass"]["repositories"]] == [
        ("app", "would_create"),
        ("lib", "would_create"),
    ]
    assert (count(ctx, OwnerBinding), count(ctx, Binding), os.listdir(target)) == (0, 0, [])


def test_creating_queues_the_first_pass_whose_report_reads_back(client, ctx, admin, owners_dirs):
    """POST: 202 with the owner binding and its Location, its pass due now; once a worker
    ran it, GET shows the report and /members the Bindings it made, in order."""
    source, target = owners_dirs
    body = {
        "source": f"local:{source}",
        "target": f"local:{target}",
        "schedule_cron": "*/30 * * * *",
    }
    response = client.post(url("/owner-bindings"), headers=admin, json=body)
    assert response.status_code == 202, response.get_data(as_text=True)
    made = response.json["owner_binding"]
    assert response.json["pass"] is None
    assert response.headers["Location"].endswith(f"/owner-bindings/{made['id']}")
    assert (made["source"], made["target"]) == (
        f"local:{os.path.realpath(source)}",
        f"local:{os.path.realpath(target)}",
    )
    row = owners.get_owner_binding(ctx, made["id"])
    assert row.next_pass_at is not None
    assert row.next_pass_at <= utcnow()
    owners.run_pass(ctx, made["id"])  # what the worker the message went to does
    shown = client.get(url(f"/owner-bindings/{made['id']}"), headers=admin).json
    assert shown["last_pass"]["counts"] == {"created": 2}
    assert shown["pass_running"] is False
    members = client.get(url(f"/owner-bindings/{made['id']}/members"), headers=admin).json
    assert [m["name"] for m in members["items"]] == ["app", "lib"]
    listed = client.get(url("/owner-bindings"), headers=admin).json
    assert [item["id"] for item in listed["items"]] == [made["id"]]


def test_a_pass_on_demand_is_queued_or_dry(client, ctx, admin, owners_dirs):
    """POST /passes: dry_run answers the report (200); otherwise the pass is queued (202)."""
    source, target = owners_dirs
    row, _ = owners.bind_all(
        ctx, owners.OwnerRequest(f"local:{source}", f"local:{target}", pass_cron=None)
    )
    assert row is not None
    generate(source / "new.git", commits=1, branches=0, tags=0)
    path = url(f"/owner-bindings/{row.id}/passes")
    dry = client.post(path, headers=admin, json={"dry_run": True})
    assert dry.status_code == 200, dry.get_data(as_text=True)
    assert dry.json["counts"] == {"already_bound": 2, "would_create": 1}
    queued = client.post(path, headers=admin)
    assert queued.status_code == 202, queued.get_data(as_text=True)
    assert queued.json["id"] == row.id
    assert not (target / "new.git").exists()


def test_owners_and_repositories_outside_the_roots_are_refused(client, ctx, admin, tmp_path):
    """A local owner outside REPOSYNC_LOCAL_ROOTS is 403 with nothing written; inside one,
    a repository that is a link out of the roots is refused at its pass (failed,
    locator_refused) while the others are bound."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    generate(outside / "secret.git", commits=1, branches=0, tags=0)
    body = {"source": f"local:{outside}", "target": f"local:{tmp_path / 'x'}"}
    refused = client.post(url("/owner-bindings"), headers=admin, json=body)
    assert_problem(refused, 403, "locator_refused")
    assert count(ctx, OwnerBinding) == 0
    source = tmp_path / "forge"
    generate(source / "fine.git", commits=1, branches=0, tags=0)
    (source / "sneaky.git").symlink_to(outside / "secret.git")
    (tmp_path / "mirror").mkdir()
    body = {"source": f"local:{source}", "target": f"local:{tmp_path / 'mirror'}"}
    made = client.post(url("/owner-bindings"), headers=admin, json=body).json["owner_binding"]
    report = owners.run_pass(ctx, made["id"])
    assert [(r.name, r.outcome.value, r.error_code) for r in report.repositories] == [
        ("fine", "created", None),
        ("sneaky", "failed", "locator_refused"),
    ]


def test_an_owner_that_does_not_exist_is_404_and_one_holding_the_data_dir_403(
    client, admin, tmp_path
):
    """A missing owner directory under a root is 404; the root that holds the service's
    data directory is never an owner (403), whatever it holds."""
    (tmp_path / "mirror").mkdir()
    body = {"source": f"local:{tmp_path / 'none'}", "target": f"local:{tmp_path / 'mirror'}"}
    response = client.post(url("/owner-bindings"), headers=admin, json=body)
    assert_problem(response, 404, "owner_not_found")
    body = {"source": f"local:{tmp_path}", "target": f"local:{tmp_path / 'mirror'}"}
    response = client.post(url("/owner-bindings"), headers=admin, json=body)
    assert_problem(response, 403, "locator_refused")


def test_forgetting_an_owner_binding_keeps_its_bindings(client, ctx, admin, owners_dirs):
    """DELETE: 204, the owner binding is gone (404 after), its Bindings stay."""
    source, target = owners_dirs
    row, _ = owners.bind_all(ctx, owners.OwnerRequest(f"local:{source}", f"local:{target}"))
    assert row is not None
    response = client.delete(url(f"/owner-bindings/{row.id}"), headers=admin)
    assert response.status_code == 204
    gone = client.get(url(f"/owner-bindings/{row.id}"), headers=admin)
    assert_problem(gone, 404, "record_not_found")
    assert count(ctx, Binding) == 2
