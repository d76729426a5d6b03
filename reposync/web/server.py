"""``reposync api``: the API under gunicorn (the distributed mode)."""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from reposync.config import Settings
from reposync.web.app import create_app


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings, bind: str) -> None:
        self._settings = settings
        self._bind = bind
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", self._bind)
        self.cfg.set("workers", 2)
        # Threads, so that a few Server-Sent Event streams (up to 25 s each) do not
        # occupy every worker.
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", 8)
        self.cfg.set("accesslog", "-")

    def load(self) -> Any:
        return create_app(self._settings)


def serve(settings: Settings, bind: str | None = None) -> int:
    _Gunicorn(settings, bind or settings.api_bind).run()
    return 0
