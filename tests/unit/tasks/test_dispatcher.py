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


def test_a_run_no_worker_took_says_a_worker_is_needed_and_the_broker_is_away():
    """Issue 25: a queued Run's ``waiting`` in the distributed mode: just sent, or no
    worker took it (naming the commands), and the broker's address when it is away."""
    app = unreachable_app()
    app.conf.broker_url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    dispatcher = CeleryDispatcher(app)
    assert dispatcher.describe_wait(1, 2.0) == "sent to the Celery workers"
    text = dispatcher.describe_wait(1, 75.0)
    assert text is not None
    assert text.startswith("no worker has taken it for 75s")
    assert "`reposync worker` and a `reposync beat` must run" in text
    assert "redis://127.0.0.1:" in text
    assert "is unreachable" in text
    assert "hunter2" not in text
