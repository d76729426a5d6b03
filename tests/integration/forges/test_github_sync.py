"""Local forge <-> GitHub, end to end through the pipeline, against the GitHub test server.

Every request reposync sends and every response it gets is validated against GitHub's
published description (the recorder); the server validates its own responses too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.service.recovery import recover_run
from reposync.service.scheduling.waits import waiting
from reposync.sync.vocabulary import ObjectType
from tests.fakes.github import GitHubFake
from tests.github_env import embedded_world
from tests.gitrepo import commit_on, delete_refs, generate, refs, set_ref
from tests.integration.conftest import event_messages
from tests.integration.forges.test_forge_sync import WHEN, content_hashes, forge, items_of, populate

REPO = "acme/widgets"
SHADOW = "refs/heads/reposync/pr/2/head"
#: Types whose canonical content must be equal after a round trip through GitHub (a
#: review request too: GitHub's projection comment reads back as the review request).
KEPT = [t for t in ObjectType if t not in (ObjectType.GIT_REF, ObjectType.REACTION)]


@pytest.fixture
def world(tmp_path: Path, request: pytest.FixtureRequest):
    """The GitHub test server in the layout a test asks for (``indirect`` parameter):
    github.com's three hosts by default, or GitHub Enterprise Server's single host."""
    layout = getattr(request, "param", "github.com")
    if layout == "github.com":
        fake = request.getfixturevalue("github_fake")
        yield from _world(fake, tmp_path)
        return
    with GitHubFake(layout=layout) as fake:
        yield from _world(fake, tmp_path)
        fake.assert_clean(requests_too=True)


def _world(fake: GitHubFake, tmp_path: Path):  # type: ignore[no-untyped-def]
    fake.state.create_repo(REPO, private=True)
    with embedded_world(fake, tmp_path) as (ctx, recorder):
        yield ctx, recorder, fake


#: Runs a test against both layouts of the GitHub test server.
BOTH_LAYOUTS = pytest.mark.parametrize("world", ["github.com", "ghes"], indirect=True)


def test_local_to_github_converges_then_a_rerun_costs_nothing(tmp_path, world):
    """Every type reaches GitHub; the next Run writes nothing and only sees 304s."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    ids = populate(source)
    request = SyncRequest(f"local:{source}", f"github:{REPO}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    # The reaction is archived; + 3 refs and the open pull request's shadow branch (its
    # head "fix" is no branch; it has no commits over main, so GitHub gets a carrier).
    assert first.counters["created"] == len(ids) - 1 + 3 + 1
    gaps = first.report["data_gaps"]
    assert gaps["archive_only"] == {"reaction": 1}
    assert gaps["projected"]["review_request"] == 1
    assert gaps["attributed"]["issue"] == 2  # GitHub cannot set authors: headers
    github_refs = {name for name in _git_refs(fake) if name.startswith("refs/heads/")}
    assert github_refs == {n for n in refs(source) if n.startswith("refs/heads/")} | {SHADOW}
    issues = {i.number: i for i in fake.state.issues(REPO)}
    assert {1, 2, 3} <= set(issues)  # numbers kept

    before = len(fake.requests_log)
    second = sync(ctx, request)
    assert second.status == "completed"
    assert items_of(ctx, second.id) == []
    rest = [r for r in list(fake.requests_log)[before:] if r.host != "git"]
    assert rest, "the second Run still looks the repository up"
    # The repository's own metadata changed with the first Run's pushes (pushed_at), so
    # its first look-up is one fresh read; every other read is a free 304.
    fresh = [(r.method, r.path) for r in rest if not r.not_modified]
    assert fresh in ([], [("GET", f"/repos/{REPO}")]), fresh
    assert sum(r.counted_primary for r in rest) <= 1
    assert all(r.method == "GET" for r in rest)


def _git_refs(fake, repo: str = REPO) -> dict[str, str]:
    return refs(Path(fake.state.git_dir(repo)))


@BOTH_LAYOUTS
def test_github_to_local_then_round_trip_keeps_every_object(tmp_path, world):
    """local -> GitHub -> local: canonical states equal, except what the report counts."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    populate(source)
    assert sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}")).status == "completed"

    back = tmp_path / "back.git"
    returned = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{back}"))

    assert returned.status == "completed", returned.report["problems"]
    assert content_hashes(back, KEPT) == content_hashes(source, KEPT)
    # Comments: the source's only; the review request's projection is no comment.
    with forge(back) as f:
        bodies = [c.payload["body"] for c in f.reader.objects_of(ObjectType.ISSUE_COMMENT)]
    assert sorted(bodies) == sorted(["me too", "LGTM?"])
    # GitHub creates a release's tag when it does not exist: it comes back as a ref.
    assert set(refs(back)) == set(refs(source)) | {"refs/tags/v1.0", SHADOW}

    before = len(fake.requests_log)
    again = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{back}"))
    assert again.status == "completed"
    rest = [r for r in list(fake.requests_log)[before:] if r.host != "git"]
    # A no-change Run pays at most one primary-quota request per object type.
    assert sum(r.counted_primary for r in rest) <= len(ObjectType)


def test_github_data_made_in_the_ui_reaches_the_local_forge(tmp_path, world):
    """Issues, comments and PRs created on GitHub itself sync to a local standby."""
    ctx, _, fake = world
    fake.state.add_label(REPO, "triage", color="fbca04")
    number = fake.state.add_issue(
        REPO, "Made on GitHub", author="octocat", body="hi #1", labels=["triage"], created_at=WHEN
    ).number
    fake.state.add_comment(REPO, number, "first!", author="hubot", created_at=WHEN)
    local = tmp_path / "local.git"

    run = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{local}"))

    assert run.status == "completed", run.report["problems"]
    with forge(local) as f:
        [issue] = f.reader.objects_of(ObjectType.ISSUE)
        [comment] = f.reader.objects_of(ObjectType.ISSUE_COMMENT)
    assert (issue.number, issue.payload["author"], issue.payload["labels"]) == (
        number,
        "octocat",
        ["triage"],
    )
    assert comment.payload["author"] == "hubot"


def test_an_open_pull_request_without_its_head_branch_opens_on_a_shadow_branch(tmp_path, world):
    """local -> GitHub: the head branch is gone, its commit is not; GitHub gets a native
    pull request on ``reposync/pr/<N>/head``, and closing it retires the shadow."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=3, branches=0, tags=0)
    base = refs(source)["refs/heads/main"]
    set_ref(source, "refs/heads/feature", base)
    head = commit_on(source, "refs/heads/feature", "work under review")
    with forge(source) as f:
        pull = f.create_pull_request(
            "Review me",
            author="bob",
            created_at=WHEN,
            base_ref="main",
            base_sha=base,
            head_ref="feature",
            head_sha=head,
        )
    delete_refs(source, ["refs/heads/feature"])  # merged elsewhere, or a fork's branch
    request = SyncRequest(f"local:{source}", f"github:{REPO}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    shadow = "refs/heads/reposync/pr/1/head"
    assert _git_refs(fake)[shadow] == head
    [native] = fake.state.pulls(REPO)
    assert native.pull is not None
    assert (native.number, native.pull.head_ref, native.pull.head_sha) == (
        1,
        "reposync/pr/1/head",
        head,
    )
    assert "pull_request" not in first.report["data_gaps"].get("projected", {})
    again = sync(ctx, request)  # read back as head "feature": nothing to do
    assert (again.status, items_of(ctx, again.id)) == ("completed", [])

    with forge(source) as f:
        f.update(ObjectType.PULL_REQUEST, pull, state="closed", closed_at=WHEN)
    closed = sync(ctx, request)

    assert closed.status == "completed", closed.report["problems"]
    assert shadow not in _git_refs(fake)
    assert fake.state.issue(REPO, 1).state == "closed"
    assert closed.counters["deleted"] == 1


def test_a_fork_pull_request_on_github_brings_its_commits_to_the_local_forge(tmp_path, world):
    """GitHub -> local: a fork's head lives only in ``refs/pull/N/head``; the standby
    keeps the commits on a shadow branch and the pull request keeps the fork's branch."""
    ctx, _, fake = world
    forked = "acme/upstream"
    fake.state.create_repo(forked, auto_init=True)
    git_dir = Path(fake.state.git_dir(forked))
    head = commit_on(git_dir, "refs/heads/patch-1", "a contributor's fix")
    number = fake.state.add_pull(forked, "Fix from a fork", head="patch-1", author="contrib").number
    delete_refs(git_dir, ["refs/heads/patch-1"])  # the branch lives in the fork, not here
    local = tmp_path / "local.git"

    run = sync(ctx, SyncRequest(f"github:{forked}", f"local:{local}"))

    assert run.status == "completed", run.report["problems"]
    assert refs(local)[f"refs/heads/reposync/pr/{number}/head"] == head
    with forge(local) as f:
        [pr] = f.reader.objects_of(ObjectType.PULL_REQUEST)
    assert (pr.payload["head_ref"], pr.payload["head_sha"]) == ("patch-1", head)


def test_refs_reach_github_in_pushes_of_at_most_500(tmp_path, world):
    """GitHub's unpublished per-push ref limit: 620 refs go in pushes of <= 500, to a
    server that refuses any push of more."""
    ctx, _, fake = world
    source = generate(tmp_path / "many.git", commits=20, branches=400, tags=219)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert fake.max_ref_updates_per_push == 500
    assert run.status == "completed", run.report["problems"]
    assert sum(i.object_type == "git_ref" for i in items_of(ctx, run.id)) == 620
    assert [len(updates) for updates in fake.receive_pack_requests] == [500, 120]
    assert _git_refs(fake) == refs(source)


def _receive_pack_statuses(fake) -> list[int]:
    return [r.status for r in fake.requests_log.records if r.path.endswith("/git-receive-pack")]


def test_a_github_taking_fewer_refs_per_push_than_declared_gets_them_in_halves(tmp_path, world):
    """A GitHub whose limit is 200 ref updates per push, below the 500 reposync declares
    (GitHub does not publish it; GitHub Enterprise sets its own): it answers a push of
    500 with an HTTP 500 and lands nothing. The refs go again in halves until they land,
    the rest of the batch in pushes no larger, and the Run says why and what to set.
    Before, the Run failed after retrying the same 500-ref push."""
    ctx, _, fake = world
    fake.max_ref_updates_per_push = 200
    source = generate(tmp_path / "many.git", commits=20, branches=400, tags=219)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert [len(updates) for updates in fake.receive_pack_requests] == [125, 125, 125, 125, 120]
    assert _receive_pack_statuses(fake).count(500) == 2  # 500 refs, then 250
    assert run.report["io"]["git"]["pushes"] == 7
    [said] = event_messages(ctx, run.id, "git_pushes_shrank")
    assert "answered pushes of 500, 250 refs with a server error" in said
    assert "HTTP 500" in said
    assert "pushes of at most 125" in said
    assert "REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH" in said

    again = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert again.status == "completed"
    assert len(fake.receive_pack_requests) == 5  # nothing left to push


def test_later_batches_of_a_run_push_as_many_refs_as_github_took(tmp_path, world):
    """A GitHub that takes 200 ref updates per push, and a Run whose 620 refs are three
    batches of 300: the first batch learns it in halves (300 refused, then pushes of
    150), and the later batches start at 150 instead of each paying a refused push of
    300 again. Before, what a batch learned was forgotten at its end: 2 refused pushes."""
    ctx, _, fake = world
    fake.max_ref_updates_per_push = 200
    ctx.settings = replace(ctx.settings, git_batch_max_items=300)
    source = generate(tmp_path / "many.git", commits=20, branches=400, tags=219)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert _receive_pack_statuses(fake).count(500) == 1  # the first batch's 300
    assert [len(updates) for updates in fake.receive_pack_requests] == [150, 150, 150, 150, 20]
    assert len(event_messages(ctx, run.id, "git_pushes_shrank")) == 1


@pytest.mark.parametrize(("setting", "pushes"), [(1000, [620]), (150, [150, 150, 150, 150, 20])])
def test_the_ref_update_setting_replaces_githubs_limit(tmp_path, world, setting, pushes):
    """``git_max_ref_updates_per_push`` replaces the 500 reposync assumes for GitHub, up
    (a GitHub Enterprise that takes 1,000) or down: 620 refs go in pushes of that many."""
    ctx, _, fake = world
    fake.max_ref_updates_per_push = 1000
    ctx.settings = replace(ctx.settings, git_max_ref_updates_per_push=setting)
    source = generate(tmp_path / "many.git", commits=20, branches=400, tags=219)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert [len(updates) for updates in fake.receive_pack_requests] == pushes
    assert 500 not in _receive_pack_statuses(fake)
    assert event_messages(ctx, run.id, "git_pushes_shrank") == []


def test_a_github_answering_every_push_with_a_server_error_fails_the_run(tmp_path, world):
    """A server error is halved down to a push of one ref; when even that fails, it is
    the transport's failure, retried as a forge briefly away, and no ref lands."""
    ctx, _, fake = world
    fake.faults.error("POST", r"/git-receive-pack$", status=500, host="git", count=None)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=2)
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)  # + main: 8 refs

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "failed"
    [problem] = run.report["problems"]
    assert problem["error_code"] == "git_transport_failed"
    assert "HTTP 500" in problem["message"]
    assert _git_refs(fake) == {}
    # Per attempt: 8 refs, then 4, 2 and 1: each push's first half, refused.
    assert _receive_pack_statuses(fake) == [500] * 8


