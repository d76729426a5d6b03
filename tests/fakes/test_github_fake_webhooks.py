"""The GitHub test server's webhooks, received by a real HTTP server on 127.0.0.1.

Each delivery is checked at the receiving end: GitHub's headers, both HMAC signatures over
the raw body, and the payload against GitHub's webhook schema (independently of the
fake's own check on send, which ``assert_clean`` also reports).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.github import GitHubFake
from tests.fakes.github.webhooks import DELIVERY_TIMEOUT, signature_256
from tests.fakes.webhook_receiver import Received, WebhookReceiver
from tests.fakes.webhook_schema import payload_problems

REPO = "acme/widgets"
SECRET = "It's a Secret to Everybody"
ZERO = "0" * 40


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as server:
        yield server


@pytest.fixture
def fake() -> Iterator[GitHubFake]:
    with GitHubFake() as server:
        server.state.create_repo(REPO, auto_init=True)
        yield server
        server.assert_clean()


def git(*args: str, cwd: Path | None = None) -> str:
    env = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Tester",
        "GIT_AUTHOR_EMAIL": "tester@example.com",
        "GIT_COMMITTER_NAME": "Tester",
        "GIT_COMMITTER_EMAIL": "tester@example.com",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def clone(fake: GitHubFake, tmp_path: Path, token: str) -> Path:
    work = tmp_path / "work"
    git("clone", "-q", fake.git_remote(REPO, token), str(work))
    return work


def commit(work: Path, name: str, text: str, message: str | None = None) -> str:
    (work / name).write_text(text)
    git("add", name, cwd=work)
    git("commit", "-qm", message or f"edit {name}", cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def api(fake: GitHubFake, path: str = "") -> str:
    return f"{fake.api_url}/repos/{REPO}{path}"


def checked(received: list[Received]) -> None:
    """Every received delivery is a valid payload of its event, signed with SECRET."""
    for got in received:
        assert got.signed_by(SECRET), got.headers
        problems = payload_problems(got.event, got.payload)
        assert problems == [], (got.event, got.payload.get("action"), problems)


# -- signatures and headers -------------------------------------------------------------


def test_signature_matches_githubs_documented_test_vector() -> None:
    assert signature_256(SECRET, b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_a_new_hook_is_pinged_with_githubs_headers_and_both_signatures(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    hook = fake.add_webhook(REPO, receiver.url, SECRET, events=["push", "issues"])
    [delivery] = fake.webhooks.flush()
    [got] = receiver.received
    repo = fake.state.repo(REPO)
    assert got.path == "/hooks/github"
    assert got.headers["content-type"] == "application/json"
    assert re.fullmatch(r"GitHub-Hookshot/[0-9a-f]{7}", got.headers["user-agent"])
    assert got.event == "ping"
    assert str(uuid.UUID(got.guid)) == got.guid == delivery.guid
    assert got.headers["x-github-hook-id"] == str(hook.id)
    assert got.headers["x-github-hook-installation-target-type"] == "repository"
    assert got.headers["x-github-hook-installation-target-id"] == str(repo.id)
    assert got.signed_by(SECRET)
    assert not got.signed_by("another secret")
    assert got.headers["x-hub-signature-256"] == signature_256(SECRET, got.body)
    assert got.body == delivery.body
    payload = got.payload
    assert payload["hook_id"] == hook.id
    assert payload["hook"]["events"] == ["push", "issues"]
    assert payload["hook"]["config"] == {
        "content_type": "json",
        "insecure_ssl": "0",
        "url": receiver.url,
        "secret": "********",
    }
    assert payload["repository"]["full_name"] == REPO
    assert payload_problems("ping", payload) == []
    assert (delivery.event, delivery.status_code, delivery.status) == ("ping", 200, "ok")
    assert len(delivery.attempts) == 1
    assert not delivery.attempts[0].redelivery


def test_a_hook_without_a_secret_sends_no_signature(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url)
    fake.webhooks.flush()
    [got] = receiver.received
    assert "x-hub-signature-256" not in got.headers
    assert "x-hub-signature" not in got.headers


def test_a_form_hook_sends_the_json_in_payload_and_signs_the_form_body(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, content_type="form")
    fake.webhooks.flush()
    [got] = receiver.received
    assert got.headers["content-type"] == "application/x-www-form-urlencoded"
    assert got.body.startswith(b"payload=")
    assert got.signed_by(SECRET)
    assert got.payload["zen"]


def test_the_body_is_compact_utf8_json_signed_as_sent(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issues"])
    token = fake.add_token("acme")
    fake.session(token).post(api(fake, "/issues"), json={"title": "Grüße ✓"}).raise_for_status()
    fake.webhooks.flush()
    got = receiver.of("issues", "opened")[0]
    assert "Grüße ✓".encode() in got.body
    assert b'{"action":"opened","issue":{' in got.body
    assert got.signed_by(SECRET)


def test_a_hook_receives_only_its_events_and_an_inactive_one_nothing(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issue_comment"])
    fake.add_webhook(REPO, receiver.url + "?off", SECRET, events=["*"], active=False)
    session = fake.session(token)
    session.post(api(fake, "/issues"), json={"title": "t"}).raise_for_status()
    session.post(api(fake, "/issues/1/comments"), json={"body": "hi"}).raise_for_status()
    fake.webhooks.flush()
    assert receiver.events() == ["ping", "issue_comment"]
    checked(receiver.received)


# -- every event the fake produces, against the schema ----------------------------------

EXPECTED = {
    ("ping", None),
    ("push", None),
    ("create", None),
    ("delete", None),
    ("label", "created"),
    ("label", "edited"),
    ("label", "deleted"),
    ("milestone", "created"),
    ("milestone", "edited"),
    ("milestone", "closed"),
    ("milestone", "opened"),
    ("milestone", "deleted"),
    ("issues", "opened"),
    ("issues", "labeled"),
    ("issues", "assigned"),
    ("issues", "milestoned"),
    ("issues", "edited"),
    ("issues", "closed"),
    ("issues", "reopened"),
    ("issues", "unlabeled"),
    ("issues", "unassigned"),
    ("issues", "demilestoned"),
    ("issues", "locked"),
    ("issues", "unlocked"),
    ("issue_comment", "created"),
    ("issue_comment", "edited"),
    ("issue_comment", "deleted"),
    ("pull_request", "opened"),
    ("pull_request", "edited"),
    ("pull_request", "labeled"),
    ("pull_request", "unlabeled"),
    ("pull_request", "assigned"),
    ("pull_request", "unassigned"),
    ("pull_request", "milestoned"),
    ("pull_request", "demilestoned"),
    ("pull_request", "review_requested"),
    ("pull_request", "review_request_removed"),
    ("pull_request", "synchronize"),
    ("pull_request", "closed"),
    ("pull_request", "reopened"),
    ("pull_request", "locked"),
    ("pull_request_review", "submitted"),
    ("pull_request_review", "edited"),
    ("pull_request_review_comment", "created"),
    ("pull_request_review_comment", "edited"),
    ("pull_request_review_comment", "deleted"),
    ("release", "created"),
    ("release", "published"),
    ("release", "released"),
    ("release", "prereleased"),
    ("release", "edited"),
    ("release", "unpublished"),
    ("release", "deleted"),
    ("repository", "edited"),
    ("repository", "renamed"),
    ("repository", "privatized"),
    ("repository", "publicized"),
    ("public", None),
}


def drive_every_event(fake: GitHubFake, tmp_path: Path) -> None:
    """Pushes and REST writes that, between them, cause every event in EXPECTED."""
    owner = fake.add_token("acme")
    fake.state.add_collaborator(REPO, "bob")
    bob = fake.session(fake.add_token("bob"))
    s = fake.session(owner)
    work = clone(fake, tmp_path, owner)
    commit(work, "a.txt", "one\n")
    git("push", "-q", "origin", "main", "main:feature", cwd=work)
    git("tag", "v1", cwd=work)
    git("push", "-q", "origin", "v1", cwd=work)
    git("push", "-q", "origin", ":feature", cwd=work)

    s.post(api(fake, "/labels"), json={"name": "bug", "color": "ff0000"}).raise_for_status()
    s.patch(api(fake, "/labels/bug"), json={"color": "00ff00", "description": "d"})
    s.post(api(fake, "/labels"), json={"name": "gone"}).raise_for_status()
    s.delete(api(fake, "/labels/gone")).raise_for_status()
    s.post(api(fake, "/milestones"), json={"title": "m1", "description": "x"}).raise_for_status()
    s.patch(api(fake, "/milestones/1"), json={"title": "m1b", "due_on": "2026-03-01T00:00:00Z"})
    s.patch(api(fake, "/milestones/1"), json={"state": "closed"}).raise_for_status()
    s.patch(api(fake, "/milestones/1"), json={"state": "open"}).raise_for_status()
    s.post(api(fake, "/milestones"), json={"title": "m2"}).raise_for_status()
    s.delete(api(fake, "/milestones/2")).raise_for_status()

    issue: dict[str, Any] = {"title": "t", "labels": ["bug"], "milestone": 1, "assignees": ["acme"]}
    s.post(api(fake, "/issues"), json=issue).raise_for_status()
    edit: dict[str, Any] = {
        "title": "t2",
        "body": "b",
        "state": "closed",
        "labels": [],
        "assignees": [],
    }
    s.patch(api(fake, "/issues/1"), json=edit | {"milestone": None}).raise_for_status()
    s.patch(api(fake, "/issues/1"), json={"state": "open"}).raise_for_status()
    s.put(api(fake, "/issues/1/lock"), json={"lock_reason": "resolved"}).raise_for_status()
    s.delete(api(fake, "/issues/1/lock")).raise_for_status()
    comment = s.post(api(fake, "/issues/1/comments"), json={"body": "hi"}).json()
    s.patch(api(fake, f"/issues/comments/{comment['id']}"), json={"body": "hi!"})
    s.delete(api(fake, f"/issues/comments/{comment['id']}")).raise_for_status()

    git("checkout", "-q", "-b", "topic", cwd=work)
    commit(work, "b.txt", "x\ny\n")
    git("push", "-q", "origin", "topic", cwd=work)
    pull = s.post(api(fake, "/pulls"), json={"title": "pr", "head": "topic", "base": "main"})
    number = pull.json()["number"]
    s.patch(api(fake, f"/pulls/{number}"), json={"title": "pr2", "body": "why"})
    s.post(api(fake, f"/issues/{number}/labels"), json={"labels": ["bug"]}).raise_for_status()
    s.delete(api(fake, f"/issues/{number}/labels/bug")).raise_for_status()
    s.patch(api(fake, f"/issues/{number}"), json={"assignees": ["acme"], "milestone": 1})
    s.patch(api(fake, f"/issues/{number}"), json={"assignees": [], "milestone": None})
    reviewers = api(fake, f"/pulls/{number}/requested_reviewers")
    s.post(reviewers, json={"reviewers": ["bob"]}).raise_for_status()
    s.delete(reviewers, json={"reviewers": ["bob"]}).raise_for_status()
    head = commit(work, "b.txt", "x\nz\n")
    git("push", "-q", "origin", "topic", cwd=work)
    review = bob.post(
        api(fake, f"/pulls/{number}/reviews"),
        json={
            "event": "COMMENT",
            "body": "ok",
            "comments": [{"path": "b.txt", "line": 2, "body": "?"}],
        },
    )
    review.raise_for_status()
    bob.put(api(fake, f"/pulls/{number}/reviews/{review.json()['id']}"), json={"body": "ok!"})
    single = bob.post(
        api(fake, f"/pulls/{number}/comments"),
        json={"body": "one", "commit_id": head, "path": "b.txt", "line": 1},
    ).json()
    bob.patch(api(fake, f"/pulls/comments/{single['id']}"), json={"body": "two"})
    bob.delete(api(fake, f"/pulls/comments/{single['id']}")).raise_for_status()
    s.patch(api(fake, f"/pulls/{number}"), json={"state": "closed"}).raise_for_status()
    s.patch(api(fake, f"/pulls/{number}"), json={"state": "open"}).raise_for_status()
    s.put(api(fake, f"/issues/{number}/lock"), json={}).raise_for_status()

    release = s.post(api(fake, "/releases"), json={"tag_name": "v2", "name": "Two"}).json()
    s.patch(api(fake, f"/releases/{release['id']}"), json={"body": "notes", "prerelease": True})
    s.patch(api(fake, f"/releases/{release['id']}"), json={"draft": True}).raise_for_status()
    s.delete(api(fake, f"/releases/{release['id']}")).raise_for_status()
    s.patch(api(fake), json={"description": "widgets", "private": True}).raise_for_status()
    s.patch(api(fake), json={"private": False, "name": "gadgets"}).raise_for_status()


def test_every_event_the_fake_sends_is_valid_against_githubs_schema(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["*"])
    drive_every_event(fake, tmp_path)
    deliveries = fake.webhooks.flush()
    assert {(d.event, d.action) for d in deliveries} == EXPECTED
    assert [r.guid for r in receiver.received] == [d.guid for d in deliveries]
    assert all(d.status == "ok" for d in deliveries)
    checked(receiver.received)
    fake.assert_clean()


def test_an_organizations_repository_events_carry_the_organization(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    fake.state.user("octo-org", type="Organization")
    fake.state.create_repo("octo-org/tools", auto_init=True, collaborators=["alice"])
    fake.add_webhook("octo-org/tools", receiver.url, SECRET, events=["*"])
    token = fake.add_token("alice")
    fake.session(token).post(f"{fake.api_url}/repos/octo-org/tools/issues", json={"title": "t"})
    work = tmp_path / "tools"
    git("clone", "-q", fake.git_remote("octo-org/tools", token), str(work))
    commit(work, "a.txt", "a\n")
    git("push", "-q", "origin", "main", cwd=work)
    fake.webhooks.flush()
    assert receiver.events() == ["ping", "issues", "push"]
    assert {r.payload["organization"]["login"] for r in receiver.received} == {"octo-org"}
    assert receiver.of("push")[0].payload["repository"]["organization"] == "octo-org"
    assert receiver.of("issues")[0].payload["sender"]["login"] == "alice"
    checked(receiver.received)


def test_the_schema_check_finds_a_broken_payload(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    """The check on send is real: a payload missing its issue is reported."""
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issues"])
    repo = fake.state.repo(REPO)
    fake.webhooks.emit(repo, "issues", lambda: {"action": "opened"})
    fake.webhooks.flush()
    assert payload_problems("issues", receiver.of("issues")[0].payload)
    assert any("webhook issues.opened" in p for p in fake.problems())
    fake.webhooks.violations.clear()


# -- pushes -----------------------------------------------------------------------------


def test_a_push_is_described_as_github_describes_it(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["push", "create", "delete"])
    work = clone(fake, tmp_path, token)
    before = git("rev-parse", "HEAD", cwd=work)
    first = commit(work, "a.txt", "one\n")
    git("rm", "-q", "README.md", cwd=work)
    second = commit(work, "b.txt", "two\n", message="second\n\nwith a body")
    git("push", "-q", "origin", "main", cwd=work)
    fake.webhooks.flush()
    [push] = receiver.of("push")
    payload = push.payload
    repo = fake.state.repo(REPO)
    assert (payload["ref"], payload["before"], payload["after"]) == (
        "refs/heads/main",
        before,
        second,
    )
    assert (payload["created"], payload["deleted"], payload["forced"]) == (False, False, False)
    assert payload["base_ref"] is None
    assert [c["id"] for c in payload["commits"]] == [first, second]
    assert payload["commits"][0]["added"] == ["a.txt"]
    assert payload["commits"][1]["added"] == ["b.txt"]
    assert payload["commits"][1]["removed"] == ["README.md"]
    assert payload["commits"][1]["message"] == "second\n\nwith a body\n"
    assert payload["commits"][1]["author"] == {"name": "Tester", "email": "tester@example.com"}
    assert all(c["distinct"] for c in payload["commits"])
    assert payload["head_commit"]["id"] == second
    assert payload["compare"].endswith(f"/compare/{before[:12]}...{second[:12]}")
    assert payload["pusher"]["name"] == "acme"
    assert payload["sender"]["login"] == "acme"
    assert repo.pushed_at is not None
    assert payload["repository"]["pushed_at"] == int(repo.pushed_at.timestamp())
    assert payload["repository"]["master_branch"] == "main"
    assert receiver.of("create") == []  # main existed
    checked(receiver.received)


def test_new_and_removed_branches_and_tags_send_create_and_delete(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["push", "create", "delete"])
    work = clone(fake, tmp_path, token)
    tip = git("rev-parse", "HEAD", cwd=work)
    git("tag", "-a", "v1", "-m", "release one", cwd=work)
    tag_object = git("rev-parse", "v1", cwd=work)
    git("push", "-q", "origin", "main:topic", "v1", cwd=work)
    git("push", "-q", "origin", ":topic", cwd=work)
    fake.webhooks.flush()
    pushes = {p.payload["ref"]: p.payload for p in receiver.of("push")}
    assert set(pushes) == {"refs/heads/topic", "refs/tags/v1"}
    created = pushes["refs/tags/v1"]
    assert (created["before"], created["after"], created["created"]) == (ZERO, tag_object, True)
    assert created["head_commit"]["id"] == tip  # the annotated tag, peeled
    assert created["commits"] == []  # nothing new: the commit is on main
    assert created["base_ref"] == "refs/heads/main"
    assert created["compare"].endswith("/compare/v1")
    made = [(r.payload["ref"], r.payload["ref_type"]) for r in receiver.of("create")]
    assert sorted(made) == [("topic", "branch"), ("v1", "tag")]
    assert receiver.of("create")[0].payload["master_branch"] == "main"
    [deleted] = receiver.of("delete")
    assert (deleted.payload["ref"], deleted.payload["ref_type"]) == ("topic", "branch")
    [gone] = [p.payload for p in receiver.of("push") if p.payload["deleted"]]
    assert (gone["before"], gone["after"], gone["head_commit"]) == (tip, ZERO, None)
    checked(receiver.received)


def test_a_forced_push_is_flagged(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET)
    work = clone(fake, tmp_path, token)
    old = git("rev-parse", "HEAD", cwd=work)
    git("commit", "-q", "--amend", "-m", "rewritten", cwd=work)
    new = git("rev-parse", "HEAD", cwd=work)
    git("push", "-q", "--force", "origin", "main", cwd=work)
    fake.webhooks.flush()
    [push] = receiver.of("push")
    assert (push.payload["before"], push.payload["after"], push.payload["forced"]) == (
        old,
        new,
        True,
    )
    assert [c["id"] for c in push.payload["commits"]] == [new]


def test_more_than_three_tags_at_once_send_no_tag_events(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    """GitHub: "Events will not be created for tags when more than three tags are pushed
    at once." The branch pushed with them still has its events."""
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["push", "create"])
    work = clone(fake, tmp_path, token)
    for n in range(4):
        git("tag", f"v{n}", cwd=work)
    git("push", "-q", "origin", "main:fresh", "--tags", cwd=work)
    git("tag", "w1", cwd=work)
    git("tag", "w2", cwd=work)
    git("tag", "w3", cwd=work)
    git("push", "-q", "origin", "w1", "w2", "w3", cwd=work)
    fake.webhooks.flush()
    pushed = sorted(r.payload["ref"] for r in receiver.of("push"))
    assert pushed == ["refs/heads/fresh", "refs/tags/w1", "refs/tags/w2", "refs/tags/w3"]
    assert sorted(r.payload["ref"] for r in receiver.of("create")) == ["fresh", "w1", "w2", "w3"]


