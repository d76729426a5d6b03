"""Webhooks as Forgejo delivers them, from the fake's REST writes and pushes.

The queue, the sender thread and the test controls (``pause``/``release``/
``out_of_order``/``flush``/``redeliver`` and delivery ``faults``) are the GitHub test
server's ``WebhookHub`` (tests/fakes/github/webhooks.py), which this extends; what is
Forgejo's is each delivery (services/webhook/shared/payloader.go ``AddDefaultHeaders``,
services/webhook/default.go, modules/webhook/type.go and modules/structs/hook.go in
Forgejo's source):

* one POST, ``Content-Type: application/json`` (``form``: ``payload=<json>``), the body
  the payload struct as Go's ``json.MarshalIndent(p, "", "  ")`` writes it (keys in the
  struct's order, ``<``, ``>`` and ``&`` escaped as ``\\u003c``...; a ``repository``
  event's indented by one space, as ``RepositoryPayload.JSONPayload``);
* headers ``X-Forgejo-Delivery`` (a UUID, the same on a redelivery), ``X-Forgejo-Event``
  (``issues``, ``pull_request``, ``issue_comment``, ``pull_request_approved``, ...:
  ``HookEventType.Event()``), ``X-Forgejo-Event-Type`` (the finer type:
  ``issue_label``, ``pull_request_comment``, ``pull_request_review_approved``...),
  ``X-Forgejo-Signature`` (hex HMAC-SHA256 of the body with the hook's secret, no
  prefix; empty without a secret), the same three as ``X-Gitea-*`` and ``X-Gogs-*``,
  and ``X-Hub-Signature``/``X-Hub-Signature-256`` (``sha1=``/``sha256=``),
  ``X-GitHub-Delivery``/``-Event``/``-Event-Type``;
* a ``forgejo`` hook's ``push`` payload has ``compare`` beside ``compare_url`` (keys
  then sorted, as the payload is re-marshalled from a map); a ``gitea`` hook's
  ``create``/``delete`` carry the short ref name (``ref`` ``v1``, not ``refs/tags/v1``);
* no ``ping`` when a hook is created (Forgejo sends none; "Test delivery" is a button).

A hook receives an event type it lists, or one whose group it lists (``issues`` covers
``issue_assign``/``issue_label``/``issue_milestone``; ``pull_request`` the pull
request's; ``issue_comment`` ``pull_request_comment``; ``pull_request_review`` the
approved/rejected/comment reviews), or everything with ``*``. Every payload's API
objects (``issue``, ``pull_request``, ``comment``, ``release``, ``repository``,
``sender``) are checked against Forgejo's definitions (``violations``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

import pygit2

from tests.fakes.forge_server.clock import iso
from tests.fakes.forgejo import render
from tests.fakes.forgejo.models import Comment, Issue, Release, Repo, Review, User
from tests.fakes.github.webhooks import CONTENT_TYPES, Webhook, WebhookDelivery, WebhookHub

if TYPE_CHECKING:
    from tests.fakes.forgejo.routing import Ctx
    from tests.fakes.forgejo.server import ForgejoFake

Json = dict[str, Any]
ZERO = "0" * 40
#: Finer event types and the event a hook lists to receive them.
GROUPS = {
    "issue_assign": "issues",
    "issue_label": "issues",
    "issue_milestone": "issues",
    "pull_request_assign": "pull_request",
    "pull_request_label": "pull_request",
    "pull_request_milestone": "pull_request",
    "pull_request_sync": "pull_request",
    "pull_request_review_request": "pull_request",
    "pull_request_comment": "issue_comment",
    "pull_request_review_approved": "pull_request_review",
    "pull_request_review_rejected": "pull_request_review",
    "pull_request_review_comment": "pull_request_review",
}
#: ``HookEventType.Event()``: what ``X-Forgejo-Event`` says of each type (its group's
#: name, but for the reviews').
EVENT_NAMES = {
    **GROUPS,
    "pull_request_review_approved": "pull_request_approved",
    "pull_request_review_rejected": "pull_request_rejected",
    "pull_request_review_comment": "pull_request_comment",
}
#: Which definition each API object of a payload is.
DEFINITIONS = {
    "issue": "Issue",
    "pull_request": "PullRequest",
    "comment": "Comment",
    "release": "Release",
    "repository": "Repository",
    "sender": "User",
    "pusher": "User",
    "label": "Label",
}
KINDS = ("forgejo", "gitea")


def signature(secret: str | bytes, body: bytes) -> str:
    """``X-Forgejo-Signature``: the hex HMAC-SHA256 of the raw body (no prefix)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def go_json(payload: Json, indent: str = "  ") -> bytes:
    """``json.MarshalIndent``'s bytes: HTML characters escaped, non-ASCII kept."""
    text = json.dumps(payload, indent=len(indent), ensure_ascii=False)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escaped)
    return text.encode()


