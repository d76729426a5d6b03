"""The API on PostgreSQL: the overview's query count does not grow; a smoke test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import event, update
from sqlalchemy.engine import Engine

from reposync.models import Binding, Run, RunItem
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from reposync.service.runs import create_run
from reposync.web.app import create_app
from tests.gitrepo import generate
from tests.integration.web.conftest import bearer, url
from tests.servers import TEMPLATE, database_name

pytestmark = pytest.mark.postgres


@contextmanager
def counting(ctx: ServiceContext) -> Iterator[list[str]]:
    """Every statement sent through the context's engines while the block runs."""
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        statements.append(statement)

    engines: set[Engine] = {ctx.db.engine, ctx.db._read_engine}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


def add_bindings(ctx: ServiceContext, count: int, *, active: bool) -> None:
    """Bindings with a finished Run with items each, and optionally an active Run."""
    with ctx.db.transaction() as session:
        bindings = [
            Binding(
                a_provider="local",
                a_repository_id=f"a-{n}",
                a_locator=f"/a/{n}",
                b_provider="local",
                b_repository_id=f"b-{n}",
                b_locator=f"/b/{n}",
            )
            for n in range(count)
        ]
        session.add_all(bindings)
        session.flush()
        ids = [b.id for b in bindings]
    for binding_id in ids:
        done = create_run(ctx, binding_id)
        with ctx.db.transaction() as session:
            session.execute(update(Run).where(Run.id == done.id).values(status="completed"))
        if active:
            run = create_run(ctx, binding_id)
            with ctx.db.transaction() as session:
                session.add_all(
                    RunItem(
                        run_id=run.id,
                        phase=0,
                        object_type=object_type,
                        object_key=f"{object_type} {n}",
                        action="create",
                        reason="new",
                        state=state,
                    )
                    for n, (object_type, state) in enumerate(
                        [("git_ref", "completed"), ("git_ref", "planned"), ("label", "failed")]
                    )
                )


def overview_statements(ctx: ServiceContext, bindings: int, *, active: bool) -> list[str]:
    add_bindings(ctx, bindings, active=active)
    admin = create_user(ctx, "ada", role="admin")
    client = create_app(ctx.settings, ctx=ctx).test_client()
    headers = bearer(issue_token(ctx, admin.id))
    # A token's first use in a while also records it (one UPDATE per token per 5 minutes,
    # tested in test_users.py); measure a request in the steady state.
    client.get(url("/health"), headers=headers)
    client.get(url("/runs"), headers=headers)
    with counting(ctx) as statements:
        response = client.get(url("/overview"), headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    entries = response.json["bindings"]
    assert len(entries) == bindings
    if active:
        assert all(e["active_progress"]["items"] == 3 for e in entries)
        assert entries[0]["active_progress"]["object_types"] == {
            "git_ref": {"completed": 1, "planned": 1},
            "label": {"failed": 1},
        }
    return statements


@pytest.fixture
def other_pg_ctx(pg_url: str, postgres_server, settings) -> Iterator[ServiceContext]:
    """A second fresh PostgreSQL database, to compare 1 Binding with 20."""
    from reposync.models.db import Database

    name = database_name("web_overview_other")
    postgres_server.admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    db = Database(postgres_server.database_url(name))
    yield ServiceContext(settings=settings, db=db)
    db.dispose()
    postgres_server.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.parametrize("active", [False, True], ids=["finished-runs", "active-runs"])
def test_overview_query_count_does_not_grow_with_bindings(pg_ctx, other_pg_ctx, active):
    """1 Binding or 20, with their latest (and active) Runs: the same number of queries."""
    one = overview_statements(pg_ctx, 1, active=active)
    twenty = overview_statements(other_pg_ctx, 20, active=active)
    assert len(one) == len(twenty), (one, twenty)
    assert len(twenty) <= 6  # authentication + the overview's own queries


def test_the_overview_pages_in_binding_order_when_asked(pg_ctx):
    """With ``limit`` the overview comes in pages that cover every Binding once, each
    page's cursor leading to the next and the last one's null; without it, all at once."""
    add_bindings(pg_ctx, 5, active=True)
    admin = create_user(pg_ctx, "ada", role="admin")
    client = create_app(pg_ctx.settings, ctx=pg_ctx).test_client()
    headers = bearer(issue_token(pg_ctx, admin.id))
    whole = client.get(url("/overview"), headers=headers).json
    assert whole["next_after_id"] is None
    every = [entry["binding"]["id"] for entry in whole["bindings"]]
    seen: list[int] = []
    cursors = []
    after = ""
    while True:
        page = client.get(url(f"/overview?limit=2{after}"), headers=headers)
        assert page.status_code == 200, page.json
        seen += [entry["binding"]["id"] for entry in page.json["bindings"]]
        cursors.append(page.json["next_after_id"])
        if page.json["next_after_id"] is None:
            break
        after = f"&after_id={page.json['next_after_id']}"
    assert seen == every == sorted(every)
    assert len(every) == 5
    assert cursors == [every[1], every[3], None]
    assert client.get(url("/overview?limit=0"), headers=headers).status_code == 422


def test_smoke_on_postgres(pg_ctx, tmp_path: Path):
    """Create a Binding and a Run, follow it, cancel it: on PostgreSQL through the API."""
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=1)
    admin = create_user(pg_ctx, "ada", role="admin")
    headers = bearer(issue_token(pg_ctx, admin.id))
    client = create_app(pg_ctx.settings, ctx=pg_ctx).test_client()
    created = client.post(
        url("/bindings"),
        headers=headers,
        json={"source": f"local:{source}", "target": f"local:{tmp_path / 'dst.git'}"},
    )
    assert created.status_code == 201, created.json
    binding_id = created.json["id"]
    run = client.post(url(f"/bindings/{binding_id}/runs"), headers=headers, json={})
    assert run.status_code == 202, run.json
    run_id = run.json["id"]
    listed = client.get(url(f"/runs?binding_id={binding_id}&status=queued"), headers=headers)
    assert [r["id"] for r in listed.json["items"]] == [run_id]
    events = client.get(url(f"/runs/{run_id}/events"), headers=headers).json["items"]
    assert [e["type"] for e in events] == ["run_created"]
    progress = client.get(url(f"/runs/{run_id}/progress"), headers=headers).json
    assert progress["items"] == 0
    cancelled = client.post(url(f"/runs/{run_id}/cancel"), headers=headers)
    assert cancelled.json["cancel_requested_at"] is not None
    listing = client.get(
        url(f"/bindings?repository_id={created.json['a']['repository_id']}"), headers=headers
    )
    assert [b["id"] for b in listing.json["items"]] == [binding_id]
    nul = client.get(url("/bindings?repository_id=a%00b"), headers=headers)
    assert nul.status_code == 422  # PostgreSQL text cannot hold NUL: refused before the query
