"""Stage tasks ``inventory_source`` and ``inventory_target``."""

from __future__ import annotations

from typing import Any

from celery import Task

from reposync.lifecycle import Stage
from reposync.tasks.app import app
from reposync.tasks.base import run_stage, task_name


@app.task(name=task_name(Stage.INVENTORY_SOURCE), bind=True)
def inventory_source(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    run_stage(self, Stage.INVENTORY_SOURCE, run_id, generation)


@app.task(name=task_name(Stage.INVENTORY_TARGET), bind=True)
def inventory_target(self: Task[Any, Any], run_id: int, generation: int | None = None) -> None:
    run_stage(self, Stage.INVENTORY_TARGET, run_id, generation)
