"""Terminal output: progress on stderr, the readable report, tables of Runs, events and
Bindings, and their JSON (the API's own schemas, so a script reads the same shape from
``reposync runs show --json`` as from ``GET /runs/{id}``)."""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from reposync.git.progress import TransferProgress
from reposync.service.embedded import Progress
from reposync.sync.report import COUNTER_NAMES

if TYPE_CHECKING:
    from marshmallow import Schema

    from reposync.service.queries import Deferral


def progress_reporter(
    stream: TextIO | None = None, *, interval: float = 5.0
) -> ProgressLine | ProgressLog:
    """A line redrawn in place on a terminal; elsewhere (a log, CI) a line every
    ``interval`` seconds."""
    stream = stream if stream is not None else sys.stderr
    return ProgressLine(stream) if stream.isatty() else ProgressLog(stream, interval=interval)


class ProgressLine:
    """Redraws one status line; silent when stderr is not a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        stream = stream if stream is not None else sys.stderr
        self._stream = stream
        self._enabled = stream.isatty()
        self._drawn = False

    def __call__(self, progress: Progress) -> None:
        if not self._enabled:
            return
        width = shutil.get_terminal_size((80, 20)).columns
        label = f"run {progress.run_id} {progress.stage:<16}"
        share, figures = _figures(progress)
        if share is not None:
            bar_width = max(10, min(50, width - len(label) - len(figures) - 5))
            filled = int(bar_width * share)
            bar = "#" * filled + "-" * (bar_width - filled)
            line = f"{label} [{bar}] {figures}"
        else:
            line = f"{label} {figures}".rstrip()
        self._stream.write("\r" + line[: width - 1].ljust(width - 1))
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()


def _figures(progress: Progress) -> tuple[float | None, str]:
    """What a terminal's bar shows (a share, when there is one) and its words: items,
    and while a push runs git's phase, objects and bytes (the bar follows git then: the
    batch's items move only once its push has ended)."""
    parts: list[str] = []
    share: float | None = None
    if progress.items_total:
        share = progress.items_done / progress.items_total
        parts.append(f"{progress.items_done}/{progress.items_total} items")
    transfer = progress.transfer
    if transfer is not None:
        if transfer.objects_total:
            share = transfer.objects_done / transfer.objects_total
        parts.append(f"git {transfer.describe()}")
    return share, ", ".join(parts)


