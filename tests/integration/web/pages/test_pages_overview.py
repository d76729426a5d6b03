"""The page's Overview: one row per Binding with its state, last sync, next Run, progress
and last problem; filtered and sorted by the query string; as many statements for 500
Bindings as for 50 (its render time is ``bench/page_overview.py``'s, never a test's)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import event, update
from sqlalchemy.engine import Engine

from reposync.models import Run
from reposync.service.context import ServiceContext
from reposync.service.runs import create_run
from reposync.web.app import create_app
from tests.integration.web.conftest import bearer, url
from tests.integration.web.pages.test_pages import sign_in
from tests.many_bindings import KINDS, seed

ROW = re.compile(r'<tr id="binding-(\d+)" class="st-(\w+)"')


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every SQL statement any engine runs inside the block."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", record)


def rows_of(page: str) -> list[tuple[int, str]]:
    return [(int(b), state) for b, state in ROW.findall(page)]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("pg", marks=pytest.mark.postgres)])
def test_500_bindings_render_in_as_many_statements_as_50(request, backend, tokens, binding):
    """Every Binding has a row, and the statement count does not grow with them (the
    page reads a fixed set of aggregates, never a query per Binding)."""
    if backend == "pg":
        ctx: ServiceContext = request.getfixturevalue("pg_ctx")
        ctx.db.upgrade()
        from reposync.service.accounts.users import create_user, issue_token

        token = issue_token(ctx, create_user(ctx, "ops", role="admin").id)
    else:
        ctx = request.getfixturevalue("ctx")
        token = tokens.admin
    client = create_app(ctx.settings, ctx=ctx).test_client()
    sign_in(client, token)
    seed(ctx, 50)
    client.get("/")  # the session's first use writes when it was used (not the page's)
    with statements() as small:
        first = client.get("/")
    assert first.status_code == 200
    seed(ctx, 450)
    with statements() as large:
        page = client.get("/").get_data(as_text=True)
    shown = rows_of(page)
    assert len(shown) == len({b for b, _ in shown}) >= 500
    assert {state for _, state in shown} >= {k for k in KINDS}
    assert len(large) == len(small), "\n".join(large)
    with statements() as live:
        part = client.get("/overview/rows").get_data(as_text=True)
    assert len(rows_of(part)) == len(shown)
    assert len(live) < len(small)  # the rows alone: the same reads, without the form's


def test_a_row_says_state_names_times_progress_and_problem(ctx, client, tokens, binding):
    """Each kind of row in words: the pair's locators, the state's word beside its
    colour, "ago" times without microseconds, a progress bar, the problem's action."""
    ids = seed(ctx, len(KINDS))
    sign_in(client, tokens.admin)
    page = client.get("/").get_data(as_text=True)
    row = {kind: _row(page, b) for kind, b in zip(KINDS, ids, strict=True)}
    assert "github:example-org/service-" in row["in_sync"]
    assert "local:/srv/mirror/example-org/service-" in row["in_sync"]
    assert "Binding " not in re.sub(r'title="[^"]*"', "", row["in_sync"])  # names, not ids
    assert '<span class="dot" aria-hidden="true"></span>in sync' in row["in_sync"]
    assert "minutes ago" in row["in_sync"]
    assert re.search(r"\d{2}:\d{2}:\d{2}\.\d", page) is None  # no microseconds anywhere
    assert "unsupported_object" not in row["in_sync"]  # a data gap is not a problem
    assert "<progress" in row["running"]
    assert 'value="30"' in row["running"]
    assert "30/60" in row["running"]
    assert "git_transport_error" in row["failed"]
    assert "then Retry" in row["failed"]  # the kind's action
    assert "conflict" in row["attention"]
    assert "conflict policy" in row["attention"]
    assert "1 write(s) whose outcome nobody observed" in row["blocked"]
    assert "needs attention" in row["attention"]
    assert ">never<" in row["never"]
    assert re.search(r'<td class="next"><time [^>]*>in (\d+ seconds|a minute|\d+ minutes)<', page)


def _row(page: str, binding_id: int) -> str:
    found = re.search(rf'<tr id="binding-{binding_id}".*?</tr>', page, re.S)
    assert found, binding_id
    return found.group(0)


def test_filter_by_state_and_text_and_sort(ctx, client, tokens, binding):
    """``state`` keeps one state, ``q`` matches either locator, ``sort`` orders; the
    tally counts every state whatever the filter."""
    ids = seed(ctx, 18)
    sign_in(client, tokens.admin)
    failed = rows_of(client.get("/?state=failed").get_data(as_text=True))
    assert [b for b, _ in failed] == [ids[1], ids[10]]
    assert {state for _, state in failed} == {"failed"}
    tally = client.get("/?state=failed").get_data(as_text=True)
    assert re.search(r'data-state="in_sync"[^>]*>.*?2 in sync', tally, re.S)
    named = rows_of(client.get(f"/?q=service-{ids[4]:04d}").get_data(as_text=True))
    assert [b for b, _ in named] == [ids[4]]
    by_name = [b for b, _ in rows_of(client.get("/?sort=name").get_data(as_text=True))]
    assert by_name == [binding.id, *ids]  # "/tmp/…/src.git" before "github:example-org/…"
    worst = [s for _, s in rows_of(client.get("/").get_data(as_text=True))]
    assert worst[0] == "failed"
    assert worst[-1] == "in_sync"
    assert client.get("/?sort=color").status_code == 400
    assert client.get("/?state=purple").status_code == 400


def test_the_api_overview_leaves_the_reports_in_the_database(ctx, client, tokens, binding):
    """``GET /overview`` selects no Run's report, I/O or inventory counts (issue 26),
    and still answers every documented field."""
    seed(ctx, 9)
    with statements() as seen:
        body = client.get(url("/overview"), headers=bearer(tokens.admin)).json
    # Every statement that loads Run rows (their columns may follow a computed one).
    run_selects = [s for s in seen if s.lstrip().startswith("SELECT") and "runs.kind" in s]
    assert run_selects
    for statement in run_selects:
        for column in ("runs.report", "runs.io", "runs.unsupported", "runs.planning_counters"):
            assert column not in statement, statement
    entries = [e for e in body["bindings"] if e["latest_run"]]
    assert entries
    assert all("counters" in e["latest_run"] for e in entries)


def test_a_queued_runs_wait_is_shown_where_the_api_says_it(ctx, client, tokens, binding):
    """A queued Run's row says it is queued and since when, and links to the Run."""
    run = create_run(ctx, binding.id)
    with ctx.db.transaction() as session:
        session.execute(update(Run).where(Run.id == run.id).values(status="queued"))
    sign_in(client, tokens.admin)
    row = _row(client.get("/").get_data(as_text=True), binding.id)
    assert f'href="/runs/{run.id}"' in row
    assert "queued" in row
