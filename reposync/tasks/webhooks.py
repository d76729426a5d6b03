"""The webhook delivery task: one attempt of one outbox row per message.

Thin like every task: the row says what to send, the service claims, sends and records
(``service/webhooks/deliveries.py``). A duplicate message, or one for a row another worker holds
or already finished, finds nothing to claim and ends.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from reposync.service.webhooks.deliveries import deliver
from reposync.tasks.app import app
from reposync.tasks.base import DELIVER_TASK, context, owner_for


@app.task(name=DELIVER_TASK, bind=True)
def deliver_webhook(self: Task[Any, Any], delivery_id: int) -> None:
    deliver(context(), delivery_id, owner=owner_for(self))
