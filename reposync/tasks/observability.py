"""Metrics and logs in Celery's processes (connected when ``reposync.tasks.app`` loads).

* ``worker_init`` (the main process, before it forks its pool): the worker counts into
  files under the metrics directory (``reposync.metrics.setup_multiprocess``), which the
  API's ``/metrics`` sums; ``worker_process_shutdown`` (a pool process ending) drops that
  process's live values.
* ``after_setup_logger`` / ``after_setup_task_logger``: with ``REPOSYNC_LOG_FORMAT=json``
  Celery's handlers write JSON lines (``reposync.logs``); text keeps Celery's format.
* ``task_prerun`` / ``task_postrun``: the task id is in the log context of everything the
  task logs (``execute_step`` adds the Run's fields).
"""

from __future__ import annotations

import logging
import os
from contextvars import Token
from typing import Any

from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_shutdown,
)

from reposync import logs, metrics
from reposync.config import Settings

_tokens: dict[str, Token[dict[str, Any]]] = {}


@worker_init.connect
def _count_in_files(**_: Any) -> None:
    if metrics.multiprocess_dir() is None:
        metrics.setup_multiprocess(Settings.from_env().effective_metrics_dir, "worker")


@worker_process_shutdown.connect
def _pool_process_ends(**_: Any) -> None:
    metrics.process_dead(os.getpid())


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_format(logger: logging.Logger, **_: Any) -> None:
    logs.reformat(logger, Settings.from_env().log_format)


@task_prerun.connect
def _bind_task(task_id: str, **_: Any) -> None:
    _tokens[task_id] = logs.bind(task_id=task_id)


@task_postrun.connect
def _unbind_task(task_id: str, **_: Any) -> None:
    token = _tokens.pop(task_id, None)
    if token is not None:
        logs.unbind(token)