@dataclass
class ForgejoHook(Webhook):
    """A repository's hook (``repo_id``) or an organization's (``org_id``)."""

    kind: str = "forgejo"
    branch_filter: str = "*"
    org_id: int | None = None

    def wants(self, event: str) -> bool:
        if not self.active:
            return False
        listed = set(self.events)
        return "*" in listed or event in listed or GROUPS.get(event) in listed


class ForgejoWebhooks(WebhookHub):
    """The instance's hooks and deliveries (``fake.webhooks``)."""

    def __init__(self, fake: ForgejoFake) -> None:
        super().__init__(fake)  # type: ignore[arg-type]
        self.forgejo = fake
        self.user_agent = "Go-http-client/1.1"

    def start(self) -> None:
        super().start()
        if self._thread is not None:
            self._thread.name = "forgejo-fake-webhooks"

    # -- hooks --------------------------------------------------------------------------

    def add(  # type: ignore[override]
        self,
        url: str,
        *,
        repo: Repo | None = None,
        org: User | None = None,
        secret: str | None = None,
        events: Iterable[str] = ("push",),
        content_type: str = "json",
        active: bool = True,
        kind: str = "forgejo",
        branch_filter: str = "*",
    ) -> ForgejoHook:
        """A hook of a repository or an organization (no ping: Forgejo sends none)."""
        if content_type not in CONTENT_TYPES:
            raise ValueError(f"content_type is one of {tuple(CONTENT_TYPES)}")
        if kind not in KINDS:
            raise ValueError(f"the test server delivers hooks of type {KINDS}")
        state = self.forgejo.state
        with state.lock:
            now = state.now()
            hook = ForgejoHook(
                id=state.next_id("hook"),
                url=url,
                secret=secret,
                events=tuple(events),
                content_type=content_type,
                active=active,
                created_at=now,
                updated_at=now,
                repo_id=repo.id if repo is not None else None,
                kind=kind,
                branch_filter=branch_filter,
                org_id=org.id if org is not None else None,
            )
            self.hooks[hook.id] = hook
        return hook

    def hooks_of(self, repo: Repo) -> list[ForgejoHook]:
        return [
            h for h in self.hooks.values() if isinstance(h, ForgejoHook) and h.repo_id == repo.id
        ]

    def hook_json(self, hook: Webhook) -> Json:  # Forgejo's ``Hook``
        assert isinstance(hook, ForgejoHook)
        config = {"url": hook.url, "content_type": hook.content_type, "http_method": "post"}
        return {
            "id": hook.id,
            "type": hook.kind,
            "branch_filter": hook.branch_filter,
            "url": hook.url,
            "config": config,
            "events": list(hook.events),
            "authorization_header": "",
            "content_type": hook.content_type,
            "metadata": None,
            "active": hook.active,
            "updated_at": iso(hook.updated_at),
            "created_at": iso(hook.created_at),
        }

    # -- emitting -----------------------------------------------------------------------

    def receivers(self, repo: Repo, event_type: str) -> list[ForgejoHook]:
        found = []
        for hook in list(self.hooks.values()):
            if not isinstance(hook, ForgejoHook) or not hook.wants(event_type):
                continue
            if hook.repo_id == repo.id or (
                hook.org_id is not None and hook.org_id == repo.owner.id
            ):
                found.append(hook)
        return found

    def send(self, repo: Repo, event_type: str, build: Callable[[], Json]) -> None:
        """Deliver ``event_type`` of ``repo`` to every hook that wants it (``build`` is
        called only then, under the state lock: the state right after the change)."""
        hooks = self.receivers(repo, event_type)
        if not hooks:
            return
        payload = build()
        for hook in hooks:
            self._enqueue_forgejo(hook, event_type, payload, repo)

    def _enqueue_forgejo(
        self, hook: ForgejoHook, event_type: str, payload: Json, repo: Repo
    ) -> None:
        body = dict(payload)
        indent = " " if event_type == "repository" else "  "
        if hook.kind == "forgejo" and event_type == "push":
            body["compare"] = body["compare_url"]
            body, indent = dict(sorted(body.items())), "  "
        if hook.kind == "gitea" and event_type in ("create", "delete"):
            body["ref"] = _short(str(body["ref"]))
            body, indent = dict(sorted(body.items())), "  "
        raw = go_json(body, indent)
        if hook.content_type == "form":
            raw = b"payload=" + quote_plus(raw).encode()
        self._deliver(hook, event_type, body, raw, repo.id)

    def _headers(self, hook: Webhook, delivery: WebhookDelivery, *, forged: bool) -> dict[str, str]:
        secret = (hook.secret or "") + ("-forged" if forged and hook.secret else "")
        sha256 = signature(secret, delivery.body) if secret else ""
        sha1 = hmac.new(secret.encode(), delivery.body, hashlib.sha1).hexdigest() if secret else ""
        event_type = delivery.event
        event = EVENT_NAMES.get(event_type, event_type)
        headers = {
            "Content-Type": CONTENT_TYPES[hook.content_type],
            "User-Agent": self.user_agent,
        }
        for prefix in ("X-Forgejo", "X-Gitea", "X-Gogs"):
            headers[f"{prefix}-Delivery"] = delivery.guid
            headers[f"{prefix}-Event"] = event
            headers[f"{prefix}-Event-Type"] = event_type
            headers[f"{prefix}-Signature"] = sha256
        headers["X-Hub-Signature"] = f"sha1={sha1}"
        headers["X-Hub-Signature-256"] = f"sha256={sha256}"
        headers["X-GitHub-Delivery"] = delivery.guid
        headers["X-GitHub-Event"] = event
        headers["X-GitHub-Event-Type"] = event_type
        return headers

    def _check(self, delivery: WebhookDelivery) -> None:
        """Each API object of the payload against its definition in Forgejo's description."""
        if not self.forgejo.validate_responses:
            return
        contract = self.forgejo.contract
        problems = []
        for key, definition in DEFINITIONS.items():
            value = delivery.payload.get(key)
            if isinstance(value, dict):
                problems += [f"{key}: {p}" for p in contract.schema_problems(definition, value)]
        self._record_problems(delivery, problems[:8])


