"""The Celery application: ``celery -A reposync.tasks.app worker``."""

from __future__ import annotations

from collections.abc import Sequence

from celery import Celery

from reposync.config import Settings

# Metrics and JSON logs in the worker's processes (issue 15): signal handlers only.
from reposync.tasks import observability  # noqa: F401

TASK_MODULES = [
    "reposync.tasks.access",
    "reposync.tasks.inventory",
    "reposync.tasks.planning",
    "reposync.tasks.apply",
    "reposync.tasks.verify",
    "reposync.tasks.finalize",
    "reposync.tasks.recovery",
    "reposync.tasks.handoff",
    "reposync.tasks.webhooks",
    "reposync.tasks.intake",
    "reposync.tasks.owners",
]

app = Celery("reposync", include=TASK_MODULES)
app.config_from_object("celeryconfig")

#: What ``reposync worker`` starts with; options given after it are appended, so a
#: ``--loglevel`` of the caller wins (Celery takes the last value of an option).
WORKER_DEFAULTS = ("--loglevel=INFO", "-E", "--without-mingle", "--without-gossip")


def run_worker(settings: Settings, celery_args: Sequence[str] = ()) -> int:
    """``celery worker`` with reposync's defaults, then ``celery_args`` (``--concurrency``,
    ``--queues``, ``--hostname``, ...: every option of Celery's worker)."""
    app.worker_main(["worker", *WORKER_DEFAULTS, *celery_args])
    return 0


def run_beat(settings: Settings, celery_args: Sequence[str] = ()) -> int:
    """``celery beat`` keeping its schedule in the data directory, then ``celery_args``."""
    schedule = settings.data_dir / "celerybeat-schedule"
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app.start(["beat", "--loglevel=INFO", f"--schedule={schedule}", *celery_args])
    return 0
