"""``POST /bindings/{id}/reconcile``: a dry run answers the plan a Run would make and
writes nothing; an apply queues one Run, however often (and however concurrently) it is
retried with its Idempotency-Key."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text, update

from reposync.errors import IdempotencyKeyInProgress
from reposync.lifecycle import RunMode
from reposync.models import (
    Binding,
    IdempotencyKey,
    InventoryEntry,
    ObjectLink,
    Run,
    RunEvent,
    RunItem,
    utcnow,
)
from reposync.service import idempotency
from reposync.service.accounts.users import create_user, find_user, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.reconcile import ReconcileRequest, scope
from reposync.web.app import create_app
from tests.gitrepo import commit_on, refs, set_ref
from tests.integration.web.conftest import assert_problem, bearer, url
from tests.workers import wait_for

TABLES = (Run, RunItem, RunEvent, InventoryEntry, ObjectLink, IdempotencyKey)


def rows(ctx: ServiceContext) -> dict[str, int]:
    with ctx.db.session() as session:
        return {
            table.__tablename__: session.execute(
                select(func.count()).select_from(table)
            ).scalar_one()
            for table in TABLES
        }


def binding_row(ctx: ServiceContext, binding_id: int) -> dict[str, Any]:
    with ctx.db.session() as session:
        binding = session.get(Binding, binding_id)
        assert binding is not None
        return {c.name: getattr(binding, c.name) for c in Binding.__table__.columns}


def reconcile(client, binding_id: int, headers: dict[str, str], key: str | None = None, **body):
    if key is not None:
        headers = {**headers, "Idempotency-Key": key}
    return client.post(url(f"/bindings/{binding_id}/reconcile"), headers=headers, json=body)


def planned(ctx: ServiceContext, run_id: int) -> dict[str, dict[str, int]]:
    """A Run's items as the proposal counts them: type -> action -> count."""
    with ctx.db.session() as session:
        found = session.execute(
            select(RunItem.object_type, RunItem.action, func.count())
            .where(RunItem.run_id == run_id)
            .group_by(RunItem.object_type, RunItem.action)
        ).all()
    result: dict[str, dict[str, int]] = {}
    for object_type, action, count in found:
        result.setdefault(object_type, {})[action] = count
    return result


@pytest.fixture
def admin(tokens) -> dict[str, str]:
    return bearer(tokens.admin)


@pytest.fixture
def pair(source_repo: Path, tmp_path: Path) -> SyncRequest:
    return SyncRequest(f"local:{source_repo}", f"local:{tmp_path / 'dst.git'}")


def test_a_dry_run_answers_the_proposal_and_writes_nothing(ctx, client, admin, binding, tmp_path):
    """The proposal of an empty standby: every ref created; no Run, item, event, snapshot
    or link is written, the Binding row and the target repository stay as they were."""
    before, binding_before = rows(ctx), binding_row(ctx, binding.id)
    response = reconcile(client, binding.id, admin, mode="dry_run")
    assert response.status_code == 200, response.json
    body = response.json
    assert (body["mode"], body["binding_id"], body["run"]) == ("dry_run", binding.id, None)
    proposal = body["proposal"]
    assert proposal["plan_mode"] == "empty_target"
    assert proposal["object_types"] == {"git_ref": {"create": 3}}
    assert proposal["totals"] == {"create": 3}
    assert (proposal["items_total"], proposal["truncated"]) == (3, False)
    assert sorted(i["object_key"] for i in proposal["items"]) == [
        "branch branch-00000",
        "branch main",
        "tag v00000",
    ]
    assert {i["action"] for i in proposal["items"]} == {"create"}
    assert proposal["blockers"] == []
    assert rows(ctx) == before  # no key, no record at all
    assert binding_row(ctx, binding.id) == binding_before
    assert refs(tmp_path / "dst.git") == {}


