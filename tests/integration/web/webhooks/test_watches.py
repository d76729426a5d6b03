"""``/watches``: watch a branch; its cursor follows observed movements, never backwards."""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reposync.models import Binding, BranchWatch
from reposync.providers.base import EndpointInfo
from reposync.service.accounts.users import (
    create_user,
    delete_user,
    find_user,
    issue_token,
    revoke_grant,
)
from reposync.service.context import ServiceContext
from reposync.service.webhooks import watches
from tests.integration.web.conftest import assert_problem, bearer, url

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def rev(n: int) -> str:
    return f"{n:040x}"


@pytest.fixture
def events(monkeypatch) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """What the watches hand to the outbox, in order (test_webhook_outbox.py checks the
    rows the real outbox writes from it)."""
    sent: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def notify(session, event, payload, **filters) -> None:
        sent.append((event, payload, filters))

    monkeypatch.setattr(watches, "_notify", notify)
    return sent


def watch(client, headers: dict[str, str], repository: str, branch: str = "main"):
    return client.post(
        url("/watches"), headers=headers, json={"repository": repository, "branch": branch}
    )


def observe(ctx: ServiceContext, binding: Binding, moves, at: datetime) -> list[int]:
    """As INTAKE's push handling calls it: in the transaction recording the delivery."""
    with ctx.db.transaction() as session:
        return watches.observe_branch_moves(
            session, binding.a_provider, binding.a_repository_id, moves, at
        )


def test_create_answers_201_then_200_with_the_same_watch(client, tokens, binding, source_repo):
    """A watch resolves its repository to the immutable id; its cursor starts empty.
    ``refs/heads/main`` and ``main`` name the same branch."""
    admin = bearer(tokens.admin)
    created = watch(client, admin, f"local:{source_repo}")
    assert created.status_code == 201, created.json
    body = created.json
    assert created.headers["Location"] == url(f"/watches/{body['id']}")
    assert (body["provider"], body["repository_id"]) == ("local", binding.a_repository_id)
    assert (body["branch"], body["ref"]) == ("main", "refs/heads/main")
    assert body["repository"] == f"local:{source_repo}"
    assert body["cursor"] == {
        "before": None,
        "after": None,
        "moved_at": None,
        "observed_at": None,
        "movements": 0,
    }
    again = watch(client, admin, f"local:{source_repo}", "refs/heads/main")
    assert (again.status_code, again.json["id"]) == (200, body["id"])
    assert client.get(created.headers["Location"], headers=admin).json == body


@pytest.mark.parametrize("branch", ["a..b", "refs/heads/", "x" * 256, "bad name", "end.lock"])
def test_a_branch_git_would_refuse_is_400(client, tokens, source_repo, branch):
    response = watch(client, bearer(tokens.admin), f"local:{source_repo}", branch)
    assert_problem(response, 400, "invalid_input")


@pytest.mark.parametrize("body", [{}, {"repository": "local:/x"}, {"branch": "main"}, {"x": 1}])
def test_create_validates_its_body(client, tokens, body):
    response = client.post(url("/watches"), headers=bearer(tokens.admin), json=body)
    assert_problem(response, 422, "validation_error")


def test_a_member_watches_only_what_it_was_granted(client, tokens, binding, tmp_path):
    """The granted source: 201. The standby (not granted) and a path holding nothing
    answer alike, 404, so a member cannot tell them apart; outside the roots: 403."""
    member = bearer(tokens.member)
    assert watch(client, member, f"local:{tmp_path / 'src.git'}").status_code == 201
    hidden = assert_problem(
        watch(client, member, f"local:{tmp_path / 'dst.git'}"), 404, "repository_not_found"
    )
    missing = assert_problem(
        watch(client, member, f"local:{tmp_path / 'nothing.git'}"), 404, "repository_not_found"
    )
    assert hidden["detail"].replace("dst", "X") == missing["detail"].replace("nothing", "X")
    stranger = watch(client, bearer(tokens.stranger), f"local:{tmp_path / 'src.git'}")
    assert_problem(stranger, 404, "repository_not_found")
    assert_problem(watch(client, member, "local:/etc"), 403, "locator_refused")


