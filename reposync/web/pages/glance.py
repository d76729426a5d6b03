"""What the page says at a glance: a Binding's state in one word and colour, times and
durations in words, a schedule in words, progress as a fraction, a history as a chart.

Pure functions of the rows ``service.overview`` and ``service.queries`` return,
registered as Jinja filters and globals (``register``), so templates stay markup and
these rules are unit-tested. Times are UTC and never show fractions of a second; a
duration is words ("7 days", not ``604800``). A colour never travels alone: each state
carries the word shown beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import humanize
from cron_descriptor import ExpressionDescriptor, FormatException, Options
from flask import Blueprint

from reposync.service.overview import OverviewRow, RunGlance
from reposync.service.queries import Progress
from reposync.sync.vocabulary import TERMINAL_ITEM_STATES, ItemState

#: A Run item's states in the order an item moves through them (the progress table's
#: columns, the items filter's choices).
ITEM_STATES = tuple(state.value for state in ItemState)


@dataclass(frozen=True, slots=True)
class State:
    """A Binding's state: ``key`` names its CSS class and filter value, ``word`` is what
    the page writes beside the colour, ``rank`` orders the worst first."""

    key: str
    word: str
    rank: int


#: Every state, worst first (the Overview's default order and its filter's choices).
STATES: tuple[State, ...] = (
    State("failed", "failed", 0),
    State("blocked", "blocked", 1),
    State("attention", "needs attention", 2),
    State("running", "running", 3),
    State("queued", "queued", 4),
    State("pending", "catching up", 5),
    State("cancelled", "cancelled", 6),
    State("never", "never synced", 7),
    State("in_sync", "in sync", 8),
)
_BY_KEY = {state.key: state for state in STATES}
#: The state a Binding is in after a Run ended with this status.
_AFTER = {
    "completed": "in_sync",
    "completed_with_pending_changes": "pending",
    "requires_attention": "attention",
    "blocked": "blocked",
    "failed": "failed",
    "cancelled": "cancelled",
}


def state_of(row: OverviewRow) -> State:
    """An unresolved unknown write blocks the Binding whatever ran since; otherwise the
    active Run says what happens now, and the last ended Run how it went."""
    if row.result_unknown:
        return _BY_KEY["blocked"]
    if row.active is not None:
        return _BY_KEY["running" if row.active.status == "running" else "queued"]
    if row.last_finished is None:
        return _BY_KEY["never"]
    return _BY_KEY[_AFTER.get(row.last_finished.status, "failed")]


def state_named(key: str) -> State | None:
    return _BY_KEY.get(key)


# --- times and durations ------------------------------------------------------------------


def now() -> datetime:
    return datetime.now(UTC)


def when(moment: datetime | None) -> str:
    """A moment to the second, in UTC (the whole page speaks UTC, as cron does here)."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(moment: datetime | None) -> str:
    """A ``<time datetime>`` value: ISO 8601 to the second."""
    return "" if moment is None else moment.astimezone(UTC).replace(microsecond=0).isoformat()


def ago(moment: datetime | None, reference: datetime | None = None) -> str:
    """ "3 minutes ago" / "in 4 minutes": how far a moment is from now, in words."""
    if moment is None:
        return ""
    delta = (reference or now()) - moment
    if timedelta(seconds=-1) < delta < timedelta(seconds=1):
        return "now"
    if delta > timedelta(0):
        return str(humanize.naturaltime(delta))
    return f"in {humanize.naturaldelta(-delta)}"


def duration(value: float | int | timedelta | None) -> str:
    """Seconds in words: "7 days", "1 minute and 15 seconds", "0.4 seconds"."""
    if value is None:
        return ""
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 10:
        return f"{seconds:.1f} seconds"
    return _words(timedelta(seconds=round(seconds)))


def _words(delta: timedelta) -> str:
    return humanize.precisedelta(delta, minimum_unit="seconds", format="%0.0f")


def run_duration(run: RunGlance, reference: datetime | None = None) -> float | None:
    """How long a Run took (or has been running): from its start to its end or now."""
    if run.started_at is None:
        return None
    end = run.finished_at or reference or now()
    return max(0.0, (end - run.started_at).total_seconds())