def test_a_rejected_ref_update_sends_nothing(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["push"])
    work = clone(fake, tmp_path, token)
    with pytest.raises(subprocess.CalledProcessError):
        git("push", "-q", "origin", "HEAD:refs/pull/1/head", cwd=work)
    fake.webhooks.flush()
    assert receiver.of("push") == []


def test_a_push_to_an_open_pull_requests_head_sends_synchronize(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    token = fake.add_token("acme")
    work = clone(fake, tmp_path, token)
    git("checkout", "-q", "-b", "topic", cwd=work)
    old = commit(work, "t.txt", "1\n")
    git("push", "-q", "origin", "topic", cwd=work)
    fake.state.add_pull(REPO, "pr", head="topic")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["pull_request"])
    new = commit(work, "t.txt", "2\n")
    git("push", "-q", "origin", "topic", cwd=work)
    fake.webhooks.flush()
    [sync] = receiver.of("pull_request", "synchronize")
    assert (sync.payload["before"], sync.payload["after"]) == (old, new)
    assert sync.payload["pull_request"]["head"]["sha"] == new
    checked(receiver.received)


def test_a_payload_over_the_cap_is_not_delivered(
    fake: GitHubFake, receiver: WebhookReceiver, tmp_path: Path
) -> None:
    """GitHub delivers nothing over 25 MB; the cap is lowered here to keep the test small."""
    token = fake.add_token("acme")
    fake.add_webhook(REPO, receiver.url, SECRET, events=["push"])
    fake.webhooks.max_payload_bytes = 50_000
    work = clone(fake, tmp_path, token)
    commit(work, "a.txt", "a\n", message="x" * 60_000)
    git("push", "-q", "origin", "main", cwd=work)
    commit(work, "b.txt", "b\n")
    git("push", "-q", "origin", "main", cwd=work)
    fake.webhooks.flush()
    assert len(receiver.of("push")) == 1
    assert [event for event, _ in fake.webhooks.oversized] == ["push"]
    assert fake.webhooks.max_payload_bytes < 25 * 1024 * 1024 == 26_214_400


