"""Issue 12 #7: tokens expire and can be revoked, users deleted, grants taken back, from
the admin API (and the CLI: tests/integration/cli/test_cli.py). Before, a token lived
forever: ``revoked_at`` existed but nothing set it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from reposync.service.accounts.users import find_user
from tests.integration.web.conftest import assert_problem, bearer, url


@pytest.fixture
def admin(tokens) -> dict[str, str]:
    return bearer(tokens.admin)


def issue(client, admin, user_id: int, **body) -> dict:
    response = client.post(url(f"/users/{user_id}/tokens"), headers=admin, json=body)
    assert response.status_code == 201, response.json
    return response.json


def test_a_created_user_gets_its_first_token_once(client, admin):
    created = client.post(url("/users"), headers=admin, json={"login": "neo", "role": "member"})
    assert created.status_code == 201, created.json
    assert client.get(url("/bindings"), headers=bearer(created.json["token"])).status_code == 200
    listed = client.get(url(f"/users/{created.json['id']}/tokens"), headers=admin).json
    assert [t["name"] for t in listed] == ["initial"]
    assert "token" not in listed[0]  # the secret is never shown again
    logins = [u["login"] for u in client.get(url("/users"), headers=admin).json]
    assert "neo" in logins


def test_a_revoked_token_is_refused_at_once(client, admin, ctx):
    mel = find_user(ctx, "mel")
    issued = issue(client, admin, mel.id, name="ci")
    assert client.get(url("/bindings"), headers=bearer(issued["token"])).status_code == 200

    revoked = client.delete(url(f"/tokens/{issued['id']}"), headers=admin)

    assert revoked.status_code == 200
    assert revoked.json["state"] == "revoked"
    refused = client.get(url("/bindings"), headers=bearer(issued["token"]))
    assert_problem(refused, 401, "unauthenticated")
    again = client.delete(url(f"/tokens/{issued['id']}"), headers=admin)
    assert again.json["revoked_at"] == revoked.json["revoked_at"]


def test_a_token_expires_and_records_when_it_was_last_used(client, admin, ctx):
    mel = find_user(ctx, "mel")
    issued = issue(client, admin, mel.id, name="short", days=1)
    expires = datetime.fromisoformat(issued["expires_at"])
    assert timedelta(hours=23) < expires - datetime.now(UTC) <= timedelta(days=1)
    assert issued["last_used_at"] is None

    assert client.get(url("/bindings"), headers=bearer(issued["token"])).status_code == 200
    [shown] = [
        t
        for t in client.get(url(f"/users/{mel.id}/tokens"), headers=admin).json
        if t["id"] == issued["id"]
    ]
    assert shown["last_used_at"] is not None
    with freeze_time(expires + timedelta(seconds=1)):
        refused = client.get(url("/bindings"), headers=bearer(issued["token"]))
        listed = client.get(url(f"/users/{mel.id}/tokens"), headers=admin).json
    assert_problem(refused, 401, "unauthenticated")
    assert [t["state"] for t in listed if t["id"] == issued["id"]] == ["expired"]


def test_by_default_a_token_lives_the_servers_lifetime(client, admin, ctx):
    issued = issue(client, admin, find_user(ctx, "mel").id)
    lifetime = datetime.fromisoformat(issued["expires_at"]) - datetime.now(UTC)
    assert timedelta(days=89) < lifetime <= timedelta(days=ctx.settings.api_token_days)
    forever = issue(client, admin, find_user(ctx, "mel").id, days=0)
    assert forever["expires_at"] is None


def test_deleting_a_user_ends_its_tokens_and_the_last_admin_stays(client, admin, ctx, tokens):
    mel = find_user(ctx, "mel")
    assert client.delete(url(f"/users/{mel.id}"), headers=admin).status_code == 204
    assert_problem(
        client.get(url("/bindings"), headers=bearer(tokens.member)), 401, "unauthenticated"
    )
    ada = find_user(ctx, "ada")
    assert_problem(client.delete(url(f"/users/{ada.id}"), headers=admin), 409, "not_allowed_now")


def test_a_grant_taken_back_hides_the_binding(client, admin, ctx, tokens, binding):
    mel = find_user(ctx, "mel")
    member = bearer(tokens.member)
    assert client.get(url(f"/bindings/{binding.id}"), headers=member).status_code == 200
    grant = {"provider": binding.a_provider, "repository_id": binding.a_repository_id}

    taken = client.delete(url(f"/users/{mel.id}/grants"), headers=admin, query_string=grant)

    assert taken.status_code == 204
    assert_problem(
        client.get(url(f"/bindings/{binding.id}"), headers=member), 404, "record_not_found"
    )
    missing = client.delete(url(f"/users/{mel.id}/grants"), headers=admin, query_string=grant)
    assert_problem(missing, 404, "record_not_found")
    given = client.post(url(f"/users/{mel.id}/grants"), headers=admin, json=grant)
    assert given.status_code == 204
    assert client.get(url(f"/bindings/{binding.id}"), headers=member).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/users"),
        ("post", "/users"),
        ("delete", "/users/1"),
        ("get", "/users/1/tokens"),
        ("post", "/users/1/tokens"),
        ("delete", "/tokens/1"),
        ("post", "/users/1/grants"),
    ],
)
def test_members_may_not_manage_users(client, tokens, method, path):
    response = getattr(client, method)(url(path), headers=bearer(tokens.member), json={})
    assert_problem(response, 403, "forbidden")


def test_a_grant_for_a_user_who_does_not_exist_is_404(client, admin):
    response = client.post(
        url("/users/999999/grants"), headers=admin, json={"provider": "local", "repository_id": "x"}
    )
    assert_problem(response, 404, "record_not_found")
