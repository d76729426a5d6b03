"""Celery configuration derived from ``Settings``: at-least-once delivery, made safe.

Each value has its reason in ../shared/notes/celery-reliability.md (§1.2); the short
version is in the comments. The fences in the database make duplicates harmless; these
settings make sure nothing is lost and duplicates stay rare.
"""

from __future__ import annotations

from typing import Any

from reposync.config import Settings
from reposync.tasks.broker import transport_for

QUEUE = "reposync"
TICK_TASK = "reposync.recovery.tick"

#: Message priorities on the one queue. kombu's Redis transport keeps a list per step of
#: ``priority_steps`` (0, 3, 6, 9) and a worker's BRPOP asks the lower number first, so
#: with ``worker_prefetch_multiplier`` 1 a freed pool slot takes the most urgent message
#: waiting (one queue, so every worker, with or without ``-Q reposync``, serves all).
#: The tick (schedules and recovery) and messages sent without a priority (deliveries,
#: handoffs, owed webhook Runs, re-dispatched Runs) come first, then the steps of a
#: manual or webhook Run, then those of scheduled Runs: a pass of a thousand Bindings
#: neither delays the tick past its expiry nor an operator's Run behind it.
TICK_PRIORITY = 0
INTERACTIVE_PRIORITY = 3
BACKGROUND_PRIORITY = 6


def celery_settings(settings: Settings) -> dict[str, Any]:
    visibility = settings.visibility_timeout
    transport = {
        # > hard time limit, so a running task is never restored to another worker.
        "visibility_timeout": visibility,
        "unacked_restore_interval": settings.unacked_restore_interval,
        "unacked_restore_throttle": settings.unacked_restore_throttle,
    }
    return {
        "broker_url": settings.effective_broker_url,
        # kombu's Redis transport with the workaround that keeps a busy worker alive
        # through a broker restart (reposync.tasks.broker says why).
        "broker_transport": transport_for(settings.effective_broker_url),
        "broker_transport_options": transport,
        "result_backend_transport_options": {"visibility_timeout": visibility},
        "visibility_timeout": visibility,
        "broker_connection_retry_on_startup": True,
        "broker_pool_acquire_timeout": 30.0,
        # State lives in the database; a result backend would be a second truth.
        "task_ignore_result": True,
        "result_backend": None,
        # Redeliver when a worker dies mid-task (acks_late), including a SIGKILLed or
        # OOM-killed child (reject_on_worker_lost); attempts are capped in the database.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure": True,
        "task_acks_on_timeout": True,
        # With acks_late, reserve only the task being run.
        "worker_prefetch_multiplier": 1,
        # A task that cannot ack after a connection loss would run twice; cancel it.
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        # soft < hard < visibility timeout (Settings checks the order).
        "task_soft_time_limit": settings.task_soft_time_limit,
        "task_time_limit": settings.task_time_limit,
        # Restore unacked messages on shutdown instead of waiting out the timeout.
        "worker_soft_shutdown_timeout": 30.0,
        "task_default_queue": QUEUE,
        "task_serializer": "json",
        "accept_content": ["json"],
        "timezone": "UTC",
        "enable_utc": True,
        # Flower needs events.
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "beat_schedule": {
            "reposync-tick": {
                "task": TICK_TASK,
                "schedule": settings.tick_interval,
                # A backlog of ticks is worthless: drop the ones that waited too long
                # (first in line, a tick waits for a free pool slot only).
                "options": {"expires": settings.tick_interval, "priority": TICK_PRIORITY},
            }
        },
    }