def test_the_proposal_is_the_plan_a_dry_run_run_makes(ctx, client, admin, binding, pair):
    """Same counts per type and action, same source digest as a dry-run Run planned."""
    proposal = reconcile(client, binding.id, admin, mode="dry_run").json["proposal"]
    run = sync(ctx, SyncRequest(pair.source, pair.target, dry_run=True))
    assert run.plan_mode == proposal["plan_mode"]
    assert planned(ctx, run.id) == proposal["object_types"]
    assert run.source_digest == proposal["source_digest"]


def test_after_a_sync_the_proposal_is_the_checkpoint_of_what_changed(
    ctx, client, admin, binding, pair, source_repo
):
    """Converged, then one branch moved and one appeared: a checkpoint proposes exactly
    those two (as a dry-run Run does), and a full audit reads every link back."""
    assert sync(ctx, pair).status == "completed"
    set_ref(source_repo, "refs/heads/feature", refs(source_repo)["refs/heads/main"])
    commit_on(source_repo, "refs/heads/main", "moved on")
    before = rows(ctx)
    proposal = reconcile(client, binding.id, admin, mode="dry_run").json["proposal"]
    assert rows(ctx) == before
    assert proposal["plan_mode"] == "checkpoint"
    assert proposal["object_types"] == {"git_ref": {"create": 1, "update": 1}}
    assert {(i["object_key"], i["action"]) for i in proposal["items"]} == {
        ("branch feature", "create"),
        ("branch main", "update"),
    }
    assert proposal["checkpoint_skipped"] == {"git_ref": 2}
    run = sync(ctx, SyncRequest(pair.source, pair.target, dry_run=True))
    assert planned(ctx, run.id) == proposal["object_types"]

    full = reconcile(client, binding.id, admin, mode="dry_run", audit_mode="full").json
    assert full["proposal"]["plan_mode"] == "full_audit"
    assert full["proposal"]["object_types"] == {"git_ref": {"create": 1, "update": 1}}
    assert full["proposal"]["unchanged"] == {"git_ref": 2}  # read back, found equal


def test_item_limit_bounds_the_listing_not_the_counts(client, admin, binding):
    proposal = reconcile(client, binding.id, admin, mode="dry_run", item_limit=1).json["proposal"]
    assert len(proposal["items"]) == 1
    assert (proposal["items_total"], proposal["truncated"]) == (3, True)
    assert proposal["totals"] == {"create": 3}


def test_a_dry_run_names_what_would_block_an_apply(ctx, client, admin, binding, queued_run):
    """An active Run: the proposal is still answered, and says the Run may change it."""
    proposal = reconcile(client, binding.id, admin, mode="dry_run").json["proposal"]
    assert proposal["active_run_id"] == queued_run.id
    assert [b["code"] for b in proposal["blockers"]] == ["binding_busy"]


def test_apply_queues_one_run_and_a_retry_answers_the_same(ctx, client, admin, binding):
    """202 with the queued Run; the retry gets the stored answer, byte for byte, and
    queues nothing more (even once that Run has moved on)."""
    first = reconcile(client, binding.id, admin, "key-1", mode="apply")
    assert first.status_code == 202, first.json
    run = first.json["run"]
    assert (run["status"], run["mode"], run["trigger"]) == ("queued", "apply", "manual")
    assert first.headers["Location"] == url(f"/runs/{run['id']}")
    assert "Idempotent-Replayed" not in first.headers
    with ctx.db.transaction() as session:  # the Run ends; a replay still shows it queued
        session.execute(update(Run).where(Run.id == run["id"]).values(status="completed"))
    again = reconcile(client, binding.id, admin, "key-1", mode="apply")
    assert again.status_code == 202
    assert again.get_data() == first.get_data()
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert rows(ctx)["runs"] == 1
    assert rows(ctx)["idempotency_keys"] == 1