def test_a_push_answered_once_with_a_server_error_lands_in_halves(tmp_path, world):
    """One HTTP 500 (a forge briefly unwell): the 8 refs land in two pushes of 4, in the
    same stage, with no retry of the stage and no backoff."""
    ctx, _, fake = world
    fake.faults.error("POST", r"/git-receive-pack$", status=500, host="git")
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert _receive_pack_statuses(fake) == [500, 200, 200]
    assert [len(updates) for updates in fake.receive_pack_requests] == [4, 4]
    ref_items = [i for i in items_of(ctx, run.id) if i.object_type == "git_ref"]
    assert {i.attempt_count for i in ref_items} == {1}


def test_a_push_that_landed_before_its_server_error_is_not_pushed_twice(tmp_path, world):
    """The forge performs a push of 5 branch updates, then answers 502 (a proxy lost its
    answer). Pushing the halves again finds the refs moved: the leases refuse them, so
    nothing is written twice, and read-back finds every ref as planned."""
    ctx, _, fake = world
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)
    assert sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}")).status == "completed"
    for name in refs(source):
        if name.startswith("refs/heads/"):
            commit_on(source, name, f"more on {name}")
    fake.faults.commit_then_drop("POST", r"/git-receive-pack$", host="git")

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert run.report["problems"] == []
    # The bootstrap, then the update of 5 branches whose answer was lost. The halves'
    # leases expect the old values: git refuses them itself, and sends nothing.
    assert _receive_pack_statuses(fake) == [200, 502]
    assert [len(updates) for updates in fake.receive_pack_requests] == [8, 5]


