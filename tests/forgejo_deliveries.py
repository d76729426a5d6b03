"""Deliveries as the Forgejo test server sends them, for every event reposync reads.

``record(fake, work)`` makes real changes through the test server's REST API and Git
smart HTTP (a repository created in an organization, pushes that create, move and delete
branches and a tag, an issue opened, edited, labelled, milestoned, assigned and
commented, a pull request opened, labelled, milestoned, assigned, pushed to, commented,
reviewed (approved, changes requested, line comments) and with a review requested, a
release published) and returns what its hooks delivered: an
organization hook of every event (``forgejo``, JSON), a repository hook of type
``gitea`` (its ``create``/``delete`` name the short ref) and one whose content type is
``form``. The readers' tests take these as their corpus, so what they read is what
Forgejo's own payloads hold, not what a test thought they hold.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.forgejo import ForgejoFake
from tests.fakes.webhook_receiver import Received, WebhookReceiver
from tests.gitrepo import commit_on, generate

ORG = "acme-org"
REPO = f"{ORG}/app"
SECRET = "forgejo hooks' secret"


@dataclass(frozen=True)
class Delivery:
    """One delivery as it arrived: the hook that sent it (``forgejo``, ``gitea``,
    ``form``), its headers (lower case) and raw body."""

    hook: str
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> str:
        return self.headers["x-forgejo-event"]

    @property
    def event_type(self) -> str:
        return self.headers["x-forgejo-event-type"]

    @property
    def name(self) -> str:
        return f"{self.hook}-{self.event_type}"

    def payload(self) -> Any:
        return Received("POST", "/", self.headers, self.body).payload


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def record(fake: ForgejoFake, work: Path) -> list[Delivery]:
    """Every delivery of the changes this makes (see the module docstring), in order."""
    fake.state.create_org(ORG, members=["ann"])
    ann = fake.session(fake.add_token("ann"))
    bob = fake.session(fake.add_token("bob"))
    carol = fake.session(fake.add_token("carol"))
    api = f"{fake.api_url}/repos/{REPO}"
    with WebhookReceiver() as receiver:
        base = receiver.url.rsplit("/hooks/", 1)[0]
        fake.add_org_webhook(ORG, f"{base}/forgejo", SECRET, events=["*"])
        made = ann.post(f"{fake.api_url}/orgs/{ORG}/repos", json={"name": "app"})
        made.raise_for_status()
        fake.state.add_collaborator(REPO, "bob")
        fake.state.add_collaborator(REPO, "carol")
        fake.add_webhook(REPO, f"{base}/gitea", SECRET, events=["create", "delete"], kind="gitea")
        fake.add_webhook(REPO, f"{base}/form", SECRET, events=["push"], content_type="form")

        source = generate(work / "source.git", commits=2, branches=0, tags=1, annotated_every=1)
        _git("--git-dir", str(source), "symbolic-ref", "HEAD", "refs/heads/main")
        commit_on(source, "refs/heads/feature", "feature work")
        remote = fake.git_remote(REPO, fake.add_token("ann"))
        _git("--git-dir", str(source), "push", "-q", remote, "main", "feature", "--tags")
        commit_on(source, "refs/heads/main", "more work")
        _git("--git-dir", str(source), "push", "-q", remote, "main")
        commit_on(source, "refs/heads/gone", "short-lived")
        _git("--git-dir", str(source), "push", "-q", remote, "gone")
        _git("--git-dir", str(source), "push", "-q", remote, ":gone")

        label = ann.post(f"{api}/labels", json={"name": "bug", "color": "ff0000"}).json()
        milestone = ann.post(f"{api}/milestones", json={"title": "v1"}).json()
        ann.post(f"{api}/issues", json={"title": "broken"}).raise_for_status()
        ann.patch(f"{api}/issues/1", json={"title": "broken badly"}).raise_for_status()
        ann.post(f"{api}/issues/1/labels", json={"labels": [label["id"]]}).raise_for_status()
        ann.patch(f"{api}/issues/1", json={"milestone": milestone["id"]}).raise_for_status()
        ann.patch(f"{api}/issues/1", json={"assignees": ["bob"]}).raise_for_status()
        comment = ann.post(f"{api}/issues/1/comments", json={"body": "seen"}).json()
        ann.patch(f"{api}/issues/comments/{comment['id']}", json={"body": "seen it"})

        pull = {"head": "feature", "base": "main", "title": "feature"}
        bob.post(f"{api}/pulls", json=pull).raise_for_status()
        ann.post(f"{api}/issues/2/comments", json={"body": "nice"}).raise_for_status()
        ann.post(
            f"{api}/pulls/2/requested_reviewers", json={"reviewers": ["carol"]}
        ).raise_for_status()
        ann.post(f"{api}/issues/2/labels", json={"labels": [label["id"]]}).raise_for_status()
        ann.patch(f"{api}/pulls/2", json={"milestone": milestone["id"]}).raise_for_status()
        ann.patch(f"{api}/pulls/2", json={"assignees": ["carol"]}).raise_for_status()
        commit_on(source, "refs/heads/feature", "more feature work")
        _git("--git-dir", str(source), "push", "-q", remote, "feature")
        carol.post(
            f"{api}/pulls/2/reviews", json={"event": "REQUEST_CHANGES", "body": "not yet"}
        ).raise_for_status()
        line = {"path": "feature.txt", "body": "why?", "new_position": 1}
        ann.post(
            f"{api}/pulls/2/reviews", json={"event": "COMMENT", "body": "", "comments": [line]}
        ).raise_for_status()
        ann.post(
            f"{api}/pulls/2/reviews", json={"event": "APPROVED", "body": "ship it"}
        ).raise_for_status()
        ann.post(
            f"{api}/releases", json={"tag_name": "v2", "target_commitish": "main", "name": "2"}
        ).raise_for_status()
        fake.webhooks.flush()
        received = list(receiver.received)
    for session in (ann, bob, carol):
        session.close()
    return [Delivery(r.path.rsplit("/", 1)[1], r.headers, r.body) for r in received]
