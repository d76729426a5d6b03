"""Stage task ``planning``."""

from __future__ import annotations

from typing import Any

from celery import Task

from reposync.lifecycle import Stage
from reposync.tasks.app import app
from reposync.tasks.base import run_stage, task_name


@app.task(name=task_name(Stage.PLANNING), bind=True)
def planning(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    run_stage(self, Stage.PLANNING, run_id, generation)
