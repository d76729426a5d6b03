"""Where a deferred Run waits says why: which rate limit, or which error's retry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from reposync.models import Run, utcnow
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.events import emit
from reposync.service.runs import create_run
from reposync.service.scheduling.waits import waiting
from tests.gitrepo import generate


@pytest.fixture
def deferred_runs(ctx: ServiceContext, tmp_path) -> list[Run]:
    """Three Runs of three Bindings, each queued until an hour from now."""
    runs = []
    for name in ("a", "b", "c"):
        source = generate(tmp_path / f"{name}.git", commits=1, branches=0, tags=0)
        binding = bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / name}-dst.git"))
        runs.append(create_run(ctx, binding.id))
    later = utcnow() + timedelta(hours=1)
    with ctx.db.transaction() as session:
        session.execute(update(Run).where(Run.id.in_([r.id for r in runs])).values(retry_at=later))
        found = [session.get(Run, r.id) for r in runs]
        for run in found:
            session.expunge(run)
    return [run for run in found if run is not None]


def test_a_deferred_run_says_which_limit_or_which_errors_retry(ctx, deferred_runs):
    """The latest ``deferred`` or ``retry_scheduled`` event names the cause. Before, every
    deferred Run read "a rate limit, or a retry's backoff", whichever it was; a Run with
    neither event (deferred some other way) still reads so."""
    limited, retried, unexplained = deferred_runs
    with ctx.db.transaction() as session:
        emit(
            session,
            retried.id,
            "retry_scheduled",
            "applying",
            counts={"error_code": "git_transport_failed"},
            message="git_transport_failed: git push to https://forge.example/a.git failed: "
            "early EOF; attempt 1 of 5, retries at later",
        )
        emit(
            session,
            limited.id,
            "retry_scheduled",
            "applying",
            counts={"error_code": "provider_unavailable"},
            message="an earlier retry",
        )
        emit(
            session,
            limited.id,
            "deferred",
            "applying",
            counts={"error_code": "git_rate_limited"},
            message="git push to https://forge.example/b.git: the Git host's rate limit "
            "(HTTP 429): error: RPC failed; HTTP 429; resumes at later",
        )

    said = waiting(ctx, deferred_runs)

    assert said[limited.id].startswith("deferred until ")
    assert (
        "by a rate limit (git_rate_limited): git push to https://forge.example/b.git"
        in (said[limited.id])
    )
    assert ", a retry's backoff: git_transport_failed: git push to " in said[retried.id]
    assert said[unexplained.id].endswith("(a rate limit, or a retry's backoff); it resumes then")
