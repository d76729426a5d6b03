"""The pull-request family keeps its shape through every target and back (issue 10 #1, #2).

Review requests are the target provider's business: a local forge holds them natively,
GitHub shows them as a projection comment that its reads present as the review request
again, so a handoff's reverse dry-run finds them equal.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pygit2
import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world
from tests.gitrepo import commit_on, generate, refs, set_ref
from tests.integration.forges.test_forge_sync import WHEN, forge

REPO = "acme/widgets"


def items_of(ctx: ServiceContext, run_id: int) -> list[RunItem]:
    with ctx.db.session() as session:
        return list(session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars())


def two_pulls_with_review_requests(path: Path) -> dict[str, str]:
    """Two open pull requests on real branches, review requests on both."""
    base = refs(path)["refs/heads/main"]
    ids: dict[str, str] = {}
    heads = {}
    for name in ("one", "two"):
        set_ref(path, f"refs/heads/{name}", base)
        heads[name] = commit_on(path, f"refs/heads/{name}", f"work on {name}")
    with forge(path) as f:
        for n, name in enumerate(("one", "two"), start=1):
            ids[f"p{n}"] = f.create_pull_request(
                f"Pull {name}",
                author="bob",
                created_at=WHEN,
                base_ref="main",
                base_sha=base,
                head_ref=name,
                head_sha=heads[name],
            )
        ids["rq1"] = f.request_review(ids["p1"], "dave", requested_at=WHEN)
        ids["rq2"] = f.request_review(ids["p1"], "erin")
        ids["rq3"] = f.request_review(ids["p2"], "dave")
    return ids


def review_requests(path: Path) -> list[tuple[int, str, str]]:
    """(pull number, reviewer, content hash) of every review request."""
    with forge(path) as f:
        pulls = {p.identity: p.number for p in f.reader.objects_of(ObjectType.PULL_REQUEST)}
        return sorted(
            (pulls[r.refs["parent"].identity], r.payload["reviewer"], r.content_hash)
            for r in f.reader.objects_of(ObjectType.REVIEW_REQUEST)
        )


def comments(path: Path) -> list[Any]:
    with forge(path) as f:
        return f.reader.objects_of(ObjectType.ISSUE_COMMENT)


def test_review_requests_survive_a_local_to_local_handoff(ctx, tmp_path):
    """The standby holds review requests natively (no comment), the reverse dry-run plans
    nothing, and the authority moves."""
    a = generate(tmp_path / "a.git", commits=3, branches=0, tags=0)
    b = tmp_path / "b.git"
    two_pulls_with_review_requests(a)
    request = SyncRequest(f"local:{a}", f"local:{b}")
    first = sync(ctx, request)
    assert first.status == "completed", first.report["problems"]
    assert review_requests(b) == review_requests(a)
    assert comments(b) == []  # no projection on a forge that holds review requests
    assert first.report["data_gaps"]["total"] == 0

    outcome = handoff(ctx, bind(ctx, request).id)

    assert outcome.reverse_run_id is not None
    planned = [
        (i.object_type, i.action, i.object_key) for i in items_of(ctx, outcome.reverse_run_id)
    ]
    assert planned == []
    assert outcome.switched, outcome.reason


@pytest.fixture
def world(tmp_path: Path, github_fake):
    github_fake.state.create_repo(REPO, private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, recorder):
        yield ctx, recorder, github_fake


def test_review_requests_survive_local_to_github_and_a_handoff_back(tmp_path, world):
    """GitHub shows each review request as a comment that reads back as the request (and
    not as a comment); the reverse dry-run from GitHub plans nothing; the projection is
    counted."""
    ctx, _, fake = world
    a = generate(tmp_path / "a.git", commits=3, branches=0, tags=0)
    # A real repository's HEAD names a branch (``generate`` leaves git's "master", which
    # does not exist, and GitHub's default would then flow back in the reverse dry-run).
    subprocess.run(["git", f"--git-dir={a}", "symbolic-ref", "HEAD", "refs/heads/main"], check=True)
    two_pulls_with_review_requests(a)
    request = SyncRequest(f"local:{a}", f"github:{REPO}")
    first = sync(ctx, request)
    assert first.status == "completed", first.report["problems"]
    assert first.report["data_gaps"]["projected"] == {"review_request": 3}
    projections = [c for c in fake.state.comments(REPO) if "Review requested from" in c.body]
    assert len(projections) == 3
    assert all("@dave" not in c.body.replace("`@dave`", "") for c in projections)  # no pings

    audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))
    assert (audit.status, items_of(ctx, audit.id)) == ("completed", [])

    outcome = handoff(ctx, bind(ctx, request).id)

    assert outcome.reverse_run_id is not None
    planned = [
        (i.object_type, i.action, i.object_key) for i in items_of(ctx, outcome.reverse_run_id)
    ]
    assert planned == []
    assert outcome.switched, outcome.reason

    b = tmp_path / "b.git"
    back = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))
    assert back.status == "completed", back.report["problems"]
    assert review_requests(b) == review_requests(a)
    assert comments(b) == []


# -- reviews stay whole (issue 10 #2, #3) ---------------------------------------------------

BASE_TEXT = "line 1\nline 2\nline 3\nline 4\nline 5\n"
HEAD_TEXT = "line 1\nline 2\nline three\nline 4\nline 5\nline 6\n"


def _commit_file(path: Path, ref: str, text: str, parent: str | None) -> str:
    repo = pygit2.Repository(str(path))
    base = repo.get(parent) if parent else None
    builder = repo.TreeBuilder(base.tree) if base is not None else repo.TreeBuilder()
    builder.insert("app.py", repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
    sig = pygit2.Signature("Dev", "dev@example.com", 1_700_000_000, 0)
    oid = repo.create_commit(
        None, sig, sig, f"app.py for {ref}", builder.write(), [base.id] if base else []
    )
    repo.references.create(ref, oid, force=True)
    return str(oid)


def review_forge(path: Path) -> dict[str, str]:
    """One pull request (a real branch with a diff) holding reviews in all five states,
    threaded comments on both sides and on the file, a reply to a reply, a request."""
    generate(path, commits=1, branches=0, tags=0)
    base = _commit_file(path, "refs/heads/main", BASE_TEXT, refs(path)["refs/heads/main"])
    head = _commit_file(path, "refs/heads/review-me", HEAD_TEXT, base)
    ids: dict[str, str] = {}
    with forge(path) as f:
        pr = f.create_pull_request(
            "Please review",
            author="bob",
            created_at=WHEN,
            base_ref="main",
            base_sha=base,
            head_ref="review-me",
            head_sha=head,
        )
        ids["pr"] = pr
        r1 = f.add_review(
            pr, state="COMMENTED", body="notes", commit_id=head, author="carol", submitted_at=WHEN
        )
        common = {"commit_id": head, "path": "app.py", "created_at": WHEN}
        ids["c1"] = f.add_review_comment(r1, line=3, body="renamed?", author="carol", **common)
        ids["c2"] = f.add_review_comment(
            r1, line=3, side="LEFT", body="was fine", author="carol", **common
        )
        ids["cf"] = f.add_review_comment(r1, line=None, body="whole file", author="carol", **common)
        ids["c3"] = f.add_review_comment(
            r1, line=3, body="yes", author="bob", in_reply_to=ids["c1"], **common
        )
        ids["c4"] = f.add_review_comment(
            r1, line=3, body="ok then", author="carol", in_reply_to=ids["c3"], **common
        )
        for state, who, body in (
            ("APPROVED", "dave", ""),
            ("CHANGES_REQUESTED", "erin", "fix it"),
            ("DISMISSED", "frank", "stale"),
            ("PENDING", "gina", "draft"),
        ):
            ids[state] = f.add_review(
                pr, state=state, body=body, commit_id=head, author=who, submitted_at=WHEN
            )
        ids["c5"] = f.add_review_comment(
            ids["PENDING"], line=6, body="new line", author="gina", **common
        )
        ids["rq"] = f.request_review(pr, "dave", requested_at=WHEN)
    return ids


def structure(path: Path) -> dict[str, Any]:
    """The pull-request family canonically, structure included: each review comment with
    its review's and its replied-to comment's content (identities differ between forges;
    content hashes leave parents out, so they are compared here)."""
    with forge(path) as f:
        pulls = {p.identity: p.number for p in f.reader.objects_of(ObjectType.PULL_REQUEST)}
        reviews = {r.identity: r for r in f.reader.objects_of(ObjectType.REVIEW)}
        comments = {c.identity: c for c in f.reader.objects_of(ObjectType.REVIEW_COMMENT)}
        requests = f.reader.objects_of(ObjectType.REVIEW_REQUEST)

    def replied(c: Any) -> str | None:
        ref = c.refs.get("in_reply_to")
        if ref is None:
            return None
        parent = comments.get(ref.identity)
        return parent.content_hash if parent is not None else "gone"

    return {
        "reviews": sorted(
            (pulls[r.refs["parent"].identity], r.content_hash) for r in reviews.values()
        ),
        "review_comments": sorted(
            (
                reviews[c.refs["parent"].identity].content_hash,
                replied(c) or "",
                c.content_hash,
            )
            for c in comments.values()
        ),
        "review_requests": sorted(
            (pulls[r.refs["parent"].identity], r.content_hash) for r in requests
        ),
    }


def test_reviews_stay_whole_through_github_and_back(tmp_path, world):
    """A -> GitHub -> B: every review is one review on GitHub holding its own comments,
    replies answer the right comment, what GitHub cannot show is represented and counted;
    B equals A structurally; full audits find nothing and write nothing."""
    ctx, _, fake = world
    a = tmp_path / "a.git"
    review_forge(a)
    request = SyncRequest(f"local:{a}", f"github:{REPO}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    gaps = first.report["data_gaps"]
    assert gaps["state_as_comment"] == {"review": 4}  # approved, changes, dismissed, pending
    assert gaps["own_review"] == {"review_comment": 2}  # the file-level one, the reply
    assert gaps["reply_to_root"] == {"review_comment": 1}
    assert gaps["projected"] == {"review_request": 1}
    ours = [r for r in fake.state.reviews(REPO, 1) if "reposync:marker" in r.body]
    assert len(ours) == 5
    assert all(r.state == "COMMENTED" for r in ours)
    by_body = {}
    for c in fake.state.review_comments(REPO, 1):
        by_body[c.body.split("\n\n")[1] if "\n\n" in c.body else c.body] = c
    notes = next(r for r in ours if "notes" in r.body)
    assert by_body["renamed?"].review_id == notes.id
    assert by_body["was fine"].review_id == notes.id
    assert (by_body["was fine"].side, by_body["was fine"].line) == ("LEFT", 3)
    assert by_body["yes"].in_reply_to_id == by_body["renamed?"].id
    assert by_body["ok then"].in_reply_to_id == by_body["renamed?"].id  # GitHub: the root
    assert "in reply to" in by_body["ok then"].body.split("\n")[1]  # said in the header
    pending = next(r for r in ours if "draft" in r.body)
    assert by_body["new line"].review_id == pending.id
    assert "pending" in pending.body.split("\n")[1]

    b = tmp_path / "b.git"
    back = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))
    assert back.status == "completed", back.report["problems"]
    assert structure(b) == structure(a)

    for _ in range(2):
        audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))
        assert (audit.status, items_of(ctx, audit.id)) == ("completed", [])
        assert audit.counters.get("updated", 0) == audit.counters.get("created", 0) == 0


@pytest.mark.parametrize(
    "path",
    [
        r"/pulls/1/reviews$",  # the review with its comments
        r"/reviews/\d+/events$",  # its submission
        r"/comments/\d+/replies$",  # a reply
        r"/pulls/1/comments$",  # a comment of its own (the file-level one)
    ],
)
def test_a_lost_answer_never_writes_a_review_or_comment_twice(tmp_path, world, path):
    """The write happened, its answer was lost: found by its marker and finished, never
    sent again; GitHub ends as without the fault."""
    ctx, _, fake = world
    a = tmp_path / "a.git"
    review_forge(a)
    lost = fake.faults.commit_then_drop("POST", path)

    run = sync(ctx, SyncRequest(f"local:{a}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert lost.hits == 1
    ours = [r for r in fake.state.reviews(REPO, 1) if "reposync:marker" in r.body]
    assert len(ours) == 5
    assert all(r.state == "COMMENTED" for r in ours)
    bodies = [c.body for c in fake.state.review_comments(REPO, 1)]
    assert len(bodies) == len(set(bodies)) == 6
    b = tmp_path / "b.git"
    assert sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}")).status == "completed"
    assert structure(b) == structure(a)


def test_a_reply_to_a_deleted_comment_is_represented_and_comes_back(tmp_path, world):
    """GitHub knows no reply to a deleted comment: it becomes a comment of its own whose
    header says what it answered (counted ``detached_reply``), and reads back as the
    reply it was."""
    ctx, _, fake = world
    a = tmp_path / "a.git"
    ids = review_forge(a)
    with forge(a) as f:
        f.delete(ObjectType.REVIEW_COMMENT, ids["c1"])  # "yes" now answers nothing

    first = sync(ctx, SyncRequest(f"local:{a}", f"github:{REPO}"))

    assert first.status == "completed", first.report["problems"]
    assert first.report["data_gaps"]["detached_reply"] == {"review_comment": 1}
    [detached] = [c for c in fake.state.review_comments(REPO, 1) if "\n\nyes\n\n" in c.body]
    assert detached.in_reply_to_id is None
    assert "deleted" in detached.body.split("\n")[1]
    b = tmp_path / "b.git"
    back = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))
    assert back.status == "completed", back.report["problems"]
    assert structure(b) == structure(a)
    audit = sync(ctx, SyncRequest(f"local:{a}", f"github:{REPO}", full_audit=True))
    assert (audit.status, items_of(ctx, audit.id)) == ("completed", [])