def test_a_dry_run_with_a_key_is_stored_and_replayed(ctx, client, admin, binding, source_repo):
    """The retry gets the first proposal even though the source moved meanwhile; only the
    key's record was written."""
    before = rows(ctx)
    first = reconcile(client, binding.id, admin, "dry-1", mode="dry_run")
    set_ref(source_repo, "refs/heads/feature", refs(source_repo)["refs/heads/main"])
    again = reconcile(client, binding.id, admin, "dry-1", mode="dry_run")
    assert (again.status_code, again.get_data()) == (200, first.get_data())
    assert again.headers["Idempotent-Replayed"] == "true"
    fresh = reconcile(client, binding.id, admin, "dry-2", mode="dry_run")
    assert fresh.json["proposal"]["totals"] == {"create": 4}
    after = rows(ctx)
    assert after.pop("idempotency_keys") == before.pop("idempotency_keys") + 2
    assert after == before


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"mode": "apply"}, {"mode": "apply", "audit_mode": "full"}),
        ({"mode": "dry_run"}, {"mode": "apply"}),
        ({"mode": "dry_run"}, {"mode": "dry_run", "item_limit": 5}),
    ],
)
def test_the_key_with_another_body_is_422(ctx, client, admin, binding, first, second):
    assert reconcile(client, binding.id, admin, "k", **first).status_code in (200, 202)
    runs = rows(ctx)["runs"]
    problem = assert_problem(
        reconcile(client, binding.id, admin, "k", **second), 422, "idempotency_key_reused"
    )
    assert problem["suggested_action"]
    assert rows(ctx)["runs"] == runs


def test_an_equal_body_with_its_defaults_spelled_out_is_the_same_request(client, admin, binding):
    first = reconcile(client, binding.id, admin, "k", mode="apply")
    again = reconcile(
        client, binding.id, admin, "k", mode="apply", audit_mode="checkpoint", item_limit=100
    )
    assert (again.status_code, again.json) == (202, first.json)


@pytest.mark.parametrize("key", [None, "", "   ", "a b", "ü", "x" * 256, '""'])
def test_apply_needs_a_well_formed_key(ctx, client, admin, binding, key):
    headers = admin if key is None else {**admin, "Idempotency-Key": key}
    response = client.post(
        url(f"/bindings/{binding.id}/reconcile"), headers=headers, json={"mode": "apply"}
    )
    assert_problem(response, 400, "idempotency_key_invalid")
    assert rows(ctx)["runs"] == 0


def test_a_quoted_key_is_the_same_key(client, admin, binding):
    first = reconcile(client, binding.id, admin, "abc", mode="apply")
    again = reconcile(client, binding.id, admin, '"abc"', mode="apply")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json == first.json


def test_keys_are_per_user_and_per_binding(ctx, client, tokens, binding, tmp_path):
    """A member's equal key is its own: not the admin's answer, but a new apply (here
    refused: the admin's Run is active). Another Binding's equal key is another key."""
    admin = bearer(tokens.admin)
    assert reconcile(client, binding.id, admin, "same", mode="apply").status_code == 202
    member = reconcile(client, binding.id, bearer(tokens.member), "same", mode="apply")
    assert_problem(member, 409, "binding_busy")
    other = sync(ctx, SyncRequest(f"local:{tmp_path / 'dst.git'}", f"local:{tmp_path / 'o.git'}"))
    other_answer = reconcile(client, other.binding_id, admin, "same", mode="apply")
    assert other_answer.status_code == 202
    assert other_answer.json["binding_id"] == other.binding_id


def test_a_refused_apply_leaves_the_key_free(ctx, client, admin, binding, queued_run):
    """409 while a Run is active is not stored: once it ended, the retry queues the Run."""
    assert_problem(reconcile(client, binding.id, admin, "k", mode="apply"), 409, "binding_busy")
    assert rows(ctx)["idempotency_keys"] == 0
    with ctx.db.transaction() as session:
        session.execute(update(Run).where(Run.id == queued_run.id).values(status="cancelled"))
    retried = reconcile(client, binding.id, admin, "k", mode="apply")
    assert retried.status_code == 202
    assert "Idempotent-Replayed" not in retried.headers


def test_a_request_still_answered_holds_its_key(ctx, client, admin, binding):
    """While the first request with a key is answered, a retry is 409 (retryable), and
    nothing is queued twice."""
    request = ReconcileRequest(RunMode.APPLY)
    claim = idempotency.begin(
        ctx,
        user_id=find_user(ctx, "ada").id,
        scope=scope(binding.id),
        key="busy",
        request=request.fingerprint(),
        binding_id=binding.id,
    )
    assert isinstance(claim, idempotency.Claim)  # the first request, mid-way
    response = reconcile(client, binding.id, admin, "busy", mode="apply")
    problem = assert_problem(response, 409, "idempotency_key_in_progress")
    assert problem["retryable"] is True
    assert rows(ctx)["runs"] == 0


