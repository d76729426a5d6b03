"""The Celery configuration keeps the at-least-once promises the fences rely on."""

from __future__ import annotations

from reposync.config import Settings
from reposync.tasks.settings import celery_settings


def test_delivery_is_at_least_once_and_bounded():
    """acks_late + reject on worker loss + prefetch 1 + cancel on connection loss."""
    conf = celery_settings(Settings())
    assert conf["task_acks_late"] is True
    assert conf["task_reject_on_worker_lost"] is True
    assert conf["worker_prefetch_multiplier"] == 1
    assert conf["worker_cancel_long_running_tasks_on_connection_loss"] is True
    assert conf["task_ignore_result"] is True
    assert conf["result_backend"] is None


def test_time_limits_stay_below_the_visibility_timeout():
    """soft < hard < visibility timeout, and the same timeout on every transport option."""
    conf = celery_settings(
        Settings(task_soft_time_limit=50, task_time_limit=60, visibility_timeout=90)
    )
    assert conf["task_soft_time_limit"] < conf["task_time_limit"] < conf["visibility_timeout"]
    assert conf["broker_transport_options"]["visibility_timeout"] == 90
    assert conf["result_backend_transport_options"]["visibility_timeout"] == 90


def test_the_recovery_tick_drops_a_backlog():
    """A tick that waited longer than one interval expires instead of piling up."""
    conf = celery_settings(Settings(tick_interval=7))
    entry = conf["beat_schedule"]["reposync-tick"]
    assert entry["schedule"] == 7
    assert entry["options"]["expires"] == 7