def test_a_push_answered_http_413_fails_its_refs_as_too_large_naming_the_setting(tmp_path, world):
    """A proxy before the forge refuses the push's request for its size (HTTP 413, as
    nginx's ``client_max_body_size`` does): no retry of the same request as a transport
    error; each ref fails ``push_too_large`` with the setting that cuts pushes by size."""
    ctx, _, fake = world
    fake.faults.error("POST", r"/git-receive-pack$", status=413, host="git", count=None)
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status != "completed"
    ref_items = [i for i in items_of(ctx, run.id) if i.object_type == "git_ref"]
    assert {(i.state, i.error_code) for i in ref_items} == {("failed", "push_too_large")}
    assert "HTTP 413" in ref_items[0].error_message
    assert "REPOSYNC_GIT_MAX_PUSH_PACK_BYTES" in ref_items[0].error_message
    assert _receive_pack_statuses(fake) == [413]  # one push, not retried as a transport error
    assert _git_refs(fake) == {}


#: The main repository's Git advertisement (its wiki's is another path): the inventory's
#: ``ls-remote`` asks first, then each push or fetch.
ADVERTISEMENT = r"/widgets\.git/info/refs$"


def test_a_token_git_stops_taking_during_a_run_fails_it_at_once(tmp_path, world):
    """The token is refused between the inventory and the push (revoked while the Run
    runs): the Run fails ``git_credentials_refused``, an authorization problem, on the
    first refusal. Before, the push was retried as a transport error with backoff (five
    attempts, ~150 s with the default settings) and failed ``git_transport_failed`` with
    git's words about a username prompt. No push carried a ref past the refusal, so none
    can have landed: the refs are planned again, nothing waits for read-back or for an
    operator's recovery (before, all 8 were blocked ``result_unknown``, their read-back
    refused too), and once the token is good the next Run pushes them."""
    ctx, _, fake = world
    fake.faults.error("GET", ADVERTISEMENT, status=401, host="git", after=1, count=None)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01)
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "failed"
    [problem] = run.report["problems"]
    assert problem["error_code"] == "git_credentials_refused"
    assert problem["problem_type"] == "authorization_required"
    assert problem["retryable"] is False
    assert "acme/widgets.git: the remote refused git's credentials (HTTP 401)" in problem["message"]
    assert "credentials" in problem["suggested_action"]
    ref_items = [i for i in items_of(ctx, run.id) if i.object_type == "git_ref"]
    assert {(i.state, i.attempt_count) for i in ref_items} == {("planned", 0)}
    assert len(ref_items) == 8
    # The inventory's listing and the push's, once (no retry); nothing to read back.
    assert _advertisements(fake) == [200, 401]
    assert _receive_pack_statuses(fake) == []
    assert _git_refs(fake) == {}

    fake.faults.clear()  # the token is good again
    again = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    assert again.status == "completed", again.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert _receive_pack_statuses(fake) == [200]