def test_concurrent_retries_with_one_key_queue_one_run(ctx, app, admin, binding):
    """Two threads send the same apply at once: one Run; every answer is that Run's
    (202) or 'still being answered' (409), never a second Run."""
    answers = concurrent_applies(app, binding.id, admin, "together")
    runs = [a for a in answers if a[0] == 202]
    assert runs, answers
    assert {body["run"]["id"] for _, body in runs} == {runs[0][1]["run"]["id"]}
    for status, body in answers:
        assert status == 202 or body["code"] == "idempotency_key_in_progress", body
    assert rows(ctx)["runs"] == 1


def concurrent_applies(app, binding_id: int, headers: dict[str, str], key: str, threads: int = 2):
    barrier = threading.Barrier(threads)
    answers: list[tuple[int, dict[str, Any]]] = []
    lock = threading.Lock()

    def send() -> None:
        client = app.test_client()
        barrier.wait()
        response = reconcile(client, binding_id, headers, key, mode="apply")
        with lock:
            answers.append((response.status_code, response.get_json(force=True)))

    workers = [threading.Thread(target=send) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(answers) == threads
    return answers


@pytest.mark.postgres
def test_on_postgresql_concurrent_retries_queue_one_run(pg_ctx, source_repo, tmp_path):
    """Six requests with one key at once, each on its own connection: one Run."""
    binding = bind(pg_ctx, SyncRequest(f"local:{source_repo}", f"local:{tmp_path / 'dst.git'}"))
    admin = bearer(issue_token(pg_ctx, create_user(pg_ctx, "ada", role="admin").id))
    app = create_app(pg_ctx.settings, ctx=pg_ctx)
    answers = concurrent_applies(app, binding.id, admin, "together", threads=6)
    run_ids = {body["run"]["id"] for status, body in answers if status == 202}
    assert len(run_ids) == 1, answers
    for status, body in answers:
        assert status == 202 or body["code"] == "idempotency_key_in_progress", body
    assert rows(pg_ctx)["runs"] == 1
    replay = reconcile(app.test_client(), binding.id, admin, "together", mode="apply")
    assert (replay.status_code, replay.json["run"]["id"]) == (202, run_ids.pop())


@pytest.mark.postgres
def test_on_postgresql_the_unique_key_decides_a_race(pg_ctx, postgres_server):
    """A second first request that looked before the first one committed: its insert
    waits on the unique index, fails once the first commits, and it then finds the key
    held (409), never owning it too."""
    user = create_user(pg_ctx, "ada", role="admin").id
    holder = pg_ctx.db.sessions()
    holder.begin()
    holder.add(
        IdempotencyKey(
            user_id=user,
            scope="s",
            key="k",
            request_hash="h",
            owner="first",
            locked_until=utcnow() + timedelta(minutes=5),
            expires_at=utcnow() + timedelta(days=1),
        )
    )
    holder.flush()  # the row exists, uncommitted: invisible to the other request
    outcome: list[object] = []

    def second() -> None:
        try:
            outcome.append(idempotency.begin(pg_ctx, user_id=user, scope="s", key="k", request="h"))
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    wait_for(lambda: waiting_on_a_lock(pg_ctx) > 0, 10, "the second insert to wait")
    holder.commit()
    holder.close()
    thread.join(10)
    assert len(outcome) == 1
    assert isinstance(outcome[0], IdempotencyKeyInProgress), outcome


def waiting_on_a_lock(ctx: ServiceContext) -> int:
    """Backends waiting for a lock (an insert on a unique key waits on the other
    transaction's id)."""
    with ctx.db.session() as session:
        return int(
            session.execute(text("SELECT count(*) FROM pg_locks WHERE NOT granted")).scalar_one()
        )
