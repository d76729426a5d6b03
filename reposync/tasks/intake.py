"""Webhooks in: the due task of the Run a webhook owes, dispatched with the debounce window
as its countdown (``service/webhooks/event_runs.py``)."""

from __future__ import annotations

from reposync.service.webhooks.intake import start_due_run
from reposync.tasks.app import app
from reposync.tasks.base import EVENT_RUN_TASK, context


@app.task(name=EVENT_RUN_TASK)
def start_event_run(binding_id: int) -> None:
    """Create the Run a webhook owes the Binding, if it is due (else nothing, or later)."""
    start_due_run(context(), binding_id)
