"""The Forgejo test server's webhooks: Forgejo's headers, signature, payloads and events."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from tests.fakes.forgejo import forgejo_fake, signature
from tests.fakes.test_github_fake import git
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.gitrepo import commit_on, generate

REPO = "acme/widgets"

fake = pytest.fixture(name="fake")(forgejo_fake)


def test_a_delivery_has_forgejo_s_headers_and_a_hex_hmac_of_the_body(fake):
    """X-Forgejo-Signature (and X-Gitea-Signature) is the bare hex HMAC-SHA256 of the raw
    body; event, type and delivery id come three ways; the body is Go's indented JSON."""
    fake.state.create_repo(REPO, auto_init=True)
    s = fake.session(fake.add_token("acme"))
    with WebhookReceiver() as receiver:
        fake.add_webhook(REPO, receiver.url, secret="s3cret", events=["issues"])
        s.post(f"{fake.api_url}/repos/{REPO}/issues", json={"title": "a <b> & c"})
        fake.webhooks.flush()
        [got] = receiver.received
    h = got.headers
    expected = hmac.new(b"s3cret", got.body, hashlib.sha256).hexdigest()
    assert (
        h["x-forgejo-signature"]
        == h["x-gitea-signature"]
        == expected
        == signature("s3cret", got.body)
    )
    assert h["x-hub-signature-256"] == f"sha256={expected}"
    assert h["x-forgejo-event"] == h["x-gitea-event"] == "issues"
    assert h["x-forgejo-event-type"] == "issues"
    assert h["x-forgejo-delivery"] == h["x-gitea-delivery"] == fake.webhook_deliveries[0].guid
    assert got.body.startswith(b'{\n  "action": "opened"')
    assert b"\\u003cb\\u003e \\u0026 c" in got.body  # Go escapes HTML characters
    payload = json.loads(got.body)
    assert (payload["number"], payload["issue"]["title"]) == (1, "a <b> & c")
    fake.assert_clean()


def test_finer_event_types_reach_hooks_of_their_group(fake):
    """A label change is X-Forgejo-Event issues with type issue_label; a comment on a pull
    request is issue_comment with type pull_request_comment; an approval is
    pull_request_approved; a hook of other events hears none of them."""
    repo = fake.state.create_repo(REPO, auto_init=True)
    commit_on(repo.git_dir, "refs/heads/feature", "feature work")
    fake.state.add_collaborator(REPO, "bob")
    s = fake.session(fake.add_token("acme"))
    bob = fake.session(fake.add_token("bob"))
    with WebhookReceiver() as receiver, WebhookReceiver() as releases_only:
        fake.add_webhook(
            REPO,
            receiver.url,
            events=["issues", "issue_comment", "pull_request", "pull_request_review"],
        )
        fake.add_webhook(REPO, releases_only.url, events=["release"])
        label = s.post(
            f"{fake.api_url}/repos/{REPO}/labels", json={"name": "bug", "color": "ff0000"}
        ).json()
        s.post(f"{fake.api_url}/repos/{REPO}/issues", json={"title": "x"})
        s.post(f"{fake.api_url}/repos/{REPO}/issues/1/labels", json={"labels": [label["id"]]})
        bob.post(
            f"{fake.api_url}/repos/{REPO}/pulls",
            json={"head": "feature", "base": "main", "title": "p"},
        )
        s.post(f"{fake.api_url}/repos/{REPO}/issues/2/comments", json={"body": "looks fine"})
        s.post(
            f"{fake.api_url}/repos/{REPO}/pulls/2/reviews", json={"event": "APPROVED", "body": "ok"}
        )
        fake.webhooks.flush()
        seen = [
            (r.headers["x-forgejo-event"], r.headers["x-forgejo-event-type"], r.payload["action"])
            for r in receiver.received
        ]
        assert releases_only.received == []
    assert seen == [
        ("issues", "issues", "opened"),
        ("issues", "issue_label", "label_updated"),
        ("pull_request", "pull_request", "opened"),
        ("issue_comment", "pull_request_comment", "created"),
        ("pull_request_approved", "pull_request_review_approved", "reviewed"),
    ]
    fake.assert_clean()


