"""The pull-request family keeps its shape through every target and back (issue 10 #1, #2).

Review requests are the target provider's business: a local forge holds them natively,
GitHub shows them as a projection comment that its reads present as the review request
again, so a handoff's reverse dry-run finds them equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.context import ServiceContext
from reposync.service.embedded import SyncRequest, bind, sync
from reposync.service.handoff import handoff
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world
from tests.gitrepo import commit_on, generate, refs, set_ref
from tests.integration.test_forge_sync import WHEN, forge

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
        pulls = {p.identity: p.number for p in f.list(ObjectType.PULL_REQUEST)}
        return sorted(
            (pulls[r.refs["parent"].identity], r.payload["reviewer"], r.content_hash)
            for r in f.list(ObjectType.REVIEW_REQUEST)
        )


def comments(path: Path) -> list[Any]:
    with forge(path) as f:
        return f.list(ObjectType.ISSUE_COMMENT)


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
