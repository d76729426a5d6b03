"""The handoff task: a handoff's steps run in one worker, one after the other."""

from __future__ import annotations

from reposync.service.handoff import handoff
from reposync.tasks.app import app
from reposync.tasks.base import HANDOFF_TASK, context


@app.task(name=HANDOFF_TASK)
def run_handoff(binding_id: int, run_id: int) -> None:
    handoff(context(), binding_id, forward_run_id=run_id)
