"""What every task shares: the per-process service context and the stage task body.

Tasks are thin: they carry ids (never ORM objects), call ``execute_step`` and dispatch
the step it returns. One engine per worker process, disposed after the fork.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import redis
from celery import Celery, Task
from celery.signals import worker_process_init
from kombu.exceptions import OperationalError as KombuOperationalError

from reposync.config import Settings
from reposync.lifecycle import Stage, Trigger
from reposync.models.db import Database
from reposync.service.context import ServiceContext, Step
from reposync.service.pipeline.runner import execute_step
from reposync.tasks.settings import BACKGROUND_PRIORITY, INTERACTIVE_PRIORITY

log = logging.getLogger(__name__)

RESUME_TASK = "reposync.run.resume"
HANDOFF_TASK = "reposync.handoff"
DELIVER_TASK = "reposync.webhooks.deliver"
EVENT_RUN_TASK = "reposync.webhook.event_run"
OWNER_PASS_TASK = "reposync.owner_binding.pass"

_context: ServiceContext | None = None

#: A queued Run is said to be waiting for a worker after this many seconds.
UNTAKEN_AFTER = 10.0
#: Seconds one answer about the broker is reused, and the most asking it may take.
BROKER_CHECK_TTL = 10.0
BROKER_CHECK_TIMEOUT = 0.5


def task_name(stage: Stage | None) -> str:
    return RESUME_TASK if stage is None else f"reposync.stage.{stage.value}"


class CeleryDispatcher:
    """Publishes steps as Celery messages (after the caller's commit)."""

    def __init__(self, app: Celery | None = None) -> None:
        self._app = app
        self._broker_checked: tuple[float, str | None] | None = None

    def dispatch(self, step: Step) -> None:
        priority = BACKGROUND_PRIORITY if step.background else INTERACTIVE_PRIORITY
        self._send(
            task_name(step.stage), step.run_id, [step.run_id, step.generation], priority=priority
        )

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        self._send(HANDOFF_TASK, run_id, [binding_id, run_id])

    def dispatch_delivery(self, delivery_id: int, delay: float = 0.0) -> None:
        self._send(
            DELIVER_TASK, delivery_id, [delivery_id], countdown=delay, what="webhook delivery"
        )

    def dispatch_event_run(self, binding_id: int, countdown: float) -> None:
        # A countdown far below the visibility timeout: the message is never redelivered
        # while it waits (../shared/notes/celery-reliability.md §1.3).
        self._send(
            EVENT_RUN_TASK,
            binding_id,
            [binding_id],
            countdown=countdown,
            what="the webhook Run owed to binding",
        )

    def dispatch_owner_pass(self, owner_binding_id: int, trigger: Trigger) -> None:
        self._send(
            OWNER_PASS_TASK,
            owner_binding_id,
            [owner_binding_id, trigger.value],
            what="a pass of owner binding",
        )

    def describe_wait(self, run_id: int, waited: float) -> str | None:
        """What a queued Run waits for here (``service/scheduling/waits.py``): a worker, and the
        broker when it does not answer."""
        if waited < UNTAKEN_AFTER:
            return "sent to the Celery workers"
        text = (
            f"no worker has taken it for {waited:.0f}s: in the distributed mode a "
            "`reposync worker` and a `reposync beat` must run"
        )
        away = self._broker_away()
        return f"{text} ({away})" if away else text

    def _broker_away(self) -> str | None:
        """Why the broker does not answer (None: it does, or this cannot tell), asked
        at most every ``BROKER_CHECK_TTL`` seconds: every listing of Runs may ask."""
        now = time.monotonic()
        if self._broker_checked is not None and now - self._broker_checked[0] < BROKER_CHECK_TTL:
            return self._broker_checked[1]
        url = str(self._celery().conf.broker_url or "")
        parts = urlsplit(url)
        away: str | None = None
        if parts.scheme in ("redis", "rediss"):
            where = f"{parts.scheme}://{parts.hostname}:{parts.port or 6379}"  # no password
            client = redis.Redis.from_url(
                url,
                socket_timeout=BROKER_CHECK_TIMEOUT,
                socket_connect_timeout=BROKER_CHECK_TIMEOUT,
            )
            try:
                client.ping()
            except redis.RedisError:
                away = f"the broker at {where} is unreachable"
            finally:
                client.close()
        self._broker_checked = (now, away)
        return away

    def _celery(self) -> Celery:
        if self._app is None:
            from reposync.tasks.app import app as default_app

            return default_app
        return self._app

    def _send(
        self,
        name: str,
        record_id: int,
        args: list[Any],
        *,
        countdown: float = 0.0,
        what: str = "run",
        priority: int | None = None,
    ) -> None:
        """Publish, or leave the record to the tick: it is committed already, and the
        tick re-dispatches a Run nobody claimed within ``dispatch_grace`` (a delivery
        overdue by as much; an owed webhook Run once due). Failing the caller here would
        report a Run that exists as not created."""
        app = self._celery()
        try:
            app.send_task(
                name,
                args=args,
                countdown=countdown if countdown > 0 else None,
                priority=priority,
            )
        except KombuOperationalError as exc:
            log.warning(
                "%s %s is saved but the broker is unreachable (%s); the tick dispatches "
                "it once the broker is back",
                what,
                record_id,
                exc,
            )


def context() -> ServiceContext:
    global _context
    if _context is None:
        settings = Settings.from_env()
        _context = ServiceContext(
            settings=settings,
            db=Database(settings.effective_database_url),
            dispatcher=CeleryDispatcher(),
        )
    return _context


@worker_process_init.connect
def _after_fork(**_: Any) -> None:
    # Never share pooled connections across a fork.
    if _context is not None:
        _context.db.engine.dispose(close=False)


def owner_for(task: Task[Any, Any]) -> str:
    request = task.request
    return f"{request.hostname or 'worker'}/{os.getpid()}/{request.id}"[:255]


def run_stage(
    task: Task[Any, Any], stage: Stage | None, run_id: int, generation: int | None
) -> None:
    """Execute the step, then the Run's next steps in this task while the chain's time
    budget (``step_chain_seconds``) lasts; only the step after it is sent as a message.

    Running the next step here is the hand-over a message would make (the claim takes
    the lease this execution held, by its generation), without the hop: a next step
    sent to the back of the queue waits behind every other Run's, and may land on a
    cold worker. A Run of small stages finishes in one task; a long one yields the
    pool slot every budget, so the tick and more urgent Runs get their turn. A
    scheduled Run's steps keep the background priority its first message had.
    """
    ctx = context()
    owner = owner_for(task)
    background = _delivered_priority(task) == BACKGROUND_PRIORITY
    deadline = time.monotonic() + ctx.settings.step_chain_seconds
    step: Step | None = Step(run_id, stage, generation, background)
    while step is not None:
        next_step = execute_step(ctx, step, owner=owner)
        if next_step is None:
            return
        step = replace(next_step, background=background)
        if time.monotonic() >= deadline:
            ctx.dispatcher.dispatch(step)
            return


def _delivered_priority(task: Task[Any, Any]) -> int | None:
    """The priority the task's message was sent with (None: unknown, or none)."""
    info = task.request.delivery_info or {}
    priority = info.get("priority")
    return priority if isinstance(priority, int) else None
