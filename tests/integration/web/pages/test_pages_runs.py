"""The Binding page's history and words, and the Run page's stages, progress, items and
events, rendered from real Runs (the live parts as ``run.js`` fetches them)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update

from reposync.models import Binding, Run, RunEvent
from reposync.service import queries
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.integration.web.pages.test_pages import sign_in
from tests.many_bindings import seed

MICROSECONDS = re.compile(r"\d{2}:\d{2}:\d{2}\.\d")


def test_the_binding_page_charts_its_runs_and_says_schedule_and_durations_in_words(
    ctx, client, tokens, binding, finished_run, tmp_path: Path
):
    """Two Runs: two bars linking to them; the schedule and the full-audit interval in
    words, not ``604800``; no microseconds anywhere."""
    again = sync(ctx, SyncRequest(f"local:{binding.a_locator}", f"local:{binding.b_locator}"))
    with ctx.db.transaction() as session:
        session.execute(
            update(Binding).where(Binding.id == binding.id).values(schedule_cron="*/15 * * * *")
        )
    sign_in(client, tokens.admin)
    page = client.get(f"/bindings/{binding.id}").get_data(as_text=True)
    chart = re.search(r'<svg class="chart" id="history".*?</svg>', page, re.S)
    assert chart
    for run_id in (finished_run.id, again.id):
        assert f'<a href="/runs/{run_id}" data-run="{run_id}">' in chart.group(0)
    assert chart.group(0).count('class="st-in_sync"') == 2
    assert "Every 15 minutes (UTC)" in page
    assert "every 7 days" in page
    assert ">604800<" not in page
    assert MICROSECONDS.search(page) is None
    assert f"<h1>{binding.a_locator} → {binding.b_locator}" in page


def test_the_run_page_times_each_stage_and_numbers_events_once(ctx, client, tokens, finished_run):
    """Each stage the Run went through has a duration; the events list is not an
    ordered list's numbers plus the seq (numbered once); times without microseconds."""
    sign_in(client, tokens.admin)
    page = client.get(f"/runs/{finished_run.id}").get_data(as_text=True)
    timed = re.findall(r'data-stage="(\w+)">\w+ <span class="muted took">', page)
    assert "planning" in timed
    assert "applying" in timed
    assert "completed" not in timed  # the end has no duration
    assert 'id="stage-bar"' in page
    events = re.findall(r'<li data-seq="(\d+)"><span class="seq">(\d+)</span>', page)
    assert events
    assert all(a == b for a, b in events)
    assert MICROSECONDS.search(page) is None
    css = client.get("/ui/static/pages.css").get_data(as_text=True)
    assert re.search(r"ol\.events \{[^}]*list-style: none", css)


def test_the_progress_bar_counts_settled_items_and_shows_gits_transfer(
    ctx, client, tokens, finished_run, monkeypatch
):
    """Items settled of items planned; while git sends, its objects and bytes (an
    optional ``transfer`` of the progress), and nothing of it when absent."""
    sign_in(client, tokens.admin)
    page = client.get(f"/runs/{finished_run.id}/live").get_data(as_text=True)
    bar = re.search(r'<progress class="big" id="items-bar" max="(\d+)" value="(\d+)"', page)
    assert bar
    assert bar.group(1) == bar.group(2)  # a completed Run: every item settled
    assert f"{bar.group(2)} of {bar.group(1)} item(s) settled (100%)" in page
    assert 'id="transfer"' not in page

    real = queries.run_progress

    def with_transfer(*args, **kwargs):
        progress = real(*args, **kwargs)
        transfer = {
            "phase": "writing",
            "objects_done": 250,
            "objects_total": 1000,
            "bytes_done": 5 * 2**20,
        }
        return {**progress, "transfer": transfer}

    monkeypatch.setattr("reposync.web.pages.runs.run_progress", with_transfer)
    page = client.get(f"/runs/{finished_run.id}/live").get_data(as_text=True)
    shown = re.search(r'<p id="transfer">.*?</p>', page, re.S)
    assert shown
    assert "250 of 1000 objects" in shown.group(0)
    assert "5.0 MiB" in shown.group(0)
    assert 'id="transfer-bar" max="1000" value="250"' in shown.group(0)


