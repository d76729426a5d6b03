"""Publishing a step when the broker is down: the committed Run is left to the tick."""

from __future__ import annotations

import logging

from celery import Celery

from reposync.lifecycle import Stage
from reposync.service.context import Step
from reposync.tasks.base import CeleryDispatcher
from tests.servers import free_port


def unreachable_app() -> Celery:
    app = Celery("unreachable", set_as_current=False)
    app.conf.update(
        broker_url=f"redis://127.0.0.1:{free_port()}/0",
        task_publish_retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0},
        broker_connection_timeout=0.5,
    )
    return app


def test_an_unreachable_broker_is_logged_not_raised(caplog):
    dispatcher = CeleryDispatcher(unreachable_app())
    with caplog.at_level(logging.WARNING, logger="reposync.tasks.base"):
        dispatcher.dispatch(Step(41, Stage.CHECKING_ACCESS, None))
        dispatcher.dispatch_handoff(7, 42)
        dispatcher.dispatch_delivery(43, delay=2.0)
    messages = [record.getMessage() for record in caplog.records]
    assert any("run 41 is saved but the broker is unreachable" in m for m in messages)
    assert any("run 42 is saved but the broker is unreachable" in m for m in messages)
    assert any("webhook delivery 43 is saved but the broker is unreachable" in m for m in messages)