def test_a_push_sends_push_and_create_with_the_commits_and_forgejo_s_compare(fake, tmp_path):
    """Pushing a new branch sends push (commits, head_commit, compare beside compare_url
    for a forgejo hook) and create with the full ref; a gitea hook's create has the short
    ref, as Forgejo shortens it for Woodpecker."""
    fake.state.create_repo(REPO)
    token = fake.add_token("acme")
    source = generate(tmp_path / "source.git", commits=2, branches=0, tags=0)
    with WebhookReceiver() as forgejo_hook, WebhookReceiver() as gitea_hook:
        fake.add_webhook(REPO, forgejo_hook.url, events=["push", "create"])
        fake.add_webhook(REPO, gitea_hook.url, events=["create"], kind="gitea")
        git("--git-dir", str(source), "push", "-q", fake.git_remote(REPO, token), "main:main")
        fake.webhooks.flush()
        push = next(
            r.payload for r in forgejo_hook.received if r.headers["x-forgejo-event"] == "push"
        )
        create = next(
            r.payload for r in forgejo_hook.received if r.headers["x-forgejo-event"] == "create"
        )
        short = gitea_hook.received[0].payload
    assert push["ref"] == "refs/heads/main"
    assert push["compare"] == push["compare_url"]
    assert push["total_commits"] == 2
    assert push["head_commit"]["id"] == push["after"]
    assert push["before"] == "0" * 40
    assert push["pusher"]["login"] == "acme"
    assert (create["ref"], create["ref_type"], short["ref"]) == (
        "refs/heads/main",
        "branch",
        "main",
    )
    fake.assert_clean()


def test_pause_release_and_redeliver_keep_the_delivery_id(fake):
    """Held deliveries leave on release; a redelivery sends the same body and id."""
    fake.state.create_repo(REPO, auto_init=True)
    s = fake.session(fake.add_token("acme"))
    with WebhookReceiver() as receiver:
        fake.add_webhook(REPO, receiver.url, events=["release"])
        fake.webhooks.pause()
        s.post(f"{fake.api_url}/repos/{REPO}/releases", json={"tag_name": "v1"})
        assert receiver.received == []
        assert len(fake.webhooks.held) == 1
        assert fake.webhooks.release() == 1
        fake.webhooks.flush()
        fake.webhooks.redeliver(fake.webhook_deliveries[0])
        fake.webhooks.flush()
        first, second = receiver.received
    assert first.body == second.body
    assert first.headers["x-forgejo-delivery"] == second.headers["x-forgejo-delivery"]
    assert json.loads(first.body)["action"] == "published"
    fake.assert_clean()


def test_an_organization_hook_hears_a_new_repository_and_its_repositories_events(fake):
    """Creating a repository in an organization sends repository created to the
    organization's hook (indented by one space, as Forgejo writes that payload), and
    the new repository's events reach the same hook."""
    fake.state.create_org("acme-org", members=["acme"])
    s = fake.session(fake.add_token("acme"))
    with WebhookReceiver() as receiver:
        fake.add_org_webhook("acme-org", receiver.url, secret="k")
        made = s.post(f"{fake.api_url}/orgs/acme-org/repos", json={"name": "tools"})
        s.post(f"{fake.api_url}/repos/acme-org/tools/issues", json={"title": "first"})
        fake.webhooks.flush()
        created, opened = receiver.received
    assert made.status_code == 201
    assert created.headers["x-forgejo-event"] == "repository"
    assert created.body.startswith(b'{\n "action": "created"')
    assert created.payload["organization"]["login"] == "acme-org"
    assert (opened.headers["x-forgejo-event"], opened.payload["issue"]["title"]) == (
        "issues",
        "first",
    )
    fake.assert_clean()
