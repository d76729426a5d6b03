"""A push's progress, where people look: the Run's row, its events, this process's line.

git reports a push as it goes (``reposync.git.progress``): a few updates a second. They
reach

* the command line that runs the push in this process (``ServiceContext.on_transfer``),
  every update: a terminal's bar moves as git's does;
* the Run's ``transfer`` column, at most once per ``STORE_EVERY`` seconds: what
  ``GET /runs/{id}/progress``, ``reposync runs show`` and the page read;
* a ``git_progress`` event at most once per ``EVENT_EVERY`` seconds: the event stream
  and ``reposync runs events --follow`` move while a push of minutes runs.

Each write is fenced like every other write of the Run: an execution that lost its
lease stops at its next update (and its git with it: ``process.run_git``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from sqlalchemy import update

from reposync.errors import LeaseLost
from reposync.git.progress import TransferProgress
from reposync.models import Run
from reposync.service.pipeline.execution import StageExecution

log = logging.getLogger(__name__)

#: Seconds between two writes of the Run's ``transfer`` (readers poll about once a second).
STORE_EVERY = 1.0
#: Seconds between two ``git_progress`` events. Events follow git's updates, which came at
#: most 2.4 s apart in ``bench/git_progress.py``: a reader of the events sees one at least
#: every 5 s.
EVENT_EVERY = 3.0


class PushProgress:
    """Called with each update of one batch's pushes; ``close`` once they ended."""

    def __init__(self, ex: StageExecution, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._ex = ex
        self._clock = clock
        self._stored_at: float | None = None
        self._evented_at: float | None = None
        self._latest: TransferProgress | None = None
        self._stored: TransferProgress | None = None

    def __call__(self, progress: TransferProgress) -> None:
        self._latest = progress
        listener = self._ex.ctx.on_transfer
        if listener is not None:
            listener(self._ex.run_id, progress)
        now = self._clock()
        if self._stored_at is not None and now - self._stored_at < STORE_EVERY:
            return
        event = self._evented_at is None or now - self._evented_at >= EVENT_EVERY
        self._store(progress, event=event)
        self._stored_at = now
        if event:
            self._evented_at = now

    def _store(self, progress: TransferProgress | None, *, event: bool) -> None:
        with self._ex.fenced() as session:
            session.execute(
                update(Run)
                .where(Run.id == self._ex.run_id)
                .values(transfer=progress.to_dict() if progress is not None else None)
            )
            if event and progress is not None:
                counts = {
                    "objects_done": progress.objects_done,
                    "bytes_done": progress.bytes_done,
                }
                if progress.objects_total is not None:
                    counts["objects_total"] = progress.objects_total
                self._ex.event(session, "git_progress", progress.describe(), **counts)
        self._stored = progress

    def close(self) -> None:
        """The pushes ended (or failed): the Run no longer shows a transfer. Best effort:
        an execution that lost its lease leaves it to the next one (and ``finish``)."""
        if self._stored is None:
            return
        try:
            self._store(None, event=False)
        except LeaseLost:
            pass
        except Exception:  # the push's own outcome matters more than this clean-up
            log.exception("run %s: could not clear the transfer progress", self._ex.run_id)
