"""Stage task ``applying``."""

from __future__ import annotations

from typing import Any

from celery import Task

from reposync.lifecycle import Stage
from reposync.tasks.app import app
from reposync.tasks.base import run_stage, task_name


@app.task(name=task_name(Stage.APPLYING), bind=True)
def applying(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    run_stage(self, Stage.APPLYING, run_id, generation)
