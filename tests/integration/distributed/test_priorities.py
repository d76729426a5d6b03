"""Message priorities on Redis: what a freed worker slot takes first (issue 26).

No worker runs here: the messages are published as in production and taken from the
broker the way a worker's channel takes them (kombu asks the lists of each priority in
order), so the order and the ``priority`` property are what Celery would act on.
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from reposync.config import Settings
from reposync.lifecycle import Stage
from reposync.service.context import Step
from reposync.tasks.base import CeleryDispatcher, task_name
from reposync.tasks.settings import (
    BACKGROUND_PRIORITY,
    INTERACTIVE_PRIORITY,
    QUEUE,
    TICK_PRIORITY,
    TICK_TASK,
    celery_settings,
)


def app_for(broker_url: str, tmp_path) -> Celery:
    app = Celery("priorities", set_as_current=False)
    app.conf.update(celery_settings(Settings(data_dir=tmp_path, broker_url=broker_url)))
    return app


def taken_in_order(app: Celery) -> list[tuple[str, list[object], int | None]]:
    """Every message of the queue as a worker's channel hands them out, one by one."""
    taken = []
    with app.connection() as connection:
        queue = Queue(QUEUE).bind(connection.default_channel)
        while (message := queue.get(no_ack=True)) is not None:
            args = message.decode()[0] if isinstance(message.decode(), list) else None
            taken.append((message.headers["task"], args, message.properties.get("priority")))
    return taken


def test_the_tick_and_a_manual_run_go_before_a_scheduled_pass(broker_url, tmp_path):
    """Scheduled Runs' steps sent first still wait behind a manual Run's step and the
    tick beat sends, each carrying its priority in the message."""
    app = app_for(broker_url, tmp_path)
    dispatcher = CeleryDispatcher(app)
    for run_id in (1, 2, 3):
        dispatcher.dispatch(Step(run_id, Stage.APPLYING, 5, background=True))
    dispatcher.dispatch(Step(9, Stage.CHECKING_ACCESS, None))
    tick = app.conf.beat_schedule["reposync-tick"]
    app.send_task(tick["task"], **tick["options"])

    taken = taken_in_order(app)

    assert [(name, priority) for name, _, priority in taken] == [
        (TICK_TASK, TICK_PRIORITY),
        (task_name(Stage.CHECKING_ACCESS), INTERACTIVE_PRIORITY),
        *[(task_name(Stage.APPLYING), BACKGROUND_PRIORITY)] * 3,
    ]
    assert [args[0] for _, args, _ in taken[2:]] == [1, 2, 3]  # FIFO within a priority