def test_a_token_refused_between_two_pushes_leaves_only_the_first_s_refs_to_prove(tmp_path, world):
    """A batch of 8 refs goes in pushes of 5; the token is refused at the second push.
    The first push's refs landed: they wait for read-back (refused too) and recovery,
    which proves them. The second's never went: planned again, and the next Run pushes
    them alone."""
    ctx, _, fake = world
    fake.faults.error("GET", ADVERTISEMENT, status=401, host="git", after=2, count=None)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, git_max_ref_updates_per_push=5)
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)

    run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert run.status == "failed"
    problem, unknown = run.report["problems"]
    assert problem["error_code"] == "git_credentials_refused"
    assert (unknown["error_code"], unknown["count"]) == ("result_unknown", 5)
    ref_items = [i for i in items_of(ctx, run.id) if i.object_type == "git_ref"]
    assert sorted(i.state for i in ref_items) == ["blocked"] * 5 + ["planned"] * 3
    assert _receive_pack_statuses(fake) == [200]
    assert len(_git_refs(fake)) == 5

    fake.faults.clear()
    assert recover_run(ctx, run.id)["proven_written"] == 5
    again = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    assert again.status == "completed", again.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert [len(updates) for updates in fake.receive_pack_requests] == [5, 3]


def test_a_git_rate_limit_between_two_pushes_defers_the_run_and_no_ref_is_left_unknown(
    tmp_path, world
):
    """The same batch meets the Git host's rate limit (HTTP 429) at the second push. The
    Run waits for it instead of failing: the second push's refs never went (planned,
    their attempt given back), the first's wait for read-back, and once the limit lifts
    the same Run proves them and pushes the other 3 alone, with no recovery. No item
    spends an attempt on the wait. Before, the 429 was a transport failure retried with
    backoff until the stage gave up."""
    ctx, _, fake = world
    fake.faults.error("GET", ADVERTISEMENT, status=429, host="git", after=2, count=None)
    ctx.settings = replace(
        ctx.settings,
        retry_backoff=0.01,
        git_max_ref_updates_per_push=5,
        git_rate_limit_wait=0.2,
        embedded_max_wait=0.1,  # ``sync`` returns the deferred Run instead of waiting
    )
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)
    request = SyncRequest(f"local:{source}", f"github:{REPO}")

    run = sync(ctx, request)

    assert (run.status, run.retry_at is not None) == ("queued", True)
    ref_items = [i for i in items_of(ctx, run.id) if i.object_type == "git_ref"]
    assert sorted(i.state for i in ref_items) == ["applying"] * 5 + ["planned"] * 3
    assert {i.attempt_count for i in ref_items} == {0}  # waiting for a limit is no attempt
    said = waiting(ctx, [run])[run.id]  # the API's and the Run page's words
    assert "by a rate limit (git_rate_limited): git push to " in said
    assert _receive_pack_statuses(fake) == [200]
    assert len(_git_refs(fake)) == 5

    fake.faults.clear()
    ctx.settings = replace(ctx.settings, embedded_max_wait=900.0)
    again = sync(ctx, request)
    assert (again.id, again.status) == (run.id, "completed"), again.report["problems"]
    assert _git_refs(fake) == refs(source)
    assert [len(updates) for updates in fake.receive_pack_requests] == [5, 3]


