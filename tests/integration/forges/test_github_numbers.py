"""Issue 16: issue numbers and comment parents on GitHub must not depend on timing.

A local forge with gaps in its numbers (never used, deleted) is synced to the GitHub test
server while the server loses responses, times out after committing, answers 5xx before
doing anything or is slow. Whatever the schedule, GitHub must end with every source
number on the source's issue (gaps as closed placeholders) and every comment on the issue
its source comment belongs to.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reposync.errors import ReposyncError, ResultUnknownUnresolved
from reposync.models.db import Database
from reposync.providers.forge.bodies import parse
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.service.recovery import recover_run
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world, github_context
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import WHEN, forge

REPO = "acme/numbers"
REPOS = count(1)

#: Source numbers: 3 and 6 never used, 5 deleted after creation.
USED = [1, 2, 4, 7, 8]
DELETED = [5]


@dataclass(frozen=True)
class SourceForge:
    path: Path
    #: Issue number -> title, and comment body -> the number of its issue.
    titles: dict[int, str]
    comments: dict[str, int]


def numbered_forge(path: Path) -> SourceForge:
    generate(path, commits=2, branches=0, tags=0)
    titles: dict[int, str] = {}
    comments: dict[str, int] = {}
    with forge(path) as f:
        for number in sorted(USED + DELETED):
            identity = f.create_issue(
                f"issue {number}", author="ann", created_at=WHEN, number=number
            )
            if number in DELETED:
                f.delete(ObjectType.ISSUE, identity)
                continue
            titles[number] = f"issue {number}"
            for n in range(2):
                body = f"comment {n} on {number}"
                f.add_comment("issue", identity, body, author="bob", created_at=WHEN)
                comments[body] = number
    return SourceForge(path, titles, comments)


def github_view(fake, repo: str = REPO) -> tuple[dict[int, str], dict[str, int]]:
    """GitHub's issues by number (placeholders as "placeholder") and comment parents."""
    issues = {}
    for issue in fake.state.issues(repo):
        marker = parse(issue.body).marker or ""
        issues[issue.number] = "placeholder" if marker.startswith("placeholder") else issue.title
    comments = {parse(c.body).body: c.issue_number for c in fake.state.comments(repo)}
    return issues, comments


def expected_view(source: SourceForge) -> tuple[dict[int, str], dict[str, int]]:
    top = max(source.titles)
    issues = {n: source.titles.get(n, "placeholder") for n in range(1, top + 1)}
    return issues, dict(source.comments)


def sync_until_settled(ctx, request: SyncRequest, attempts: int = 8):
    """Faults may leave a Run unfinished (a 5xx burst, an unknown outcome); the operator's
    next Run, after a recovery where one is needed, finishes it. The numbers must not
    care how many Runs it took."""
    run = None
    blocked: list[int] = []
    for _ in range(attempts):
        try:
            run = sync(ctx, request)
        except ResultUnknownUnresolved:
            for run_id in blocked:  # a recovery that met a fault itself: once more
                with contextlib.suppress(ReposyncError):
                    recover_run(ctx, run_id)
            continue
        if run.status == "completed":
            return run
        if run.status == "blocked":
            blocked.append(run.id)
            with contextlib.suppress(ReposyncError):
                recover_run(ctx, run.id)
    return run


@pytest.fixture
def world(tmp_path: Path, github_fake):
    github_fake.state.create_repo(REPO, private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _recorder):
        yield ctx, github_fake


