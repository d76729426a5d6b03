"""GitHub's listings for ``forge.markers``: native reviews exist only per pull request,
so a review's marker is looked for pull request by pull request (after the comments
that carry reviews), and a lost review create is found under its own pull request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.providers.base import TargetRef, WriteStatus
from reposync.providers.forge.bodies import compose
from reposync.sync import objects
from reposync.sync.canonical import ObjectRef
from reposync.sync.vocabulary import ObjectType
from tests.fakes.github import GitHubFake
from tests.gitrepo import commit_on
from tests.providers.test_conformance import create
from tests.providers.test_github_provider import REPO, Connection, pat_connection

T = ObjectType
WHEN = "2026-01-02T03:04:05Z"


@pytest.fixture
def fake(github_fake: GitHubFake) -> GitHubFake:
    github_fake.state.create_repo(REPO, auto_init=True)
    return github_fake


@pytest.fixture
def conn(fake: GitHubFake, tmp_path: Path) -> Iterator[Connection]:
    connection = pat_connection(fake, tmp_path / "data", fake.add_token("acme"))
    yield connection
    connection.close()


def open_pull(fake: GitHubFake, branch: str) -> tuple[int, str]:
    """A pull request opened natively on a branch of its own: its number and head."""
    head = commit_on(Path(fake.state.git_dir(REPO)), f"refs/heads/{branch}", f"work on {branch}")
    return fake.state.add_pull(REPO, f"Pull {branch}", head=branch).number, head


def test_native_reviews_are_found_by_marker_pull_request_by_pull_request(conn, fake):
    """Markers in native reviews of two pull requests are found; one on no review is
    proved absent, every pull request having been read."""
    first, _ = open_pull(fake, "one")
    second, _ = open_pull(fake, "two")
    fake.state.add_comment(REPO, first, body="a comment that carries nothing")
    r1 = fake.state.add_review(REPO, first, body=compose("lgtm", marker="m-first"))
    r2 = fake.state.add_review(REPO, second, body=compose("nit", marker="m-second"))
    provider = conn.open()
    found = provider.find_by_markers(T.REVIEW, ["m-first", "m-second"])
    assert found == {"m-first": f"{first}/{r1.id}", "m-second": f"{second}/{r2.id}"}
    assert provider.markers_absent(T.REVIEW, ["m-first", "never"]) == {"never"}
    conn.assert_clean()


def test_a_lost_review_create_is_found_under_its_pull_request_and_submitted(conn, fake):
    """The review GitHub made before the answer was lost is the result, submitted, and
    no second review is created; its own pull request's reviews are all that is read."""
    number, head = open_pull(fake, "topic")
    payload = objects.review(
        "x",
        "1",
        parent=ObjectRef(T.PULL_REQUEST, "x"),
        parent_key="#1",
        state="COMMENTED",
        body="Looks good.",
        commit_id=head,
        author="ann",
        submitted_at=WHEN,
    ).payload
    write = create(
        T.REVIEW, payload, 1, parent=TargetRef(T.PULL_REQUEST, str(number), "pull-marker")
    )
    fake.faults.commit_then_drop("POST", r"/pulls/\d+/reviews$", drop="close")
    [result] = conn.open().apply_batch([write])
    ours = [r for r in fake.state.reviews(REPO, number) if write.marker in r.body]
    assert [r.state for r in ours] == ["COMMENTED"]
    assert (result.status, result.target_identity) == (WriteStatus.OK, f"{number}/{ours[0].id}")
    assert fake.requests_log.matching("GET", r"/repos/[^/]+/[^/]+/pulls$") == []
    assert [r.fault for r in fake.requests_log.faults_fired()] == ["commit_then_drop"]
    conn.assert_clean()