class ProgressLog:
    """A line every ``interval`` seconds while a Run goes on: its stage, item counts and
    rate since the previous line, what git reports of a push running, and the time
    elapsed.

    The Run reports progress between its steps; a thread writes the latest report on
    time even while one step (a long push) holds the main thread, so a quiet log still
    says the sync is alive and where it is.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        interval: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        start: bool = True,
    ) -> None:
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._latest: Progress | None = None
        self._started = clock()
        self._baseline: tuple[int, int, float] | None = None  # run id, items done, time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="reposync-progress", daemon=True)
        if start:
            self._thread.start()

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            self._latest = progress

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            self.emit()

    def emit(self) -> None:
        """Write one line about the latest progress (nothing before the first)."""
        with self._lock:
            progress = self._latest
        if progress is None:
            return
        now = self._clock()
        parts = [f"reposync: run {progress.run_id} {progress.stage}"]
        if progress.items_total:
            share = progress.items_done / progress.items_total
            parts.append(f"{progress.items_done}/{progress.items_total} items ({share:.0%})")
            baseline = self._baseline
            if baseline is not None and baseline[0] == progress.run_id and now > baseline[2]:
                rate = max(0, progress.items_done - baseline[1]) / (now - baseline[2])
                parts.append(f"{rate:.0f} items/s")
        if progress.transfer is not None:
            parts.append(f"git {progress.transfer.describe()}")
        parts.append(f"{now - self._started:.0f}s elapsed")
        self._baseline = (progress.run_id, progress.items_done, now)
        self._stream.write(", ".join(parts) + "\n")
        self._stream.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def render_deferral(
    run_id: int, retry_at: datetime, why: Deferral | None, *, as_json: bool = False
) -> str:
    """What ``reposync sync`` says of a Run it leaves deferred: until when, why (a rate
    limit or a retry's backoff, with the code and message of the Run's event), and how
    to resume it."""
    code, message = (why.error_code, why.message) if why else (None, "")
    if as_json:
        said = {"run_id": run_id, "status": "deferred", "retry_at": retry_at.isoformat()}
        return json.dumps({**said, "error_code": code, "message": message})
    cause = "a rate limit" if why is None or why.rate_limit else "a retry's backoff"
    code = code or "rate_limited"
    named = message if message.startswith(f"{code}:") else f"{code}: {message}"
    return (
        f"run {run_id} is deferred by {cause} until {retry_at.isoformat()} ({named}); "
        "run the same command again to resume it"
    )


def render_report(report: dict[str, Any], source: str, target: str) -> str:
    counters = report.get("counters", {})
    lines = [
        f"Run {report['run_id']} ({report['mode']}, {report['audit_mode']} audit, plan "
        f"{report.get('plan_mode') or '-'}): {report['status']}",
        f"  {source} -> {target}",
        "  " + "  ".join(f"{name}={counters.get(name, 0)}" for name in COUNTER_NAMES),
    ]
    planned = report.get("planned_actions") or {}
    if report.get("mode") == "dry_run" and planned:
        lines.append("  would: " + "  ".join(f"{k}={v}" for k, v in sorted(planned.items())))
    for object_type, counts in sorted(report.get("object_types", {}).items()):
        shown = "  ".join(f"{k}={v}" for k, v in counts.items() if v)
        lines.append(f"  {object_type}: {shown or 'nothing'}")
    branch = report.get("default_branch")
    if branch:  # what a clone of the target checks out
        what = ", ".join(str(branch[k]) for k in ("action", "state") if k in branch)
        lines.append(f"  default branch: {branch['source']} ({what})")
    gaps = report.get("data_gaps") or {}
    if gaps.get("total"):
        shown = "  ".join(
            f"{representation} {object_type}={count}"
            for representation, per_type in sorted(gaps.items())
            if isinstance(per_type, dict)
            for object_type, count in sorted(per_type.items())
        )
        lines.append(f"  data gaps: {shown}")
    io = report.get("io") or {}
    if io:
        parts = [
            f"{role} " + ",".join(f"{k}={v}" for k, v in sorted(stats.items()))
            for role, stats in sorted(io.items())
        ]
        lines.append("  io: " + "; ".join(parts))
    problems = report.get("problems", [])
    if problems:
        lines.append("  problems:")
        for problem in problems:
            examples = ", ".join(problem.get("examples", [])[:3])
            lines.append(
                f"    [{problem['error_code']}] {problem['message']}"
                + (f" (e.g. {examples})" if examples else "")
            )
            lines.append(f"      -> {problem['suggested_action']}")
    if report.get("duration_seconds") is not None:
        lines.append(f"  took {report['duration_seconds']:.2f}s")
    return "\n".join(lines)


# --- Runs, events and Bindings: JSON through the API's schemas, tables from the same ---


def dump(schema: Schema, value: Any) -> Any:
    """``value`` as the API shows it to an admin (nothing redacted: the command line's
    user acts with their own rights)."""
    from reposync.web.redaction import operator_view  # Flask: only for these commands

    with operator_view():
        return schema.dump(value)


def when(value: str | None) -> str:
    """An ISO time as a table shows it: to the second, in UTC as stored."""
    return value[:19].replace("T", " ") if value else "-"


def render_table(columns: Sequence[tuple[str, Callable[[Any], Any]]], rows: Sequence[Any]) -> str:
    """Left-aligned columns under their headers (the last one never padded)."""
    cells = [[header for header, _ in columns]]
    cells += [[_cell(value(row)) for _, value in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    )


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    return " ".join(str(value).split())  # one line per row, whatever a message holds


RUN_COLUMNS: list[tuple[str, Callable[[Any], Any]]] = [
    ("RUN", lambda run: run["id"]),
    ("BINDING", lambda run: run["binding_id"]),
    ("MODE", lambda run: run["mode"]),
    ("AUDIT", lambda run: run["audit_mode"]),
    ("TRIGGER", lambda run: run["trigger"]),
    (
        "STATUS",
        lambda run: f"{run['status']} (interrupted)" if run.get("interrupted") else run["status"],
    ),
    ("STAGE", lambda run: run["stage"]),
    ("CREATED", lambda run: when(run.get("created_at"))),
    ("FINISHED", lambda run: when(run.get("finished_at"))),
]

#: A Run's events, one line each (fixed widths: ``runs events --follow`` prints them as
#: they come).
EVENT_HEADER = f"{'SEQ':>5}  {'TIME':<19}  {'STAGE':<16}  {'EVENT':<16}  MESSAGE"


def event_line(event: Mapping[str, Any]) -> str:
    return (
        f"{event['seq']:>5}  {when(event.get('created_at')):<19}  {event['stage']:<16}  "
        f"{event['type']:<16}  {_cell(_event_text(event))}"
    ).rstrip()


BINDING_COLUMNS: list[tuple[str, Callable[[Any], Any]]] = [
    ("BINDING", lambda binding: binding["id"]),
    ("SOURCE (authority)", lambda binding: binding["source"]),
    ("TARGET (standby)", lambda binding: binding["target"]),
    ("EPOCH", lambda binding: binding["authority_epoch"]),
    ("SCHEDULE", lambda binding: binding["schedule_cron"]),
    ("SYNC", lambda binding: "on" if binding["sync_enabled"] else "off"),
    ("NEXT RUN", lambda binding: when(binding.get("next_run_at"))),
]


def _event_text(event: Mapping[str, Any]) -> str:
    counts = " ".join(f"{k}={v}" for k, v in sorted((event.get("counts") or {}).items()))
    return " ".join(part for part in (event.get("message") or "", counts) if part)


def endpoint(binding: Mapping[str, Any], side: str) -> str:
    """One side of a dumped Binding as a locator (``local:/srv/app.git``)."""
    return f"{binding[side]['provider']}:{binding[side]['locator']}"


def render_run(
    run: Mapping[str, Any], binding: Mapping[str, Any], progress: Mapping[str, Any]
) -> str:
    """One Run: its report once it has one, its progress while it goes on."""
    source, target = endpoint(binding, run["source_side"]), endpoint(binding, run["target_side"])
    report = run.get("report") or {}
    if report.get("run_id") == run["id"]:
        lines = render_report(report, source, target).splitlines()
    else:
        lines = [
            f"Run {run['id']} ({run['mode']}, {run['audit_mode']} audit): {run['status']}",
            f"  {source} -> {target}",
        ]
    lines.append(
        f"  binding {run['binding_id']}, {run['kind']} run, trigger {run['trigger']}, "
        f"attempt {run['attempt']}"
        + (f", retries run {run['parent_run_id']}" if run.get("parent_run_id") else "")
    )
    lines.append(
        f"  stage {run['stage']}; created {when(run.get('created_at'))}, started "
        f"{when(run.get('started_at'))}, finished {when(run.get('finished_at'))}"
    )
    totals = progress.get("totals") or {}
    if totals:
        shown = "  ".join(f"{state}={count}" for state, count in sorted(totals.items()))
        lines.append(f"  items: {shown}")
    if progress.get("transfer"):
        pushing = TransferProgress.from_dict(progress["transfer"]).describe()
        lines.append(f"  pushing: git {pushing}")
    if run.get("retry_at"):
        lines.append(f"  deferred until {when(run['retry_at'])}")
    if run.get("cancel_requested_at"):
        lines.append(f"  cancel requested at {when(run['cancel_requested_at'])}")
    if run.get("interrupted"):
        lines.append(
            "  interrupted: nothing executes it now (its process stopped or its lease ran "
            "out); the next `reposync sync` of the pair, or a worker, resumes it"
        )
    if run.get("error_code") and not report.get("problems"):
        lines.append(f"  error: [{run['error_code']}] {run.get('error_message') or ''}".rstrip())
    return "\n".join(lines)


def render_binding(binding: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> str:
    """One Binding: its sides, authority, schedule and latest Runs."""
    lines = [f"Binding {binding['id']}: {binding['source']} -> {binding['target']}"]
    for side in ("a", "b"):
        one = binding[side]
        role = "authority" if binding["authority_side"] == side else "standby"
        lines.append(
            f"  side {side} ({role}): {one['provider']}:{one['locator']}  repository id "
            f"{one['repository_id']}, visibility {one.get('visibility') or 'unknown'}"
        )
    lines.append(
        f"  authority epoch {binding['authority_epoch']}; conflict policy "
        f"{binding['ref_conflict_policy']}; visibility "
        + ("confirmed" if binding["visibility_confirmed"] else "not confirmed")
    )
    schedule = binding.get("schedule_cron")
    if schedule:
        state = "enabled" if binding["sync_enabled"] else "disabled"
        lines.append(
            f"  schedule {schedule} (UTC), {state}; next run {when(binding.get('next_run_at'))}"
        )
    else:
        lines.append("  no schedule")
    if binding.get("schedule_problem"):
        lines.append(f"  schedule paused: {binding['schedule_problem']}")
    lines.append(
        f"  full audit every {binding['full_audit_interval'] // 3600}h; last full apply "
        f"{when(binding.get('last_full_apply_at'))}"
    )
    if runs:
        lines.append("  latest runs:")
        lines += ["    " + line for line in render_table(RUN_COLUMNS, runs).splitlines()]
    else:
        lines.append("  no runs yet")
    return "\n".join(lines)