def test_a_token_git_stops_taking_before_a_fetch_fails_the_run_at_once(tmp_path, world):
    """The same on the way in: GitHub is the source, and its token is refused between
    the inventory and the fetch of the refs' objects."""
    ctx, _, fake = world
    source = generate(tmp_path / "few.git", commits=5, branches=2, tags=1)
    assert sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}")).status == "completed"
    seen = len(_advertisements(fake))
    fake.faults.error("GET", ADVERTISEMENT, status=401, host="git", after=1, count=None)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01)

    run = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{tmp_path / 'back.git'}"))

    assert run.status == "failed"
    [problem] = run.report["problems"]
    assert problem["error_code"] == "git_credentials_refused"
    assert _advertisements(fake)[seen:] == [200, 401]


def test_an_installation_token_git_stops_taking_is_renewed_for_the_push(tmp_path, github_fake):
    """A GitHub App's installation token refused at the push (it expired, or GitHub
    dropped it, before reposync's own clock said so): a new one is exchanged and the push
    goes again within the same stage; the Run completes with every ref on its first
    attempt. Renewal is what a retry used to provide, by chance of a new token."""
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    install = fake.install_app("acme")
    key = tmp_path / "app-key.pem"
    key.write_bytes(install.keys.private_pem)
    fake.faults.error("GET", ADVERTISEMENT, status=401, host="git", after=1)
    source = generate(tmp_path / "few.git", commits=5, branches=4, tags=3)
    with embedded_world(
        fake,
        tmp_path,
        token="",
        github_app_id=str(install.app.id),
        github_app_private_key_path=str(key),
        github_installation_id=str(install.installation.id),
    ) as (ctx, _):
        run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

        assert run.status == "completed", run.report["problems"]
        assert _git_refs(fake) == refs(source)
        # The inventory's listing, the push's refused, the push with the new token, and
        # the read-back's.
        assert _advertisements(fake) == [200, 401, 200, 200]
        exchanged = fake.requests_log.matching("POST", r"/app/installations/\d+/access_tokens$")
        assert len(exchanged) == 2
        ref_items = [i for i in items_of(ctx, run.id) if i.object_type == "git_ref"]
        assert {i.attempt_count for i in ref_items} == {1}


