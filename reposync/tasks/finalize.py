"""Stage task ``finalizing``."""

from __future__ import annotations

from typing import Any

from celery import Task

from reposync.lifecycle import Stage
from reposync.tasks.app import app
from reposync.tasks.base import run_stage, task_name


@app.task(name=task_name(Stage.FINALIZING), bind=True)
def finalizing(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    run_stage(self, Stage.FINALIZING, run_id, generation)