def size(count: int | None) -> str:
    """Bytes in words (binary units: what git itself prints)."""
    return "" if count is None else humanize.naturalsize(count, binary=True)


# --- schedules ---------------------------------------------------------------------------


def schedule_words(expression: str | None, offset: int = 0) -> str:
    """A cron expression in words ("Every 15 minutes, UTC"), the expression itself when
    the describer cannot read it; an owner binding's offset said after it."""
    if not expression:
        return "no schedule"
    options = Options()
    options.use_24hour_time_format = True
    options.verbose = False
    try:
        words = str(ExpressionDescriptor(expression, options).get_description())
    except (FormatException, ValueError, IndexError, KeyError):
        words = expression  # what the operator typed is still better than nothing
    else:
        words = f"{words} (UTC)"
    if offset:
        words += f", moved by {duration(offset)}"
    return words


# --- progress ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fraction:
    """Items settled of items planned (``percent`` rounded down: 100 only when done)."""

    done: int
    total: int

    @property
    def percent(self) -> int:
        return 0 if self.total == 0 else (100 * self.done) // self.total


def settled(progress: Progress | Mapping[str, Any] | None) -> Fraction:
    """An item is settled in a terminal state (completed, failed, blocked, superseded):
    the bar moves as items settle, not when they are merely claimed."""
    if progress is None:
        return Fraction(0, 0)
    totals = progress.totals if isinstance(progress, Progress) else progress.get("totals", {})
    terminal = {state.value for state in TERMINAL_ITEM_STATES}
    done = sum(n for state, n in totals.items() if state in terminal)
    return Fraction(done, sum(totals.values()))


# --- the Binding page's history chart ------------------------------------------------------

CHART_WIDTH = 720
CHART_HEIGHT = 120
ITEMS_HEIGHT = 60


@dataclass(frozen=True, slots=True)
class Bar:
    """One Run in the history chart: an outcome-coloured duration bar above, an items
    written bar below; coordinates in the SVG's own units."""

    run: RunGlance
    x: float
    width: float
    height: float
    items_height: float
    seconds: float | None
    state: State


@dataclass(frozen=True, slots=True)
class Chart:
    """The history chart: its bars and the scales they were drawn to (the axis labels)."""

    bars: list[Bar]
    longest: float
    most: int
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    items_height: int = ITEMS_HEIGHT


def history_chart(
    runs: Sequence[RunGlance], reference: datetime | None = None, slots: int = 30
) -> Chart:
    """Bars for up to ``slots`` Runs (oldest left), each scaled to the longest duration
    and the most items written among them (a tiny floor keeps a zero visible)."""
    seconds = [run_duration(run, reference) for run in runs]
    longest = max((s for s in seconds if s is not None), default=0.0)
    most = max((run.written for run in runs), default=0)
    step = CHART_WIDTH / max(slots, len(runs), 1)
    bars = []
    for index, (run, took) in enumerate(zip(runs, seconds, strict=True)):
        after = _AFTER.get(run.status)
        state = _BY_KEY[after] if after else _BY_KEY["running" if run.is_active else "failed"]
        bars.append(
            Bar(
                run=run,
                x=round(index * step + 1, 1),
                width=round(max(step - 2, 1), 1),
                height=round(max(2.0, (took or 0.0) / (longest or 1.0) * (CHART_HEIGHT - 4)), 1),
                items_height=round(max(1.0, run.written / (most or 1) * (ITEMS_HEIGHT - 4)), 1),
                seconds=took,
                state=state,
            )
        )
    return Chart(bars, longest, most)


def register(blueprint: Blueprint) -> None:
    """The filters and globals every page's templates use."""
    for name, function in (
        ("when", when),
        ("iso", iso),
        ("ago", ago),
        ("duration", duration),
        ("size", size),
        ("schedule_words", schedule_words),
    ):
        blueprint.add_app_template_filter(function, name)
    blueprint.add_app_template_global(settled, "settled")
    # A global, not a context value: imported macros (the progress table) see globals only.
    blueprint.record_once(lambda state: state.app.jinja_env.globals.update(ITEM_STATES=ITEM_STATES))
    blueprint.add_app_template_global(run_duration, "run_duration")
