"""A forge's rate limit met by a real worker: the Run is deferred, beat's tick hands it
to a worker again once the limit has passed, and it completes with nothing written twice.

In-process tests wait out a deferral in ``reposync sync`` itself; here nobody waits. The
Run is queued with its ``retry_at``, its lease given back, and only the recovery tick
(``REPOSYNC_TICK_INTERVAL``: 1 s in the workers' environment) can bring it back. Both
limits reposync meets are struck, each twice: the API's (429 with ``Retry-After``) on
a label's create, and the Git host's (429 with none: ``REPOSYNC_GIT_RATE_LIMIT_WAIT``)
on the push.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.runs import enqueue_run
from reposync.tasks.base import CeleryDispatcher
from tests.github_env import github_fields, github_worker_env
from tests.gitrepo import generate, refs
from tests.integration.conftest import run_events, wait_terminal
from tests.integration.forges.fault_matrix import fault
from tests.integration.forges.test_forge_sync import populate
from tests.workers import start_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

REPO = "acme/widgets"
#: Where each limit strikes: (host, method, path), and the code its deferral carries.
LIMITS = {
    "api": (("api", "POST", r"/repos/acme/widgets/labels$"), "rate_limited"),
    "git": (("git", "POST", r"/widgets\.git/git-receive-pack$"), "git_rate_limited"),
}


@pytest.mark.parametrize("limit", list(LIMITS))
def test_a_deferred_run_is_resumed_by_the_tick_and_completes_once(
    tmp_path: Path, github_fake, pg_ctx, env, sender, workers, limit
):
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    token = fake.add_token("acme")
    env.update(github_worker_env(fake, token), REPOSYNC_GIT_RATE_LIMIT_WAIT="1")
    settings = pg_ctx.settings.with_overrides(**github_fields(fake, token))
    ctx = ServiceContext(settings=settings, db=pg_ctx.db, dispatcher=CeleryDispatcher(sender))
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    populate(source)
    binding = bind(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    (host, method, path), code = LIMITS[limit]
    rule = fault(fake, host, method, path, 429, 2)
    workers.append(start_worker(env, tmp_path, "w1", beat=True))

    finished = wait_terminal(ctx, enqueue_run(ctx, binding.id).id, timeout=120)

    assert finished.status == "completed", finished.report
    assert rule.hits == 2
    events = run_events(ctx, finished.id)
    deferred = [counts for kind, counts in events if kind == "deferred"]
    assert [counts.get("error_code") for counts in deferred] == [code, code]
    assert "retry_scheduled" not in {kind for kind, _ in events}  # a limit is no retry
    # Every source ref is there (GitHub also holds the release's tag and a pull
    # request's shadow branch, which the source derives and does not store).
    assert refs(source).items() <= refs(fake.state.git_dir(REPO)).items()
    labels = Counter(label.name for label in fake.state.labels(REPO))
    assert labels == {"bug": 1, "needs design 🎨": 1}
    created = [r for r in fake.requests_log.matching("POST", path, host=host) if r.status < 300]
    assert len(created) == (2 if limit == "api" else 1)  # two labels; one push of the refs
