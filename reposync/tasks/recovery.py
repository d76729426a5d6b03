"""The periodic tick and the resume task: Runs whose worker died are picked up again."""

from __future__ import annotations

from typing import Any

from celery import Task

from reposync.service.scheduling import ticks
from reposync.tasks.app import app
from reposync.tasks.base import RESUME_TASK, context, run_stage
from reposync.tasks.settings import TICK_TASK


@app.task(name=RESUME_TASK, bind=True)
def resume(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    """Continue a Run at whatever stage it persisted (claims only an expired lease)."""
    run_stage(self, None, run_id, None)


@app.task(name=TICK_TASK)
def tick() -> None:
    """The periodic tick (``service/scheduling/ticks.py``): schedules, recovery, purges."""
    ticks.tick(context())