def test_who_sees_a_watch(ctx, client, tokens, binding, source_repo):
    """Admins see every watch; a member its own, while its grant lasts; nobody else."""
    admin, member, stranger = (bearer(t) for t in (tokens.admin, tokens.member, tokens.stranger))
    mine = watch(client, member, f"local:{source_repo}").json["id"]
    theirs = watch(client, admin, f"local:{source_repo}").json["id"]
    assert [w["id"] for w in client.get(url("/watches"), headers=admin).json["items"]] == [
        mine,
        theirs,
    ]
    assert [w["id"] for w in client.get(url("/watches"), headers=member).json["items"]] == [mine]
    assert client.get(url("/watches"), headers=stranger).json["items"] == []
    assert_problem(client.get(url(f"/watches/{theirs}"), headers=member), 404, "record_not_found")
    assert_problem(
        client.delete(url(f"/watches/{theirs}"), headers=member), 404, "record_not_found"
    )
    assert_problem(client.get(url(f"/watches/{mine}"), headers=stranger), 404, "record_not_found")

    revoke_grant(ctx, find_user(ctx, "mel").id, binding.a_provider, binding.a_repository_id)
    assert client.get(url("/watches"), headers=member).json["items"] == []
    assert_problem(client.get(url(f"/watches/{mine}"), headers=member), 404, "record_not_found")
    assert client.get(url(f"/watches/{mine}"), headers=admin).status_code == 200


def test_delete_by_its_creator_or_an_admin(client, tokens, source_repo):
    admin, member = bearer(tokens.admin), bearer(tokens.member)
    mine = watch(client, member, f"local:{source_repo}").json["id"]
    assert client.delete(url(f"/watches/{mine}"), headers=member).status_code == 204
    assert_problem(client.get(url(f"/watches/{mine}"), headers=admin), 404, "record_not_found")
    again = watch(client, member, f"local:{source_repo}").json["id"]
    assert client.delete(url(f"/watches/{again}"), headers=admin).status_code == 204
    assert_problem(client.delete(url(f"/watches/{again}"), headers=admin), 404, "record_not_found")


def test_list_filters_and_pages(client, tokens, source_repo, binding):
    admin = bearer(tokens.admin)
    ids = [watch(client, admin, f"local:{source_repo}", b).json["id"] for b in ("a", "b", "c")]
    first = client.get(url("/watches?limit=2"), headers=admin).json
    assert [w["id"] for w in first["items"]] == ids[:2]
    rest = client.get(url(f"/watches?after_id={first['next_after_id']}"), headers=admin).json
    assert ([w["id"] for w in rest["items"]], rest["next_after_id"]) == (ids[2:], None)
    only_b = client.get(url("/watches?branch=b"), headers=admin).json["items"]
    assert [w["id"] for w in only_b] == [ids[1]]
    query = f"/watches?repository_id={binding.a_repository_id}&limit=1"
    assert len(client.get(url(query), headers=admin).json["items"]) == 1
    assert client.get(url("/watches?repository_id=other"), headers=admin).json["items"] == []


def test_observed_movements_move_the_cursor_forward_only(
    ctx, client, tokens, binding, source_repo, events
):
    """A push moves the cursor (before -> after, when at the forge, when observed) and
    emits branch.moved once; an older delivery arriving late changes nothing and emits
    nothing; other branches, tags and repositories are not this watch's."""
    admin = bearer(tokens.admin)
    body = watch(client, admin, f"local:{source_repo}").json
    assert observe(ctx, binding, [("refs/heads/main", rev(2), rev(3))], T0) == [body["id"]]
    cursor = client.get(url(f"/watches/{body['id']}"), headers=admin).json["cursor"]
    assert (cursor["before"], cursor["after"], cursor["movements"]) == (rev(2), rev(3), 1)
    assert datetime.fromisoformat(cursor["moved_at"]) == T0
    assert cursor["observed_at"] is not None

    late = [("refs/heads/main", rev(1), rev(2))]
    assert observe(ctx, binding, late, T0 - timedelta(seconds=5)) == []
    others = [("refs/heads/dev", rev(3), rev(4)), ("refs/tags/main", rev(3), rev(4))]
    assert observe(ctx, binding, others, T0 + timedelta(seconds=9)) == []
    with ctx.db.transaction() as session:
        assert watches.observe_branch_moves(session, "local", "another-repository", late, T0) == []
    assert client.get(url(f"/watches/{body['id']}"), headers=admin).json["cursor"] == cursor

    assert [(e, p["before"], p["after"], f) for e, p, f in events] == [
        (
            "branch.moved",
            rev(2),
            rev(3),
            {
                "binding_id": None,
                "branch": "main",
                "repositories": [(binding.a_provider, binding.a_repository_id)],
            },
        )
    ]
    payload = events[0][1]
    assert payload["watch_id"] == body["id"]
    assert payload["ref"] == "refs/heads/main"
    assert payload["binding_ids"] == [binding.id]  # the repository is its authority
    assert payload["repository"]["repository_id"] == binding.a_repository_id


