"""Read economy without ETags: an inventory of a Forgejo repository reads what changed
since the last one (``since``, on the instance's clock) and counts the rest; a deletion,
which ``since`` cannot show, is caught by the count, and a snapshot too old is not
trusted."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reposync.providers.base import EndpointSpec
from reposync.providers.forgejo import ForgejoProvider
from reposync.providers.forgejo.listings import MAX_AGE
from reposync.sync.vocabulary import ObjectType
from tests.fakes.forge_server.clock import ManualClock
from tests.fakes.forgejo import ForgejoFake
from tests.forgejo_env import forgejo_environment, forgejo_settings, locator
from tests.gitrepo import commit_on

T = ObjectType
REPO = "acme/widgets"
TYPES = [T.ISSUE, T.PULL_REQUEST, T.ISSUE_COMMENT, T.REVIEW, T.REVIEW_COMMENT]
#: Forgejo narrows these listings by nothing: read whole every time.
UNFILTERED = ("/labels", "/milestones", "/releases")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[ForgejoFake, ManualClock, Any]]:
    clock = ManualClock()
    with ForgejoFake(clock=clock) as fake:
        repo = fake.state.create_repo(REPO, auto_init=True)
        commit_on(repo.git_dir, "refs/heads/feature", "work")
        for n in range(3):
            issue = fake.state.create_issue(REPO, f"issue {n}", author="ann")
            fake.state.create_comment(REPO, issue.index, f"comment on {n}", author="bob")
        pull = fake.state.create_pull(REPO, "pull", "feature", "main", author="ann")
        token = fake.add_token("acme")
        session = fake.session(token)
        review = session.post(
            f"{fake.api_url}/repos/{REPO}/pulls/{pull.index}/reviews",
            json={"body": "notes", "event": "COMMENT"},
        ).json()
        session.post(
            f"{fake.api_url}/repos/{REPO}/pulls/{pull.index}/reviews/{review['id']}/comments",
            json={"path": "README.md", "body": "why?", "new_position": 1},
        )
        environment = forgejo_environment(forgejo_settings(fake, tmp_path, token), fake)
        clock.advance(60)  # the first listing is after every write, past the margin

        def inventory() -> dict[tuple[ObjectType, str], str]:
            provider = ForgejoProvider.open(
                EndpointSpec("forgejo", locator(fake, REPO)), environment
            )
            try:
                entries = provider.inventory_index(TYPES).entries
                return {(e.object_type, e.identity): e.content_hash for e in entries}
            finally:
                provider.close()

        yield fake, clock, inventory
        fake.assert_clean()


def read_since(fake: ForgejoFake, start: int) -> dict[str, int]:
    """Objects answered per path since request ``start`` (the repository's look-up and
    the listings Forgejo cannot narrow left out)."""
    read: dict[str, int] = {}
    for record in fake.requests[start:]:
        path = record.path.removeprefix(f"/repos/{REPO}")
        if path and not path.startswith(UNFILTERED) and record.returned:
            read[path] = read.get(path, 0) + record.returned
    return read


def test_nothing_changed_reads_nothing_and_lists_the_same(world):
    """The second inventory asks since the first (less a margin) and reads no object."""
    fake, clock, inventory = world
    first = inventory()
    assert {t for t, _ in first} == set(TYPES)
    clock.advance(60)
    start = len(fake.requests)
    assert inventory() == first
    assert read_since(fake, start) == {}
    narrowed = [r for r in fake.requests[start:] if r.path.endswith(("/issues", "/comments"))]
    assert narrowed
    assert all("since" in r.query or r.query.get("page") == "1000000000" for r in narrowed)


def test_a_change_is_the_only_object_read_again(world):
    """A new comment and an edited issue: those two are read, nothing else."""
    fake, clock, inventory = world
    first = inventory()
    clock.advance(60)
    fake.state.create_comment(REPO, 2, "a late comment", author="carol")
    issue = fake.state.repo(REPO).issues[1]
    issue.title, issue.updated = "issue 0 (edited)", clock()
    start = len(fake.requests)
    second = inventory()
    assert read_since(fake, start) == {"/issues": 1, "/issues/comments": 1}
    assert len(second) == len(first) + 1
    assert second[(T.ISSUE, "1")] != first[(T.ISSUE, "1")]


def test_a_review_moves_its_pull_request_and_only_its_reviews_are_read(world):
    """A review submitted later moves its pull request's update time: that pull request
    and its reviews are read again, no other."""
    fake, clock, inventory = world
    first = inventory()
    clock.advance(60)
    session = fake.session(fake.add_token("acme"))
    session.post(
        f"{fake.api_url}/repos/{REPO}/pulls/4/reviews", json={"body": "more", "event": "COMMENT"}
    )
    start = len(fake.requests)
    second = inventory()
    assert read_since(fake, start) == {
        "/issues": 1,
        "/pulls/4": 1,
        "/pulls/4/reviews": 2,
        "/pulls/4/reviews/1/comments": 1,
    }
    assert len([k for k in second if k[0] is T.REVIEW]) == 2
    assert len(second) == len(first) + 1


def test_a_deletion_is_counted_and_everything_is_listed_afresh(world):
    """``since`` shows no deleted issue; the count does, and the listing starts over."""
    fake, clock, inventory = world
    first = inventory()
    assert (T.ISSUE, "2") in first
    clock.advance(60)
    repo = fake.state.repo(REPO)
    del repo.issues[2]  # as an administrator deletes it: with its comments
    repo.comments = {i: c for i, c in repo.comments.items() if c.index != 2}
    start = len(fake.requests)
    second = inventory()
    assert (T.ISSUE, "2") not in second
    assert read_since(fake, start)["/issues"] >= 3  # listed whole again


def test_the_snapshot_is_private_and_not_trusted_when_old(world, tmp_path):
    """The kept listing is readable by the service's user only; one older than MAX_AGE
    is ignored and the repository listed whole."""
    fake, clock, inventory = world
    inventory()
    [snapshot] = (tmp_path / "http-cache" / "forgejo").glob("*.json")
    assert stat.S_IMODE(snapshot.stat().st_mode) == 0o600
    kept = json.loads(snapshot.read_text())
    taken = kept["taken"]
    assert taken is not None
    from datetime import datetime

    kept["taken"] = (datetime.fromisoformat(taken) - MAX_AGE - timedelta(minutes=1)).isoformat()
    snapshot.write_text(json.dumps(kept))
    clock.advance(60)
    start = len(fake.requests)
    inventory()
    assert read_since(fake, start)["/issues"] == 4  # every issue and pull request again