def _advertisements(fake) -> list[int]:
    return [r.status for r in fake.requests_log.matching("GET", ADVERTISEMENT, host="git")]


def test_a_repository_github_created_moments_ago_is_synced_once_git_serves_it(tmp_path, world):
    """github.com serves a repository created through its API to git only moments later:
    "Repository not found" while the API shows it. A Run right after the creation (as
    an owner Binding's, which creates its standbys) waits that out as a transport
    failure, retried, and completes. Before, the listing's "not found" was
    ``permission_denied`` and the Run stopped, blocked."""
    ctx, _, fake = world
    fake.state.git_lag = 1.0
    fake.state.create_repo("acme/fresh", private=True)
    ctx.settings = replace(ctx.settings, retry_backoff=0.5)
    source = generate(tmp_path / "few.git", commits=3, branches=2, tags=1)

    run = sync(ctx, SyncRequest(f"local:{source}", "github:acme/fresh"))

    assert run.status == "completed", run.report["problems"]
    listings = fake.requests_log.matching("GET", r"/fresh\.git/info/refs$", host="git")
    assert listings[0].status == 404
    assert _git_refs(fake, "acme/fresh") == refs(source)


def test_a_push_whose_connection_goes_silent_is_given_up_and_pushed_again(tmp_path, github_fake):
    """The push's connection goes silent (a proxy or a NAT dropped it without a word):
    git gives it up once nothing moved for ``git_stall_seconds`` and the stage's retry
    pushes again. Before, git waited as long as the connection stayed open (curl has no
    timeout of its own): a Run held its lease until the task's time limit, and an
    embedded ``sync`` waited forever."""
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    fake.faults.latency("GET", ADVERTISEMENT, seconds=30, host="git", after=1)
    source = generate(tmp_path / "few.git", commits=3, branches=2, tags=1)
    with embedded_world(fake, tmp_path, git_stall_seconds=1.0, retry_backoff=0.01) as (ctx, _):
        run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

        assert run.status == "completed", run.report["problems"]
        assert _git_refs(fake) == refs(source)
        [retry] = event_messages(ctx, run.id, "retry_scheduled")
    assert retry.startswith("git_transport_failed: git push to")
    assert "too slow" in retry  # curl's words: less than 1 byte/s for 1 s