def _short(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/"):
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref


# -- which change sends what (services/webhook/notifier.go) ----------------------------------


def _envelope(ctx: Ctx, repo: Repo) -> Json:
    return {
        "repository": render.repository(ctx.urls, ctx.state, repo, None),
        "sender": render.user(ctx.urls, ctx.the_doer()),
    }


def issue_event(
    ctx: Ctx, issue: Issue, action: str, changes: Json | None = None, *, event: str = ""
) -> None:
    """``issues`` (or ``pull_request``) and their finer types: ``event`` is ``label``,
    ``assign`` or ``milestone`` for those."""
    repo = ctx.the_repo()
    is_pull = issue.pull is not None
    base = "pull_request" if is_pull else "issues"
    event_type = f"{'pull_request' if is_pull else 'issue'}_{event}" if event else base

    def build() -> Json:
        body: Json = {"action": action, "number": issue.index}
        if changes:
            body["changes"] = changes
        if is_pull:
            body["pull_request"] = render.pull(ctx.urls, ctx.state, repo, issue, None)
            body["requested_reviewer"] = None
        else:
            body["issue"] = render.issue(ctx.urls, repo, issue, None)
        body.update(_envelope(ctx, repo))
        body["commit_id"] = ""
        if is_pull:
            body["review"] = None
        return body

    ctx.webhooks.send(repo, event_type, build)


def pull_event(ctx: Ctx, issue: Issue, action: str) -> None:
    issue_event(ctx, issue, action)


def comment_event(
    ctx: Ctx, issue: Issue, comment: Comment, action: str, changes: Json | None = None
) -> None:
    repo, is_pull = ctx.the_repo(), issue.pull is not None

    def build() -> Json:
        body: Json = {"action": action, "issue": render.issue(ctx.urls, repo, issue, None)}
        if is_pull:
            body["pull_request"] = render.pull(ctx.urls, ctx.state, repo, issue, None)
        body["comment"] = render.comment(ctx.urls, repo, comment, None)
        if changes:
            body["changes"] = changes
        body.update(_envelope(ctx, repo))
        body["is_pull"] = is_pull
        return body

    ctx.webhooks.send(repo, "pull_request_comment" if is_pull else "issue_comment", build)


def review_event(ctx: Ctx, issue: Issue, review: Review) -> None:
    types = {
        "APPROVED": ("pull_request_review_approved", "approved"),
        "REQUEST_CHANGES": ("pull_request_review_rejected", "rejected"),
        "COMMENT": ("pull_request_review_comment", "comment"),
    }
    if review.state not in types:
        return
    repo = ctx.the_repo()
    event_type, kind = types[review.state]

    def build() -> Json:
        body: Json = {
            "action": "reviewed",
            "number": issue.index,
            "pull_request": render.pull(ctx.urls, ctx.state, repo, issue, None),
            "requested_reviewer": None,
        }
        body.update(_envelope(ctx, repo))
        body["commit_id"] = review.commit_id
        body["review"] = {"type": f"pull_request_review_{kind}", "content": review.body}
        return body

    ctx.webhooks.send(repo, event_type, build)


def review_request_event(ctx: Ctx, issue: Issue, reviewer: User, action: str) -> None:
    repo = ctx.the_repo()

    def build() -> Json:
        body: Json = {
            "action": action,
            "number": issue.index,
            "pull_request": render.pull(ctx.urls, ctx.state, repo, issue, None),
            "requested_reviewer": render.user(ctx.urls, reviewer),
        }
        body.update(_envelope(ctx, repo))
        body["commit_id"] = ""
        body["review"] = None
        return body

    ctx.webhooks.send(repo, "pull_request_review_request", build)


def release_event(ctx: Ctx, release: Release, action: str) -> None:
    repo = ctx.the_repo()

    def build() -> Json:
        body: Json = {"action": action, "release": render.release(ctx.urls, repo, release, None)}
        body.update(_envelope(ctx, repo))
        return body

    ctx.webhooks.send(repo, "release", build)


def repository_created(ctx: Ctx, repo: Repo) -> None:
    """``repository`` ``created``: only an organization's hooks can hear it."""

    def build() -> Json:
        return {
            "action": "created",
            "repository": render.repository(ctx.urls, ctx.state, repo, None),
            "organization": render.user(ctx.urls, repo.owner) if repo.owner.is_org else None,
            "sender": render.user(ctx.urls, ctx.the_doer()),
        }

    ctx.webhooks.send(repo, "repository", build)


# -- pushes ------------------------------------------------------------------------------


def _payload_user(name: str, email: str, state: Any) -> Json:
    found = next((u for u in state.users.values() if u.email == email), None)
    return {"name": name, "email": email, "username": found.login if found else ""}


def _commits(fake: ForgejoFake, repo: Repo, before: str, after: str) -> list[Json]:
    """The pushed commits, newest first, as ``PayloadCommit`` (at most 20 of them, as
    Forgejo's ``setting.UI.FeedMaxCommitNum``)."""
    git = pygit2.Repository(str(repo.git_dir))
    walker = git.walk(pygit2.Oid(hex=after), pygit2.enums.SortMode.TOPOLOGICAL)
    if before != ZERO:
        walker.hide(pygit2.Oid(hex=before))
    found = []
    for commit in list(walker)[:20]:
        added: list[str] = []
        removed: list[str] = []
        modified: list[str] = []
        parent = commit.parents[0].tree if commit.parents else None
        diff = (
            git.diff(parent, commit.tree)
            if parent is not None
            else commit.tree.diff_to_tree(swap=True)
        )
        for delta in diff.deltas:
            status = delta.status_char()
            bucket = added if status == "A" else removed if status == "D" else modified
            bucket.append(delta.new_file.path if status != "D" else delta.old_file.path)
        when = pygit2_time(commit.committer)
        found.append(
            {
                "id": str(commit.id),
                "message": commit.message,
                "url": f"{fake.urls.repo_html(repo)}/commit/{commit.id}",
                "author": _payload_user(commit.author.name, commit.author.email, fake.state),
                "committer": _payload_user(
                    commit.committer.name, commit.committer.email, fake.state
                ),
                "verification": None,
                "timestamp": when,
                "added": added,
                "removed": removed,
                "modified": modified,
            }
        )
    return found


def head_commit(state: Any, urls: Any, repo: Repo, sha: str) -> Json:
    """One commit as ``PayloadCommit``, without its file lists (a branch's, as Forgejo's
    ``ToBranch`` shows it)."""
    commit = pygit2.Repository(str(repo.git_dir)).get(sha)
    return {
        "id": sha,
        "message": commit.message,
        "url": f"{urls.repo_html(repo)}/commit/{sha}",
        "author": _payload_user(commit.author.name, commit.author.email, state),
        "committer": _payload_user(commit.committer.name, commit.committer.email, state),
        "verification": None,
        "timestamp": pygit2_time(commit.committer),
        "added": None,
        "removed": None,
        "modified": None,
    }


def pygit2_time(sig: pygit2.Signature) -> str:
    from datetime import UTC, datetime

    return iso(datetime.fromtimestamp(sig.time, UTC)) or ""


def pushed(
    fake: ForgejoFake, repo: Repo, updates: Sequence[tuple[str, str, str]], pusher: User
) -> None:
    """``push`` per moved branch or tag, ``create``/``delete`` per new or gone one, and
    ``pull_request`` ``synchronized`` per open pull request whose head moved."""
    hub, urls, state = fake.webhooks, fake.urls, fake.state
    repo_json = lambda: render.repository(urls, state, repo, None)  # noqa: E731
    sender = render.user(urls, pusher)
    for before, after, ref in updates:
        if not ref.startswith(("refs/heads/", "refs/tags/")):
            continue
        kind = "branch" if ref.startswith("refs/heads/") else "tag"

        def push(before: str = before, after: str = after, ref: str = ref) -> Json:
            commits = _commits(fake, repo, before, after) if after != ZERO else []
            return {
                "ref": ref,
                "before": before,
                "after": after,
                "compare_url": f"{urls.repo_html(repo)}/compare/{before}...{after}",
                "commits": commits,
                "total_commits": len(commits),
                "head_commit": commits[0] if commits else None,
                "repository": repo_json(),
                "pusher": sender,
                "sender": sender,
            }

        hub.send(repo, "push", push)
        if before == ZERO:
            hub.send(
                repo,
                "create",
                lambda after=after, ref=ref, kind=kind: {
                    "sha": after,
                    "ref": ref,
                    "ref_type": kind,
                    "repository": repo_json(),
                    "sender": sender,
                },
            )
        elif after == ZERO:
            hub.send(
                repo,
                "delete",
                lambda ref=ref, kind=kind: {
                    "ref": ref,
                    "ref_type": kind,
                    "pusher_type": "user",
                    "repository": repo_json(),
                    "sender": sender,
                },
            )
