"""A signal during an in-process sync ends it, resumable, even when Python drops the
exception its handler raised (``reposync.signals``)."""

from __future__ import annotations

import signal

import pytest

from reposync.lifecycle import RunStatus
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import Progress, sync
from reposync.signals import terminations_interrupt
from tests.gitrepo import generate, init_bare, refs
from tests.interrupts import DROPPED, lose, python_default_signals


@DROPPED
@pytest.mark.usefixtures(python_default_signals.__name__)
def test_ctrl_c_dropped_in_a_finalizer_still_ends_the_sync_resumable(ctx, tmp_path):
    """Ctrl-C arrives while the garbage collector runs a finalizer in the middle of the
    Run: Python drops its ``KeyboardInterrupt``. The next lease check raises it again,
    the lease is given up, and the next sync resumes the Run and completes it. Before,
    the sync ran to its end as if nobody had asked it to stop."""
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = init_bare(tmp_path / "dst.git")
    request = SyncRequest(f"local:{source}", f"local:{target}")
    stages: list[str] = []

    def progress(step: Progress) -> None:
        stages.append(step.stage)
        if step.stage == "applying" and stages.count("applying") == 1:
            lose(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt), terminations_interrupt():
        sync(ctx, request, progress)

    assert "applying" in stages
    assert refs(target) != refs(source), "the interrupted Run went on to write everything"
    run = sync(ctx, request)  # resumes the interrupted Run, not a new one
    assert (run.id, run.status) == (1, RunStatus.COMPLETED.value)
    assert refs(target) == refs(source)
