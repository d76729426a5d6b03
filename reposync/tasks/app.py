"""The Celery application: ``celery -A reposync.tasks.app worker``."""

from __future__ import annotations

from celery import Celery

from reposync.config import Settings

TASK_MODULES = [
    "reposync.tasks.access",
    "reposync.tasks.inventory",
    "reposync.tasks.planning",
    "reposync.tasks.apply",
    "reposync.tasks.verify",
    "reposync.tasks.finalize",
    "reposync.tasks.recovery",
    "reposync.tasks.handoff",
]

app = Celery("reposync", include=TASK_MODULES)
app.config_from_object("celeryconfig")


def run_worker(settings: Settings) -> int:
    argv = ["worker", "--loglevel=INFO", "-E", "--without-mingle", "--without-gossip"]
    app.worker_main(argv)
    return 0


def run_beat(settings: Settings) -> int:
    schedule = settings.data_dir / "celerybeat-schedule"
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app.start(["beat", "--loglevel=INFO", f"--schedule={schedule}"])
    return 0
