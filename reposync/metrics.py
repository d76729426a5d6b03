"""Prometheus metrics: every definition, the functions that record them, and the
multi-process setup (a leaf: the service, the providers and the entry points import it;
it imports nothing of reposync but ``config``).

Recording is a call of one of the ``record_*``/``observe_*`` functions below, never a
metric object used directly, so a name or label changes here only. Hook points for code
still to come:

* ``record_webhook(direction, status)``: one webhook delivery. ``direction`` is
  ``"inbound"`` (a forge called us) or ``"outbound"`` (our outbox called someone);
  ``status`` a short word of the caller's vocabulary (``"accepted"``, ``"rejected"``,
  ``"delivered"``, ``"failed"``, ``"retrying"``, ...). Both must be bounded sets: never
  an id, a URL or a message.

Processes. ``reposync api`` (gunicorn) and ``reposync worker`` (Celery prefork) fork
children that each count for themselves: prometheus_client's multi-process mode keeps
each process's values in files under ``PROMETHEUS_MULTIPROC_DIR``, and ``/metrics`` sums
them. ``setup_multiprocess`` gives the starting main process its own directory
``<metrics dir>/<role>-<host>-<pid>`` (``REPOSYNC_METRICS_DIR``, by default
``<data dir>/metrics``), emptied at start, and removes the directories of the same role
on this host whose process is gone; the API reads every directory under the metrics
directory, so the workers' counts appear on the API's ``/metrics`` when they share the
data directory (compose's ``data`` volume). A process that never called it (``reposync
sync``, the tests' in-process apps) counts in memory and its own ``/metrics`` shows that.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from pathlib import Path

from prometheus_client import Counter, Gauge, Histogram, values
from prometheus_client.multiprocess import mark_process_dead

#: prometheus_client reads it; ``setup_multiprocess`` sets it for this process and its
#: children.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# -- definitions ---------------------------------------------------------------------
# Every metric has at least one label: a labelled metric creates its value storage when a
# label set is first used, which is after ``setup_multiprocess`` chose the storage.

RUNS_FINISHED = Counter(
    "reposync_runs_finished",
    "Runs that ended, by final status and trigger.",
    ["status", "trigger"],
)
STAGE_DURATION = Histogram(
    "reposync_stage_duration_seconds",
    "Wall time of one stage execution (one step; applying runs a step per batch), by "
    "stage and outcome (next: handed on; stopped: finished, deferred, retried or lost).",
    ["stage", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
ITEMS_SETTLED = Counter(
    "reposync_items_settled",
    "RunItems settled by the applying stage or by recovery, by object type and state "
    "(completed: applied; failed; blocked; skipped; planned: left for a later attempt).",
    ["object_type", "state"],
)
LEASE_RECLAIMS = Counter(
    "reposync_lease_reclaims",
    "Claims that took a Run over from an execution whose lease expired or was given up.",
    ["stage"],
)
REDISPATCHES = Counter(
    "reposync_redispatches",
    "Stalled Runs the recovery tick handed to a worker again, by reason.",
    ["reason"],
)
GITHUB_RATE_LIMIT_REMAINING = Gauge(
    "reposync_github_rate_limit_remaining",
    "GitHub's x-ratelimit-remaining on the latest response, by account and resource.",
    ["account", "resource"],
    multiprocess_mode="mostrecent",
)
GITHUB_RATE_LIMIT = Gauge(
    "reposync_github_rate_limit",
    "GitHub's x-ratelimit-limit on the latest response, by account and resource.",
    ["account", "resource"],
    multiprocess_mode="mostrecent",
)
WRITE_BUDGET_USED = Gauge(
    "reposync_write_budget_used",
    "Content-creating writes counted in the sliding window (seconds) at the latest "
    "reservation, by account.",
    ["account", "window"],
    multiprocess_mode="mostrecent",
)
WRITE_BUDGET_LIMIT = Gauge(
    "reposync_write_budget_limit",
    "The write budget's limit of the window (seconds), by account.",
    ["account", "window"],
    multiprocess_mode="mostrecent",
)
WRITE_BUDGET_RESERVATIONS = Counter(
    "reposync_write_budget_reservations",
    "Write budget reservations, by account and outcome (granted, full).",
    ["account", "outcome"],
)
WEBHOOK_DELIVERIES = Counter(
    "reposync_webhook_deliveries",
    "Webhook deliveries, by direction (inbound, outbound) and status.",
    ["direction", "status"],
)

# -- recording -----------------------------------------------------------------------


def record_run_finished(status: str, trigger: str) -> None:
    RUNS_FINISHED.labels(status=status, trigger=trigger).inc()


def observe_stage(stage: str, seconds: float, *, handed_on: bool) -> None:
    STAGE_DURATION.labels(stage=stage, outcome="next" if handed_on else "stopped").observe(seconds)


def record_items(counts: dict[tuple[str, str], int]) -> None:
    """``counts``: (object type, state) → items settled in one transaction."""
    for (object_type, state), count in counts.items():
        ITEMS_SETTLED.labels(object_type=object_type, state=state).inc(count)


def record_lease_reclaim(stage: str) -> None:
    LEASE_RECLAIMS.labels(stage=stage).inc()


def record_redispatch(reason: str) -> None:
    REDISPATCHES.labels(reason=reason).inc()


def record_github_rate_limit(account: str, resource: str, remaining: int, limit: int) -> None:
    GITHUB_RATE_LIMIT_REMAINING.labels(account=account, resource=resource).set(remaining)
    GITHUB_RATE_LIMIT.labels(account=account, resource=resource).set(limit)


def record_write_budget(account: str, used: dict[int, tuple[int, int]], *, granted: bool) -> None:
    """``used``: window seconds → (writes counted, limit) at this reservation."""
    for window, (count, limit) in used.items():
        WRITE_BUDGET_USED.labels(account=account, window=str(window)).set(count)
        WRITE_BUDGET_LIMIT.labels(account=account, window=str(window)).set(limit)
    WRITE_BUDGET_RESERVATIONS.labels(
        account=account, outcome="granted" if granted else "full"
    ).inc()


def record_webhook(direction: str, status: str) -> None:
    """The hook point for webhook deliveries (see the module's docstring)."""
    WEBHOOK_DELIVERIES.labels(direction=direction, status=status).inc()


# -- processes -----------------------------------------------------------------------


def multiprocess_dir() -> Path | None:
    """This process's multi-process directory, or None when it counts in memory."""
    path = os.environ.get(MULTIPROC_ENV)
    return Path(path) if path else None


def setup_multiprocess(metrics_dir: Path, role: str) -> Path:
    """Count in files under ``metrics_dir`` from now on, for this process and the children
    it forks; returns this process's directory (emptied). Call it in the main process
    before it forks (gunicorn's arbiter, Celery's main process)."""
    host = socket.gethostname()
    metrics_dir.mkdir(parents=True, exist_ok=True)
    prefix = f"{role}-{host}-"
    for old in metrics_dir.glob(prefix + "*"):
        pid = old.name[len(prefix) :]
        if old.is_dir() and pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            shutil.rmtree(old, ignore_errors=True)
    own = metrics_dir / f"{prefix}{os.getpid()}"
    own.mkdir()
    os.environ[MULTIPROC_ENV] = str(own)
    # prometheus_client chooses its value storage when it is first imported, by this
    # variable; an entry point may have imported it (through the service) before it
    # knew its settings. Values created from now on live in files.
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    return own


def process_dead(pid: int) -> None:
    """A child (gunicorn worker, Celery pool process) ended: drop its live gauges."""
    path = multiprocess_dir()
    if path is not None and path.is_dir():
        mark_process_dead(pid, str(path))  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def collect_dirs(metrics_dir: Path) -> list[Path]:
    """The process directories ``/metrics`` sums: every one under ``metrics_dir``."""
    with contextlib.suppress(FileNotFoundError):
        return sorted(path for path in metrics_dir.iterdir() if path.is_dir())
    return []