# -- order, redelivery, faults ----------------------------------------------------------


def comment_edits(fake: GitHubFake, count: int) -> list[str]:
    """``count`` edits of one comment; their bodies in the order they were made."""
    session = fake.session(fake.add_token("acme"))
    session.post(api(fake, "/issues"), json={"title": "t"}).raise_for_status()
    made = session.post(api(fake, "/issues/1/comments"), json={"body": "start"}).json()
    bodies = [f"edit {n}" for n in range(count)]
    for body in bodies:
        session.patch(api(fake, f"/issues/comments/{made['id']}"), json={"body": body})
    return bodies


def edited_bodies(receiver: WebhookReceiver) -> list[str]:
    return [r.payload["comment"]["body"] for r in receiver.of("issue_comment", "edited")]


def test_deliveries_arrive_in_the_order_of_the_changes(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issue_comment"])
    bodies = comment_edits(fake, 8)
    fake.webhooks.flush()
    assert edited_bodies(receiver) == bodies


def test_an_out_of_order_window_permutes_each_group(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issue_comment"])
    fake.webhooks.flush()  # the ping first
    fake.webhooks.out_of_order(3, "reverse")
    bodies = comment_edits(fake, 5)  # created, then edits 0..4: groups of 3, then 3
    fake.webhooks.flush()
    fake.webhooks.in_order()
    created = receiver.of("issue_comment", "created")[0]
    assert receiver.received.index(created) == 3  # last of the first group
    assert edited_bodies(receiver) == [bodies[1], bodies[0], bodies[4], bodies[3], bodies[2]]
    checked(receiver.received)


def test_pause_holds_and_release_shuffles_reproducibly(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issue_comment"])
    fake.webhooks.flush()
    fake.webhooks.pause()
    bodies = comment_edits(fake, 6)
    with pytest.raises(RuntimeError, match="held by pause"):
        fake.webhooks.flush()
    assert len(fake.webhooks.held) == 7
    assert receiver.of("issue_comment") == []
    assert fake.webhooks.release("shuffle", seed=7) == 7
    fake.webhooks.flush()
    got = edited_bodies(receiver)
    assert sorted(got) == sorted(bodies)
    assert got != bodies
    expected = list(range(7))
    random.Random(7).shuffle(expected)
    order = ["start", *bodies]
    assert [r.payload["comment"]["body"] for r in receiver.received[1:]] == [
        order[i] for i in expected
    ]


def test_a_redelivery_repeats_the_body_and_guid_signed_with_the_current_secret(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    hook = fake.add_webhook(REPO, receiver.url, SECRET)
    [ping] = fake.webhooks.flush()
    fake.webhooks.update(hook, secret="rotated")
    again = fake.webhooks.redeliver(ping.guid)
    fake.webhooks.flush()
    first, second = receiver.received
    assert again is ping
    assert first.guid == second.guid == ping.guid
    assert first.body == second.body
    assert first.signed_by(SECRET)
    assert second.signed_by("rotated")
    assert [a.redelivery for a in ping.attempts] == [False, True]
    assert ping.attempts[0].delivery_id == ping.id != ping.attempts[1].delivery_id


def test_a_dropped_delivery_is_recorded_failed_and_repaired_by_redelivery(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issues"])
    fake.webhooks.faults.drop("issues", action="opened")
    fake.session(fake.add_token("acme")).post(api(fake, "/issues"), json={"title": "t"})
    fake.webhooks.flush()
    [dropped] = fake.webhooks.deliveries_of("issues")
    assert receiver.of("issues") == []
    assert (dropped.status, dropped.status_code) == ("failed", None)
    assert dropped.attempts[0].fault == "drop"
    fake.webhooks.redeliver(dropped)
    fake.webhooks.flush()
    [got] = receiver.of("issues")
    assert got.guid == dropped.guid
    assert dropped.status == "ok"
    assert dropped.delivered


def test_a_duplicated_delivery_arrives_twice_with_one_guid(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issues"])
    fake.webhooks.faults.duplicate("issues")
    fake.session(fake.add_token("acme")).post(api(fake, "/issues"), json={"title": "t"})
    fake.webhooks.flush()
    first, second = receiver.of("issues")
    assert first.guid == second.guid
    assert first.body == second.body
    [delivery] = fake.webhooks.deliveries_of("issues")
    assert len(delivery.attempts) == 2


def test_a_late_delivery_still_leads_the_ones_after_it(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    """Latency delays the sender, not the order: in-order delivery stays in order."""
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issues"])
    fake.webhooks.faults.latency("issues", 0.2, action="opened")
    session = fake.session(fake.add_token("acme"))
    session.post(api(fake, "/issues"), json={"title": "t"}).raise_for_status()
    session.patch(api(fake, "/issues/1"), json={"state": "closed"}).raise_for_status()
    fake.webhooks.flush()
    assert [r.payload["action"] for r in receiver.of("issues")] == ["opened", "closed"]
    opened, closed = fake.webhooks.deliveries_of("issues")
    assert (opened.attempts[0].fault, closed.attempts[0].fault) == ("latency", None)


def test_a_bad_signature_fault_signs_with_another_secret(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    fake.add_webhook(REPO, receiver.url, SECRET, events=["issues"])
    fake.webhooks.faults.bad_signature("issues")
    session = fake.session(fake.add_token("acme"))
    session.post(api(fake, "/issues"), json={"title": "forged"})
    session.post(api(fake, "/issues"), json={"title": "genuine"})
    fake.webhooks.flush()
    forged, genuine = receiver.of("issues")
    assert not forged.signed_by(SECRET)
    assert genuine.signed_by(SECRET)


def test_a_slow_receiver_fails_the_delivery_after_the_timeout(fake: GitHubFake) -> None:
    """The receiver acted but answered late: GitHub records a failure (10 s by default;
    the fake's timeout is lowered here)."""
    assert fake.webhooks.timeout == DELIVERY_TIMEOUT == 10.0
    fake.webhooks.timeout = 0.3
    with WebhookReceiver(delay=lambda got: 2.0 if got.event == "issues" else 0.0) as slow:
        fake.add_webhook(REPO, slow.url, SECRET, events=["issues"])
        fake.session(fake.add_token("acme")).post(api(fake, "/issues"), json={"title": "t"})
        fake.webhooks.flush()
        [late] = fake.webhooks.deliveries_of("issues")
        assert len(slow.of("issues")) == 1
        assert (late.status, late.status_code) == ("failed", None)
        assert "timed out" in (late.attempts[0].error or "")


def test_a_timeout_fault_gives_up_early_on_one_delivery(fake: GitHubFake) -> None:
    with WebhookReceiver(delay=lambda got: 1.0 if got.event == "issues" else 0.0) as slow:
        fake.add_webhook(REPO, slow.url, SECRET, events=["issues"])
        fake.webhooks.faults.timeout("issues", 0.2)
        fake.session(fake.add_token("acme")).post(api(fake, "/issues"), json={"title": "t"})
        fake.webhooks.flush()
        [late] = fake.webhooks.deliveries_of("issues")
        assert late.status == "failed"
        assert late.attempts[0].fault == "timeout"


def test_an_error_answer_or_no_receiver_fails_without_retry(fake: GitHubFake) -> None:
    with WebhookReceiver(status=503) as failing:
        fake.add_webhook(REPO, failing.url, SECRET)
        [ping] = fake.webhooks.flush()
    assert (ping.status, ping.status_code, len(ping.attempts)) == ("failed", 503, 1)
    closed = failing.url  # that server is gone now
    fake.add_webhook(REPO, closed, SECRET)
    unreachable = fake.webhooks.flush()[-1]
    assert unreachable.status_code is None
    assert "failed to connect" in (unreachable.attempts[0].error or "")


# -- GitHub Apps ------------------------------------------------------------------------


def test_an_apps_webhook_gets_its_repositories_events_and_its_installations(
    fake: GitHubFake, receiver: WebhookReceiver
) -> None:
    install = fake.install_app("acme", repositories=[REPO])
    hook = fake.set_app_webhook(install, receiver.url, SECRET)
    fake.state.create_repo("acme/other")
    token = fake.installation_token(install)
    fake.session(token).post(api(fake, "/issues"), json={"title": "by the app"})
    fake.change_installation_repositories(install, added=["acme/other"], removed=[REPO])
    fake.session(fake.add_token("acme")).post(api(fake, "/issues"), json={"title": "unseen"})
    second = fake.add_installation(install, "bob")
    fake.uninstall_app(second)
    fake.webhooks.flush()
    assert receiver.events() == [
        "ping",
        "issues",
        "installation_repositories",
        "installation_repositories",
        "installation",
        "installation",
    ]
    issue = receiver.of("issues")[0]
    assert issue.headers["x-github-hook-installation-target-type"] == "integration"
    assert issue.headers["x-github-hook-installation-target-id"] == str(install.app.id)
    assert issue.headers["x-github-hook-id"] == str(hook.id)
    assert issue.payload["installation"]["id"] == install.installation.id
    assert issue.payload["issue"]["performed_via_github_app"]["slug"] == install.app.slug
    added, removed = receiver.of("installation_repositories")
    assert [r["full_name"] for r in added.payload["repositories_added"]] == ["acme/other"]
    assert [r["full_name"] for r in removed.payload["repositories_removed"]] == [REPO]
    created, deleted = receiver.of("installation")
    assert (created.payload["action"], deleted.payload["action"]) == ("created", "deleted")
    assert created.payload["installation"]["account"]["login"] == "bob"
    assert second.id not in fake.state.installations
    checked(receiver.received)
