"""Every way a forge's Git host may fail one of a Run's git requests, against real git.

The Git host of either test server (GitHub's, Forgejo's) answers one of the requests a
bootstrap sends with an HTTP error, once or from then on: the inventory's ``ls-remote``,
the push's ref advertisement, the push itself, or the read-back's ``ls-remote`` after
it. For each, the
failed Run names its cause with the code its kind calls for, and nothing is lost or
written twice: once the host is well, a recovery (where writes were left unknown) and
one more Run converge the repository, and a Run after that has nothing to push.

The kinds of answer and what they must give:

* 401 and 403 (the credentials refused): ``git_credentials_refused`` on the first
  refusal, never retried with backoff (a personal token cannot be renewed).
* 413 on the push (a proxy's size limit): each ref fails ``push_too_large``.
* 429 (the host's rate limit, or a proxy's): the Run waits, as for an API's limit
  (a ``deferred`` event saying ``git_rate_limited``, never the stage's retries with
  backoff, no ref left unknown); once, it completes after the wait; from then on it
  waits again each time, never failing. Before, it was a transport failure: retried
  with backoff, and failed once the stage's attempts were spent.
* a server error, 404 (the Git host lagging behind the API, which still shows the
  repository), or 413 elsewhere than the push, once: healed within the Run (halves, or
  a stage's retry).
* one from then on: ``git_transport_failed`` once the stage's attempts are spent.
* a push performed with its answer lost: only the invariants.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.gitrepo import generate, refs
from tests.integration.conftest import event_messages, run_events
from tests.integration.forges.fault_matrix import converge
from tests.integration.forges.test_github_sync import ADVERTISEMENT

RECEIVE_PACK = r"/widgets\.git/git-receive-pack$"
#: Where a fault strikes: (method, path, matching requests let by first).
WHERE = {
    "listing": ("GET", ADVERTISEMENT, 0),
    "push advertisement": ("GET", ADVERTISEMENT, 1),
    "push": ("POST", RECEIVE_PACK, 0),
    "read-back": ("GET", ADVERTISEMENT, 2),
}
#: Each HTTP error at each place; a write performed with its answer lost ("lost": the
#: connection closed) only at the push, the one write.
CASES = [
    *((answer, where) for answer in (401, 403, 404, 413, 429, 500, 503) for where in WHERE),
    ("lost", "push"),
]


@pytest.mark.parametrize("persistent", [False, True], ids=["once", "from then on"])
@pytest.mark.parametrize(("answer", "where"), CASES)
def test_a_git_request_the_forge_fails_is_named_and_loses_nothing(
    tmp_path, host, answer, where, persistent
):
    ctx, fake = host.ctx, host.fake
    method, path, after = WHERE[where]
    if answer == "lost":
        rule = fake.faults.commit_then_drop(
            method, path, drop="close", host="git", count=None if persistent else 1
        )
    else:
        rule = fake.faults.error(
            method,
            path,
            status=int(answer),
            host="git",
            after=after,
            count=None if persistent else 1,
        )
    ctx.settings = replace(
        ctx.settings, retry_backoff=0.01, max_stage_attempts=3, git_rate_limit_wait=0.2
    )
    if answer == 429 and persistent:  # ``sync`` waits out no limit: it says when to resume
        ctx.settings = replace(ctx.settings, embedded_max_wait=0.1)
    source = generate(tmp_path / "src.git", commits=3, branches=2, tags=1)
    request = SyncRequest(f"local:{source}", host.target)

    run = sync(ctx, request)

    assert rule.hits >= 1, "the fault never struck: its place is not where the Run asks"
    if answer == 429:
        run = _waited_for_the_limit(ctx, fake, run, request, persistent)
    codes = [p["error_code"] for p in run.report["problems"]]
    if answer in (401, 403):
        assert run.status == "failed"
        assert codes[0] == "git_credentials_refused", codes
        assert run.report["problems"][0]["problem_type"] == "authorization_required"
        # The refused request and, from then on, the read-back's: never retried.
        assert rule.hits <= (2 if persistent else 1)
    elif answer == 413 and where == "push":
        assert run.status != "completed"
        assert codes == ["push_too_large"]
    elif answer in (404, 413, 429, 500, 503) and not persistent:
        assert run.status == "completed", codes
    elif answer in (404, 413, 500, 503):
        assert run.status != "completed"
        assert codes[0] == "git_transport_failed", codes
    if run.status != "completed":
        assert codes, "a Run that did not complete says why"

    converge(ctx, fake, run, request)
    assert host.refs() == refs(source)
    pushes = len(host.pushes())
    assert sync(ctx, request).status == "completed"
    assert len(host.pushes()) == pushes  # nothing left to push


def _waited_for_the_limit(
    ctx: Any, fake: Any, run: Any, request: SyncRequest, persistent: bool
) -> Any:
    """A 429 deferred the Run (``git_rate_limited``), and no stage retry was spent on it.
    From then on: the Run waits again at each resume and never fails; once the limit
    lifts, it resumes and completes. Returns the Run as it ended."""
    events = run_events(ctx, run.id)
    assert "retry_scheduled" not in {kind for kind, _ in events}
    deferred = event_messages(ctx, run.id, "deferred")
    assert deferred, "a 429 defers the Run"
    assert all("HTTP 429" in message for message in deferred), deferred
    assert {str(c.get("error_code")) for kind, c in events if kind == "deferred"} == {
        "git_rate_limited"
    }
    if not persistent:
        return run
    for _ in range(3):  # past max_stage_attempts: a failure would have ended it by now
        assert (run.status, run.retry_at is not None) == ("queued", True), run.report
        time.sleep(0.25)  # past retry_at: the next ``sync`` resumes the Run
        again = sync(ctx, request)
        assert again.id == run.id
        run = again
    assert len(event_messages(ctx, run.id, "deferred")) >= 4  # more: a resume that waited
    fake.faults.clear()
    ctx.settings = replace(ctx.settings, embedded_max_wait=900.0)
    finished = sync(ctx, request)  # waits out the last deferral, then resumes the Run
    assert (finished.id, finished.status) == (run.id, "completed"), finished.report
    return finished
