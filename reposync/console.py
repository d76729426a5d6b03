"""Terminal output: a one-line progress bar on stderr and the readable report."""

from __future__ import annotations

import shutil
import sys
from typing import Any, TextIO

from reposync.service.embedded import Progress
from reposync.sync.report import COUNTER_NAMES


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
        if progress.items_total:
            share = progress.items_done / progress.items_total
            bar_width = max(10, width - len(label) - 24)
            filled = int(bar_width * share)
            bar = "#" * filled + "-" * (bar_width - filled)
            line = f"{label} [{bar}] {progress.items_done}/{progress.items_total}"
        else:
            line = label
        self._stream.write("\r" + line[: width - 1].ljust(width - 1))
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()


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