def test_a_queued_run_says_where_it_waits_and_an_interrupted_one_says_so(
    ctx, client, tokens, binding
):
    """Where a queued Run waits (``service.waits``: here deferred until a time) is on its
    page and its Overview row; a running Run nobody executes says it was interrupted."""
    from datetime import UTC, datetime

    from reposync.service.runs import create_run

    run = create_run(ctx, binding.id)
    sign_in(client, tokens.admin)
    assert 'id="waiting"' not in client.get(f"/runs/{run.id}").get_data(as_text=True)

    later = datetime.now(UTC) + timedelta(hours=2)
    with ctx.db.transaction() as session:
        session.execute(update(Run).where(Run.id == run.id).values(retry_at=later))
    words = f"deferred until {later.strftime('%Y-%m-%d %H:%M:%S UTC')}"
    page = client.get(f"/runs/{run.id}").get_data(as_text=True)
    assert f'id="waiting">Waiting: {words}' in page
    assert words in client.get("/overview/rows").get_data(as_text=True)

    with ctx.db.transaction() as session:  # running, and no lease names it: nobody runs it
        session.execute(update(Run).where(Run.id == run.id).values(status="running", retry_at=None))
    page = client.get(f"/runs/{run.id}").get_data(as_text=True)
    assert 'id="interrupted">Interrupted:' in page
    assert 'id="waiting"' not in page


def test_the_items_table_is_served_alone_with_the_pages_filters(ctx, client, tokens, finished_run):
    """``run.js`` refreshes the items with the live part: the same rows and filters."""
    sign_in(client, tokens.admin)
    page = client.get(f"/runs/{finished_run.id}").get_data(as_text=True)
    assert f'data-items="/runs/{finished_run.id}/items' in page
    part = client.get(f"/runs/{finished_run.id}/items").get_data(as_text=True)
    rows = re.findall(r'<tr data-item="(\d+)" data-state="(\w+)">', part)
    assert rows
    assert {state for _, state in rows} == {"completed"}
    assert rows == re.findall(r'<tr data-item="(\d+)" data-state="(\w+)">', page)
    failed = client.get(f"/runs/{finished_run.id}/items?state=failed").get_data(as_text=True)
    assert "No items." in failed


def test_a_stage_that_lasted_shows_its_duration_in_words(ctx, client, tokens, finished_run):
    """Events a minute and a half apart: the stage between them took that long."""
    with ctx.db.transaction() as session:
        first = (
            session.execute(
                select(RunEvent).where(
                    RunEvent.run_id == finished_run.id, RunEvent.stage == "applying"
                )
            )
            .scalars()
            .first()
        )
        assert first is not None
        later = (
            session.execute(
                select(RunEvent).where(
                    RunEvent.run_id == finished_run.id,
                    RunEvent.seq > first.seq,
                    RunEvent.stage != "applying",
                )
            )
            .scalars()
            .first()
        )
        assert later is not None
        session.execute(
            update(RunEvent)
            .where(RunEvent.run_id == finished_run.id, RunEvent.stage == "applying")
            .values(created_at=later.created_at - timedelta(seconds=90))
        )
    sign_in(client, tokens.admin)
    page = client.get(f"/runs/{finished_run.id}").get_data(as_text=True)
    assert re.search(
        r'data-stage="applying">applying <span class="muted took">1 minute and 30 seconds', page
    )


def test_a_run_without_events_renders_without_durations(ctx, client, tokens, binding):
    """A Run nobody has written an event for yet (or whose events were pruned): the
    timeline has stages and no durations, and the page renders."""
    ids = seed(ctx, 2)
    with ctx.db.session() as session:
        failed = session.execute(
            select(Run.id).where(Run.binding_id == ids[1], Run.status == "failed")
        ).scalar_one()
    sign_in(client, tokens.admin)
    response = client.get(f"/runs/{failed}")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert 'class="muted took"' not in page
    assert 'id="retry"' in page  # a failed Run offers a retry