def test_a_movement_without_a_time_zone_is_refused(ctx, binding):
    """A naive time cannot be ordered against the forge's: refused, not guessed."""
    with pytest.raises(ValueError, match="timezone"):
        observe(ctx, binding, [("refs/heads/main", rev(0), rev(1))], datetime(2026, 1, 1))


def test_every_watch_of_the_branch_moves(ctx, client, tokens, binding, source_repo, events):
    """Two users' watches on one branch: one delivery moves both (one event each)."""
    ids = [
        watch(client, bearer(token), f"local:{source_repo}").json["id"]
        for token in (tokens.admin, tokens.member)
    ]
    assert observe(ctx, binding, [("refs/heads/main", rev(0), rev(1))], T0) == ids
    assert sorted(p["watch_id"] for _, p, _ in events) == ids


def test_a_watch_goes_with_its_creator(ctx, client, tokens, source_repo):
    eve = create_user(ctx, "eve", role="admin")
    created = watch(client, bearer(issue_token(ctx, eve.id)), f"local:{source_repo}").json
    delete_user(ctx, eve.id)
    assert_problem(
        client.get(url(f"/watches/{created['id']}"), headers=bearer(tokens.admin)),
        404,
        "record_not_found",
    )


def test_a_github_watch_resolves_through_the_provider(ctx, client, tokens, tmp_path, monkeypatch):
    """Resolution asks the provider for the immutable id, as binding does (github: here
    through a fake opener, so the test stays offline)."""

    class Opened:
        def endpoint(self) -> EndpointInfo:
            return EndpointInfo("github", "octo/app", "4242")

        def close(self) -> None:
            return None

    monkeypatch.setattr(ctx, "open_provider", lambda spec: Opened())
    response = watch(client, bearer(tokens.admin), "github:octo/app", "trunk")
    assert response.status_code == 201, response.json
    assert (response.json["repository_id"], response.json["repository"]) == (
        "4242",
        "github:octo/app",
    )


@pytest.mark.postgres
def test_on_postgresql_concurrent_deliveries_end_at_the_newest(pg_ctx, events):
    """40 movements (two per second), delivered shuffled by four threads, each in its own
    transaction: the row lock makes them take turns, so the cursor ends at the newest and
    every movement it took emitted one event (a lost update would move it back)."""
    user = create_user(pg_ctx, "ada", role="admin")
    watch_id = watches.create_watch(
        pg_ctx, EndpointInfo("github", "octo/app", "4242"), "main", created_by=user.id
    )[0].id
    moves = [(rev(i), rev(i + 1), T0 + timedelta(seconds=i // 2)) for i in range(40)]
    random.Random(14).shuffle(moves)

    def deliver(share: list[tuple[str, str, datetime]]) -> None:
        for before, after, at in share:
            with pg_ctx.db.transaction() as session:
                watches.observe_branch_moves(
                    session, "github", "4242", [("refs/heads/main", before, after)], at
                )

    threads = [threading.Thread(target=deliver, args=(moves[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with pg_ctx.db.session() as session:
        stored = session.get(BranchWatch, watch_id)
        assert stored is not None
    assert (stored.before, stored.after) == (rev(39), rev(40))
    assert stored.moved_at == T0 + timedelta(seconds=19)
    assert stored.movements == len(events) >= 1
    times = [datetime.fromisoformat(p["moved_at"]) for _, p, _ in events]
    assert times == sorted(times)  # the events, in commit order, never go back either
