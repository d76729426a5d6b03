"""Local forge <-> GitHub, end to end through the pipeline, against the GitHub test server.

Every request reposync sends and every response it gets is validated against GitHub's
published description (the recorder); the server validates its own responses too.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.models.db import Database
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.service.embedded import SyncRequest, sync
from reposync.sync.vocabulary import ObjectType
from tests.github_env import github_context
from tests.gitrepo import generate, refs
from tests.integration.test_forge_sync import WHEN, forge, populate

REPO = "acme/widgets"
#: Types whose canonical content must be equal after a round trip through GitHub.
KEPT = [
    t
    for t in ObjectType
    if t not in (ObjectType.GIT_REF, ObjectType.REACTION, ObjectType.REVIEW_REQUEST)
]


@pytest.fixture
def world(tmp_path: Path, github_fake):
    github_fake.state.create_repo(REPO, private=True)
    token = github_fake.add_token("acme")
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    ctx, recorder = github_context(github_fake, db, tmp_path / "data", token)
    yield ctx, recorder, github_fake
    db.dispose()
    assert recorder.violations == []


def local_state(path: Path, types: list[ObjectType]) -> dict[str, Counter[str]]:
    """Content hashes per type (identities differ between forges; content must not)."""
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        return {t.value: Counter(o.content_hash for o in provider.forge.list(t)) for t in types}
    finally:
        provider.close()


def items(ctx: Any, run_id: int) -> list[RunItem]:
    with ctx.db.session() as session:
        return list(session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars())


def test_local_to_github_converges_then_a_rerun_costs_nothing(tmp_path, world):
    """Every type reaches GitHub; the next Run writes nothing and only sees 304s."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    ids = populate(source)
    request = SyncRequest(f"local:{source}", f"github:{REPO}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    assert first.counters["created"] == len(ids) - 1 + 3  # the reaction is archived
    gaps = first.report["data_gaps"]
    assert gaps["archive_only"] == {"reaction": 1}
    assert gaps["projected"]["review_request"] == 1
    assert gaps["attributed"]["issue"] == 2  # GitHub cannot set authors: headers
    github_refs = {name for name in _git_refs(fake) if name.startswith("refs/heads/")}
    assert github_refs == {n for n in refs(source) if n.startswith("refs/heads/")}
    issues = {i.number: i for i in fake.state.issues(REPO)}
    assert {1, 2, 3} <= set(issues)  # numbers kept

    before = len(fake.requests_log)
    second = sync(ctx, request)
    assert second.status == "completed"
    assert items(ctx, second.id) == []
    rest = [r for r in list(fake.requests_log)[before:] if r.host != "git"]
    assert rest, "the second Run still looks the repository up"
    # The repository's own metadata changed with the first Run's pushes (pushed_at), so
    # its first look-up is one fresh read; every other read is a free 304.
    fresh = [(r.method, r.path) for r in rest if not r.not_modified]
    assert fresh in ([], [("GET", f"/repos/{REPO}")]), fresh
    assert sum(r.counted_primary for r in rest) <= 1
    assert all(r.method == "GET" for r in rest)


def _git_refs(fake) -> dict[str, str]:
    return refs(Path(fake.state.git_dir(REPO)))


def test_github_to_local_then_round_trip_keeps_every_object(tmp_path, world):
    """local -> GitHub -> local: canonical states equal, except what the report counts."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    populate(source)
    assert sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}")).status == "completed"

    back = tmp_path / "back.git"
    returned = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{back}"))

    assert returned.status == "completed", returned.report["problems"]
    assert local_state(back, KEPT) | {"issue_comment": Counter()} == local_state(source, KEPT) | {
        "issue_comment": Counter()
    }
    # Comments: the source's, plus the review request GitHub shows as a comment.
    with forge(back) as f:
        bodies = [c.payload["body"] for c in f.list(ObjectType.ISSUE_COMMENT)]
    assert sorted(bodies) == sorted(
        ["me too", "LGTM?", "Review requested from @dave (projected by reposync)."]
    )
    # GitHub creates a release's tag when it does not exist: it comes back as a ref.
    assert set(refs(back)) == set(refs(source)) | {"refs/tags/v1.0"}

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
        [issue] = f.list(ObjectType.ISSUE)
        [comment] = f.list(ObjectType.ISSUE_COMMENT)
    assert (issue.number, issue.payload["author"], issue.payload["labels"]) == (
        number,
        "octocat",
        ["triage"],
    )
    assert comment.payload["author"] == "hubot"
