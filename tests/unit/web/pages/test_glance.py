"""What the page says at a glance, as plain functions: states worst first, times to the
second in UTC, durations and schedules in words, progress that moves as items settle,
and the history chart's scales."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reposync.models import Binding
from reposync.service.overview import OverviewRow, RunGlance
from reposync.service.queries import Progress
from reposync.web.pages import glance

NOW = datetime(2026, 12, 4, 10, 30, 15, 123456, tzinfo=UTC)


def run(
    status: str = "completed", *, took: float | None = 40.0, written: int = 0, **kw
) -> RunGlance:
    started = NOW - timedelta(hours=1)
    values = {
        "id": 1,
        "binding_id": 1,
        "status": status,
        "stage": "completed",
        "mode": "apply",
        "audit_mode": "checkpoint",
        "trigger": "manual",
        "error_code": None,
        "error_message": None,
        "created_at": started,
        "started_at": started if took is not None else None,
        "finished_at": started + timedelta(seconds=took) if took is not None else None,
        "retry_at": None,
        "cancel_requested_at": None,
        "counters": {"created": written},
    }
    values.update(kw)
    return RunGlance(**values)


def row(last: RunGlance | None = None, active: RunGlance | None = None, unknown: int = 0):
    return OverviewRow(Binding(id=1), last, active, None, None, unknown)


@pytest.mark.parametrize(
    ("made", "state"),
    [
        (row(), "never"),
        (row(run()), "in_sync"),
        (row(run("failed")), "failed"),
        (row(run("requires_attention")), "attention"),
        (row(run("completed_with_pending_changes")), "pending"),
        (row(run("cancelled")), "cancelled"),
        (row(run("failed"), run("running", took=None)), "running"),
        (row(run(), run("queued", took=None)), "queued"),
        (row(run(), run("running", took=None), unknown=1), "blocked"),  # unknown writes win
    ],
)
def test_a_bindings_state_follows_its_runs(made, state):
    assert glance.state_of(made).key == state


def test_states_are_ordered_worst_first_and_each_has_a_word():
    ranks = [s.rank for s in glance.STATES]
    assert ranks == sorted(ranks)
    assert glance.STATES[0].key == "failed"
    assert glance.STATES[-1].key == "in_sync"
    assert all(s.word for s in glance.STATES)


def test_times_are_utc_to_the_second():
    assert glance.when(NOW) == "2026-12-04 10:30:15 UTC"
    assert glance.iso(NOW) == "2026-12-04T10:30:15+00:00"
    assert glance.when(None) == ""


def test_moments_are_said_relative_to_now():
    assert glance.ago(NOW - timedelta(minutes=3), NOW) == "3 minutes ago"
    assert glance.ago(NOW + timedelta(minutes=4), NOW) == "in 4 minutes"
    assert glance.ago(NOW, NOW) == "now"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (604800, "7 days"),
        (86400 + 3600, "1 day and 1 hour"),
        (75.4, "1 minute and 15 seconds"),
        (0.42, "0.4 seconds"),
        (timedelta(hours=2), "2 hours"),
    ],
)
def test_durations_are_words(seconds, words):
    assert glance.duration(seconds) == words


@pytest.mark.parametrize(
    ("cron", "offset", "words"),
    [
        ("*/15 * * * *", 0, "Every 15 minutes (UTC)"),
        ("30 2 * * *", 0, "At 02:30 (UTC)"),
        ("0 3 * * 1-5", 0, "At 03:00, Monday through Friday (UTC)"),
        ("*/30 * * * *", 90, "Every 30 minutes (UTC), moved by 1 minute and 30 seconds"),
        (None, 0, "no schedule"),
        ("not a cron", 0, "not a cron"),  # unreadable: the expression itself
    ],
)
def test_schedules_are_words(cron, offset, words):
    assert glance.schedule_words(cron, offset) == words


def test_progress_counts_settled_items_only():
    """Claimed or verifying items are not done; completed, failed, blocked and
    superseded are."""
    progress = Progress(
        totals={
            "planned": 5,
            "applying": 2,
            "verifying": 1,
            "completed": 6,
            "failed": 1,
            "superseded": 1,
        }
    )
    fraction = glance.settled(progress)
    assert (fraction.done, fraction.total, fraction.percent) == (8, 16, 50)
    assert glance.settled({"totals": {"planned": 3}}).percent == 0
    assert glance.settled(None).total == 0
    assert glance.settled({"totals": {"completed": 2}}).percent == 100


def test_the_history_chart_scales_to_the_longest_run_and_the_most_written():
    runs = [
        run("completed", took=10, written=4),
        run("failed", took=40, written=0),
        run("running", took=None, written=0),
    ]
    chart = glance.history_chart(runs, reference=NOW, slots=30)
    assert chart.longest == 40
    assert chart.most == 4
    tallest = max(chart.bars, key=lambda b: b.height)
    assert tallest.run.status == "failed"
    assert tallest.height == glance.CHART_HEIGHT - 4
    assert chart.bars[0].items_height == glance.ITEMS_HEIGHT - 4
    assert [b.state.key for b in chart.bars] == ["in_sync", "failed", "running"]
    assert chart.bars[2].seconds is None  # not started: no duration, a sliver drawn
    assert all(b.x + b.width <= glance.CHART_WIDTH for b in chart.bars)
    assert glance.history_chart([]).bars == []