def test_a_lost_create_response_does_not_shift_the_next_number(tmp_path, world):
    """The first issue's create commits but its response is lost: the writer recovered it
    by marker but kept counting from before it, so the gap filler "filled" #2 with a
    placeholder and issue 2 landed on #3 (every later number shifted by one)."""
    ctx, fake = world
    source = numbered_forge(tmp_path / "src.git")
    fake.faults.commit_then_drop("POST", rf"/repos/{REPO}/issues$", count=1)

    run = sync_until_settled(ctx, SyncRequest(f"local:{source.path}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert github_view(fake) == expected_view(source)


#: Requests of a number-keeping sync, and how GitHub may fail each.
PATHS = {
    "create issue": ("POST", r"/issues$"),
    "edit issue": ("PATCH", r"/issues/\d+$"),
    "read issue": ("GET", r"/issues/\d+$"),
    "list issues": ("GET", r"/issues$"),
    "create comment": ("POST", r"/issues/\d+/comments$"),
}
FAULTS = st.lists(
    st.tuples(
        st.sampled_from(sorted(PATHS)),
        st.sampled_from(["error", "commit_then_drop", "close", "timeout", "latency"]),
        st.sampled_from([0.25, 0.5, 1.0]),
        st.integers(1, 3),
        st.integers(0, 2**16),
    ),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def shared_source(tmp_path_factory) -> SourceForge:
    return numbered_forge(tmp_path_factory.mktemp("numbers") / "src.git")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(schedule=FAULTS)
def test_numbers_and_parents_are_the_same_under_any_fault_schedule(
    schedule, shared_source, github_fake
):
    """The same plan under random schedules of lost responses, timeouts after the commit,
    5xx before it and slow answers: GitHub ends identical in every schedule."""
    owner = f"org{next(REPOS)}"  # its own content-creation limit (per owner on GitHub)
    repo = f"{owner}/numbers"
    github_fake.state.create_repo(repo, private=True)
    github_fake.faults.clear()
    for name, kind, probability, times, seed in schedule:
        method, path = PATHS[name]
        where = {"count": times, "probability": probability, "seed": seed}
        if kind == "close":
            github_fake.faults.commit_then_drop(method, path, drop="close", **where)
        elif kind == "timeout":  # the client gives up at 0.5 s; the write happened
            github_fake.faults.timeout(method, path, seconds=0.8, **where)
        elif kind == "latency":
            github_fake.faults.latency(method, path, seconds=0.05, **where)
        else:
            github_fake.faults.add(kind, method, path, status=502, **where)
    with tempfile.TemporaryDirectory() as scratch:
        db = Database(f"sqlite:///{Path(scratch) / 'reposync.db'}")
        db.upgrade()
        try:
            ctx, recorder = github_context(
                github_fake,
                db,
                Path(scratch) / "data",
                github_fake.add_token(owner),
                http_timeout=0.5,
                retry_backoff=0.0,
                retry_backoff_max=0.0,
            )
            run = sync_until_settled(
                ctx, SyncRequest(f"local:{shared_source.path}", f"github:{repo}")
            )
        finally:
            github_fake.faults.clear()
            db.dispose()

    assert run is not None
    assert run.status == "completed", (schedule, run.report["problems"])
    assert github_view(github_fake, repo) == expected_view(shared_source), schedule
    assert recorder.violations == []


def synced_then_misplaced(ctx, fake, tmp_path: Path) -> tuple[SourceForge, SyncRequest]:
    """A synced forge, then "comment 0 on 2" moved under #4 on GitHub, as if its create
    had gone to the wrong issue."""
    source = numbered_forge(tmp_path / "src.git")
    request = SyncRequest(f"local:{source.path}", f"github:{REPO}")
    assert sync(ctx, request).status == "completed"
    [moved] = [c for c in fake.state.comments(REPO) if parse(c.body).body == "comment 0 on 2"]
    with fake.state.lock:
        moved.issue_number = 4
    return source, request


def test_a_comment_under_the_wrong_issue_is_found_and_put_back(tmp_path, world):
    """Content hashes leave the parent out, so a comment that sits under another issue on
    GitHub read back "equal" and a full audit reported nothing. The audit now compares
    the parent too: the stray is deleted and the comment created again where it belongs,
    once; a second audit finds nothing."""
    ctx, fake = world
    source, request = synced_then_misplaced(ctx, fake, tmp_path)
    audit_request = SyncRequest(request.source, request.target, full_audit=True)

    audit = sync(ctx, audit_request)

    assert audit.status == "completed", audit.report["problems"]
    assert audit.report["planned_actions"] == {"delete": 1, "create": 1}
    assert github_view(fake) == expected_view(source)
    comments = [parse(c.body).body for c in fake.state.comments(REPO)]
    assert comments.count("comment 0 on 2") == 1
    again = sync(ctx, audit_request)
    assert again.report["planned_actions"] == {}


def test_a_checkpoint_that_edits_a_misplaced_comment_puts_it_back(tmp_path, world):
    """A checkpoint reads the target of what changed: the edited comment is found under
    the wrong issue and created again under its own, with the edit, once."""
    ctx, fake = world
    source, request = synced_then_misplaced(ctx, fake, tmp_path)
    with forge(source.path) as f:
        [comment] = [
            c
            for c in f.reader.objects_of(ObjectType.ISSUE_COMMENT)
            if c.payload["body"] == "comment 0 on 2"
        ]
        f.update(ObjectType.ISSUE_COMMENT, comment.identity, body="comment 0 on 2, edited")

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert run.report["planned_actions"] == {"delete": 1, "create": 1}
    expected = dict(source.comments)
    expected["comment 0 on 2, edited"] = expected.pop("comment 0 on 2")
    assert github_view(fake)[1] == expected
    assert len(fake.state.comments(REPO)) == len(expected)


def test_a_failed_placeholder_check_never_creates_under_another_number(tmp_path, github_fake):
    """Number 2 was never used, so GitHub holds a placeholder there; later the source
    gets an issue #2. Checking the placeholder met 5xx answers (more than the client's
    retries): that was read as "no placeholder" and the issue was created as #4. Now
    the stage is tried again and the issue takes #2."""
    repo = "acme/placeholders"
    github_fake.state.create_repo(repo, private=True)
    with tempfile.TemporaryDirectory() as scratch:
        db = Database(f"sqlite:///{Path(scratch) / 'reposync.db'}")
        db.upgrade()
        try:
            ctx, _ = github_context(
                github_fake,
                db,
                Path(scratch) / "data",
                github_fake.add_token("acme"),
                retry_backoff=0.0,
                retry_backoff_max=0.0,
            )
            source = tmp_path / "src.git"
            generate(source, commits=2, branches=0, tags=0)
            with forge(source) as f:
                f.create_issue("one", author="ann", created_at=WHEN, number=1)
                f.create_issue("three", author="ann", created_at=WHEN, number=3)
            request = SyncRequest(f"local:{source}", f"github:{repo}")
            assert sync(ctx, request).status == "completed"
            with forge(source) as f:
                f.create_issue("two, at last", author="bob", created_at=WHEN, number=2)
            github_fake.faults.error("GET", rf"/repos/{repo}/issues/2$", status=502, count=4)

            run = sync_until_settled(ctx, request)
        finally:
            github_fake.faults.clear()
            db.dispose()

    assert run is not None
    assert run.status == "completed", run.report["problems"]
    assert github_view(github_fake, repo)[0] == {1: "one", 2: "two, at last", 3: "three"}
