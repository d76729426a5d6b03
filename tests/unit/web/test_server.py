"""``reposync api``'s gunicorn: one worker process (one executor, one tick) when the API
runs its Runs itself, two when Celery does; the context it builds dispatches to match."""

from __future__ import annotations

import pytest

from reposync.config import Settings
from reposync.service.scheduling.executor import InProcessExecutor
from reposync.tasks.base import CeleryDispatcher
from reposync.web import server
from reposync.web.app import default_context


@pytest.mark.parametrize(
    ("overrides", "workers", "dispatcher"),
    [
        ({}, 1, InProcessExecutor),
        ({"broker_url": "redis://h:6379/0"}, 2, CeleryDispatcher),
        ({"executor": "celery"}, 2, CeleryDispatcher),
    ],
)
def test_the_mode_decides_the_workers_and_the_dispatcher(tmp_path, overrides, workers, dispatcher):
    """Issue 25: the embedded mode with no broker serves from one process executing in
    it; with a broker (or asked), two processes and Celery, as before."""
    settings = Settings(data_dir=tmp_path, **overrides)
    gunicorn = server._Gunicorn(settings, "127.0.0.1:0")
    assert gunicorn.cfg.workers == workers
    ctx = default_context(settings)
    try:
        assert isinstance(ctx.dispatcher, dispatcher)
    finally:
        ctx.db.dispose()
    hooks = (gunicorn.cfg.post_worker_init, gunicorn.cfg.worker_exit)
    assert (server._start_executor in hooks) is (workers == 1)
