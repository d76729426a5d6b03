"""Which webhook events each change of the fake causes, as GitHub sends them.

Route handlers call these after a change succeeded (under the state lock, so each payload
is the state right after its change); the Git host calls ``pushed`` once a push has
updated refs. Nothing is built when no hook receives the event (``WebhookHub.emit``).

What GitHub sends, and so the fake:

* issues and pull requests: ``opened`` (and ``labeled``/``assigned``/``milestoned`` for
  what the new issue already has), then per edit ``edited`` (title/body/base),
  ``closed``/``reopened``, ``labeled``/``unlabeled`` per label, ``assigned``/
  ``unassigned`` per user, ``milestoned``/``demilestoned``, ``locked``/``unlocked``;
  a pull request's are ``pull_request`` events, an issue's ``issues`` events;
* ``issue_comment``, ``label``, ``milestone`` (``created``/``edited``/``closed``/
  ``opened``/``deleted``), ``pull_request_review`` (``submitted``/``edited``),
  ``pull_request_review_comment``, ``release`` (``created``, ``published`` with
  ``released`` or ``prereleased``, ``edited``, ``unpublished``, ``deleted``),
  ``repository`` (``renamed``, ``privatized``/``publicized``, ``edited``) and
  ``public`` when a private repository becomes public;
* a push: ``push`` per updated ref, ``create``/``delete`` per created/deleted ref, and
  ``pull_request`` ``synchronize`` for open pull requests whose head branch moved. As on
  GitHub, pushing more than three tags at once sends no event for those tags, and more
  than 5,000 branches none for those branches.

Two payloads bend to the schema where it disagrees with itself: ``demilestoned`` of a
pull request shows the milestone it lost (the schema requires one), and a milestone made
``closed`` in one request is announced ``created`` (open, as the schema requires) and
then ``closed``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tests.fakes.forge_server.clock import iso
from tests.fakes.github import webhook_payloads as payloads
from tests.fakes.github.models import (
    Installation,
    Issue,
    IssueComment,
    Label,
    Milestone,
    Release,
    Repo,
    Review,
    ReviewComment,
    User,
)
from tests.fakes.github.render import Json, Urls
from tests.fakes.gitserver import bare_repos

if TYPE_CHECKING:
    from tests.fakes.github.routing import Ctx
    from tests.fakes.github.state import State
    from tests.fakes.github.webhooks import WebhookHub

ZERO = payloads.ZERO
#: GitHub creates no event for tags when more than three are pushed at once...
MAX_TAGS_PER_PUSH = 3
#: ...and none for branches when more than 5,000 are.
MAX_BRANCHES_PER_PUSH = 5000


def _envelope(
    urls: Urls, repo: Repo, sender: User, action: str | None, build: Callable[[], Json]
) -> Callable[[], Json]:
    """The payload in GitHub's order: action, the event's objects, repository, sender."""

    def full() -> Json:
        body: Json = {"action": action} if action is not None else {}
        body.update(build())
        body["repository"] = payloads.repository(urls, repo)
        body["sender"] = payloads.user(urls, sender)
        return body

    return full


def _emit(ctx: Ctx, event: str, action: str | None, build: Callable[[], Json]) -> None:
    hub = ctx.webhooks
    if hub is None:
        return
    repo = ctx.the_repo()
    hub.emit(repo, event, _envelope(ctx.urls, repo, ctx.actor, action, build))


def _from(value: Any) -> Json:
    """``changes.<field>``: the previous value (the schema wants a string: ``""`` for none)."""
    return {"from": "" if value is None else value}


# -- issues and pull requests -----------------------------------------------------------


@dataclass(frozen=True)
class IssueSnapshot:
    """What an edit may change, taken before it (``issue_changed`` compares)."""

    title: str
    body: str | None
    state: str
    labels: tuple[int, ...]
    assignees: tuple[User, ...]
    milestone: int | None
    locked: bool
    base_ref: str | None
    base_sha: str | None
    draft: bool


def snapshot(issue: Issue) -> IssueSnapshot:
    pr = issue.pull
    return IssueSnapshot(
        title=issue.title,
        body=issue.body,
        state=issue.state,
        labels=tuple(issue.labels),
        assignees=tuple(issue.assignees),
        milestone=issue.milestone,
        locked=issue.locked,
        base_ref=pr.base_ref if pr is not None else None,
        base_sha=pr.base_sha if pr is not None else None,
        draft=pr.draft if pr is not None else False,
    )


def _issue_event(ctx: Ctx, issue: Issue, action: str, extra: Callable[[], Json]) -> None:
    """An ``issues`` event, or for a pull request the ``pull_request`` one."""
    repo, urls = ctx.the_repo(), ctx.urls
    if issue.pull is not None:

        def pull() -> Json:
            return {
                "number": issue.number,
                "pull_request": payloads.pull_request(urls, repo, issue),
                **extra(),
            }

        _emit(ctx, "pull_request", action, pull)
        return

    def plain() -> Json:
        via = ctx.app_of(issue.via_app)
        return {"issue": payloads.issue(urls, repo, issue, via), **extra()}

    _emit(ctx, "issues", action, plain)


def _nothing() -> Json:
    return {}


def _label_extra(ctx: Ctx, label: Label) -> Callable[[], Json]:
    return lambda: {"label": payloads.label(ctx.urls, ctx.the_repo(), label)}


def _assignee_extra(ctx: Ctx, who: User) -> Callable[[], Json]:
    return lambda: {"assignee": payloads.user(ctx.urls, who)}


def _milestone_extra(ctx: Ctx, ms: Milestone) -> Callable[[], Json]:
    return lambda: {"milestone": payloads.milestone(ctx.urls, ctx.the_repo(), ms)}


def issue_opened(ctx: Ctx, issue: Issue) -> None:
    """``opened``, then what the new issue (or pull request) already carries."""
    _issue_event(ctx, issue, "opened", _nothing)
    empty = IssueSnapshot(
        title=issue.title,
        body=issue.body,
        state=issue.state,
        labels=(),
        assignees=(),
        milestone=None,
        locked=False,
        base_ref=issue.pull.base_ref if issue.pull is not None else None,
        base_sha=issue.pull.base_sha if issue.pull is not None else None,
        draft=issue.pull.draft if issue.pull is not None else False,
    )
    _memberships(ctx, issue, empty)


def issue_changed(ctx: Ctx, issue: Issue, before: IssueSnapshot) -> None:
    """Every event an edit of ``issue`` causes (nothing when nothing changed)."""
    changes: Json = {}
    if issue.title != before.title:
        changes["title"] = _from(before.title)
    if issue.body != before.body:
        changes["body"] = _from(before.body)
    pr = issue.pull
    if pr is not None and before.base_ref is not None and pr.base_ref != before.base_ref:
        changes["base"] = {"ref": _from(before.base_ref), "sha": _from(before.base_sha)}
    if changes:
        _issue_event(ctx, issue, "edited", lambda: {"changes": changes})
    if issue.state != before.state:
        _issue_event(ctx, issue, "closed" if issue.state == "closed" else "reopened", _nothing)
    _memberships(ctx, issue, before)
    if issue.locked != before.locked:
        _issue_event(ctx, issue, "locked" if issue.locked else "unlocked", _nothing)


def _memberships(ctx: Ctx, issue: Issue, before: IssueSnapshot) -> None:
    """Labels, assignees and the milestone, each change one event."""
    repo = ctx.the_repo()
    for label_id in before.labels:
        if label_id not in issue.labels and label_id in repo.labels:
            _issue_event(ctx, issue, "unlabeled", _label_extra(ctx, repo.labels[label_id]))
    for label_id in issue.labels:
        if label_id not in before.labels and label_id in repo.labels:
            _issue_event(ctx, issue, "labeled", _label_extra(ctx, repo.labels[label_id]))
    now = {u.login for u in issue.assignees}
    then = {u.login for u in before.assignees}
    for who in before.assignees:
        if who.login not in now:
            _issue_event(ctx, issue, "unassigned", _assignee_extra(ctx, who))
    for who in issue.assignees:
        if who.login not in then:
            _issue_event(ctx, issue, "assigned", _assignee_extra(ctx, who))
    if issue.milestone != before.milestone:
        old = repo.milestones.get(before.milestone or 0)
        if old is not None:
            _demilestoned(ctx, issue, old)
        new = repo.milestones.get(issue.milestone or 0)
        if new is not None:
            _issue_event(ctx, issue, "milestoned", _milestone_extra(ctx, new))


def _demilestoned(ctx: Ctx, issue: Issue, old: Milestone) -> None:
    if issue.pull is None:
        _issue_event(ctx, issue, "demilestoned", _milestone_extra(ctx, old))
        return
    current = issue.milestone
    issue.milestone = old.number  # the schema wants the pull request with its milestone
    try:
        _issue_event(ctx, issue, "demilestoned", _milestone_extra(ctx, old))
    finally:
        issue.milestone = current


def review_requests(ctx: Ctx, issue: Issue, users: list[User], *, removed: bool) -> None:
    action = "review_request_removed" if removed else "review_requested"
    for who in users:

        def reviewer(who: User = who) -> Json:
            return {"requested_reviewer": payloads.user(ctx.urls, who)}

        _issue_event(ctx, issue, action, reviewer)


# -- comments, labels, milestones -------------------------------------------------------


def issue_comment(
    ctx: Ctx, comment: IssueComment, action: str, *, old_body: str | None = None
) -> None:
    repo, urls = ctx.the_repo(), ctx.urls

    def build() -> Json:
        issue = repo.issues[comment.issue_number]
        out: Json = {}
        if action == "edited":
            out["changes"] = {"body": _from(old_body)}
        out["issue"] = payloads.issue(urls, repo, issue, ctx.app_of(issue.via_app))
        out["comment"] = payloads.issue_comment(urls, repo, comment, ctx.app_of(comment.via_app))
        return out

    _emit(ctx, "issue_comment", action, build)


def label(ctx: Ctx, lb: Label, action: str, *, before: Label | None = None) -> None:
    def build() -> Json:
        out: Json = {"label": payloads.label(ctx.urls, ctx.the_repo(), lb)}
        if before is not None:
            out["changes"] = {
                name: _from(getattr(before, name))
                for name in ("name", "color", "description")
                if getattr(before, name) != getattr(lb, name)
            }
        return out

    _emit(ctx, "label", action, build)


@dataclass(frozen=True)
class MilestoneSnapshot:
    title: str
    description: str | None
    due_on: datetime | None
    state: str


def milestone_snapshot(ms: Milestone) -> MilestoneSnapshot:
    return MilestoneSnapshot(ms.title, ms.description, ms.due_on, ms.state)


def _milestone_json(ctx: Ctx, ms: Milestone, *, as_open: bool = False) -> Json:
    out = payloads.milestone(ctx.urls, ctx.the_repo(), ms)
    assert out is not None
    if as_open:
        out["state"], out["closed_at"] = "open", None
    return out


def milestone_created(ctx: Ctx, ms: Milestone) -> None:
    closed = ms.state == "closed"
    _emit(
        ctx, "milestone", "created", lambda: {"milestone": _milestone_json(ctx, ms, as_open=closed)}
    )
    if closed:
        _emit(ctx, "milestone", "closed", lambda: {"milestone": _milestone_json(ctx, ms)})


def milestone_changed(ctx: Ctx, ms: Milestone, before: MilestoneSnapshot) -> None:
    changes: Json = {}
    if ms.title != before.title:
        changes["title"] = _from(before.title)
    if ms.description != before.description:
        changes["description"] = _from(before.description)
    if ms.due_on != before.due_on:
        changes["due_on"] = _from(iso(before.due_on))
    if changes:
        _emit(
            ctx,
            "milestone",
            "edited",
            lambda: {"changes": changes, "milestone": _milestone_json(ctx, ms)},
        )
    if ms.state != before.state:
        action = "closed" if ms.state == "closed" else "opened"
        _emit(ctx, "milestone", action, lambda: {"milestone": _milestone_json(ctx, ms)})


def milestone_deleted(ctx: Ctx, ms: Milestone) -> None:
    _emit(ctx, "milestone", "deleted", lambda: {"milestone": _milestone_json(ctx, ms)})


# -- reviews and review comments --------------------------------------------------------


def review(ctx: Ctx, rv: Review, action: str, *, old_body: str | None = None) -> None:
    repo, urls = ctx.the_repo(), ctx.urls

    def build() -> Json:
        out: Json = {}
        if action == "edited":
            out["changes"] = {"body": _from(old_body)}
        out["review"] = payloads.review(urls, repo, rv)
        out["pull_request"] = payloads.simple_pull_request(urls, repo, repo.issues[rv.pull_number])
        return out

    _emit(ctx, "pull_request_review", action, build)


def review_comment(
    ctx: Ctx, comment: ReviewComment, action: str, *, old_body: str | None = None
) -> None:
    repo, urls = ctx.the_repo(), ctx.urls

    def build() -> Json:
        out: Json = {}
        if action == "edited":
            out["changes"] = {"body": _from(old_body)}
        out["comment"] = payloads.review_comment(urls, repo, comment)
        pull = repo.issues[comment.pull_number]
        out["pull_request"] = payloads.simple_pull_request(urls, repo, pull)
        return out

    _emit(ctx, "pull_request_review_comment", action, build)


def review_submitted(ctx: Ctx, rv: Review) -> None:
    """A submitted review, then each of its comments (GitHub announces them then)."""
    review(ctx, rv, "submitted")
    for comment in sorted(ctx.the_repo().review_comments.values(), key=lambda c: c.id):
        if comment.review_id == rv.id:
            review_comment(ctx, comment, "created")


# -- releases ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseSnapshot:
    tag_name: str
    name: str | None
    body: str | None
    draft: bool
    prerelease: bool
    target_commitish: str


def release_snapshot(r: Release) -> ReleaseSnapshot:
    return ReleaseSnapshot(r.tag_name, r.name, r.body, r.draft, r.prerelease, r.target_commitish)


def _release(ctx: Ctx, r: Release, action: str, changes: Json | None = None) -> None:
    def build() -> Json:
        out: Json = {}
        if changes is not None:
            out["changes"] = changes
        out["release"] = payloads.release(ctx.urls, ctx.the_repo(), r)
        return out

    _emit(ctx, "release", action, build)


def _published(ctx: Ctx, r: Release) -> None:
    _release(ctx, r, "published")
    _release(ctx, r, "prereleased" if r.prerelease else "released")


def release_created(ctx: Ctx, r: Release, tags_before: set[str]) -> None:
    """``created``; published at once: ``published`` and ``released``/``prereleased``,
    and the tag it made, if it made one (``create`` and ``push``)."""
    _release(ctx, r, "created")
    if not r.draft:
        _published(ctx, r)
    _tag_made(ctx, r, tags_before)


def release_changed(ctx: Ctx, r: Release, before: ReleaseSnapshot, tags_before: set[str]) -> None:
    changes: Json = {}
    if r.name != before.name:
        changes["name"] = _from(before.name)
    if r.body != before.body:
        changes["body"] = _from(before.body)
    if changes or r.tag_name != before.tag_name or r.target_commitish != before.target_commitish:
        _release(ctx, r, "edited", changes)
    if r.draft != before.draft:
        if r.draft:
            _release(ctx, r, "unpublished")
        else:
            _published(ctx, r)
    elif not r.draft and r.prerelease != before.prerelease:
        _release(ctx, r, "prereleased" if r.prerelease else "released")
    _tag_made(ctx, r, tags_before)


def release_deleted(ctx: Ctx, r: Release) -> None:
    _release(ctx, r, "deleted")


def tags(repo: Repo) -> set[str]:
    """The repository's tags (before a release change: did it make one?)."""
    return {n for n, _, _ in bare_repos.matching_refs(repo.git_dir, "refs/tags/")}


def _tag_made(ctx: Ctx, r: Release, tags_before: set[str]) -> None:
    ref = f"refs/tags/{r.tag_name}"
    if ctx.webhooks is None or ref in tags_before:
        return
    repo = ctx.the_repo()
    sha = bare_repos.resolve_commit(repo.git_dir, ref)
    if sha is not None:
        ref_updates(ctx.webhooks, ctx.urls, ctx.state, repo, [(ZERO, sha, ref)], ctx.actor)


# -- the repository ---------------------------------------------------------------------


@dataclass(frozen=True)
class RepoSnapshot:
    name: str
    private: bool
    description: str | None
    default_branch: str


def repo_snapshot(repo: Repo) -> RepoSnapshot:
    return RepoSnapshot(repo.name, repo.private, repo.description, repo.default_branch)


def repository_changed(ctx: Ctx, before: RepoSnapshot) -> None:
    repo = ctx.the_repo()
    if repo.name != before.name:
        changes = {"repository": {"name": {"from": before.name}}}
        _emit(ctx, "repository", "renamed", lambda: {"changes": changes})
    if repo.private != before.private:
        _emit(ctx, "repository", "privatized" if repo.private else "publicized", dict)
        if not repo.private:
            _emit(ctx, "public", None, dict)
    edits: Json = {}
    if repo.description != before.description:
        edits["description"] = _from(before.description)
    if repo.default_branch != before.default_branch:
        edits["default_branch"] = _from(before.default_branch)
    if edits:
        _emit(ctx, "repository", "edited", lambda: {"changes": edits})


# -- pushes -----------------------------------------------------------------------------


def ref_updates(
    hub: WebhookHub,
    urls: Urls,
    state: State,
    repo: Repo,
    updates: list[tuple[str, str, str]],
    who: User,
) -> None:
    """The events of refs that moved: ``(before, after, ref)`` each (``ZERO`` for none).

    Called with the state lock held, once the refs have moved.
    """
    if not updates or not hub.wants(repo, "push", "create", "delete", "pull_request"):
        return
    tag_count = sum(1 for _, _, ref in updates if ref.startswith("refs/tags/"))
    branch_count = sum(1 for _, _, ref in updates if ref.startswith("refs/heads/"))
    moved = {ref for _, _, ref in updates}
    others = [
        sha
        for name, sha, _ in bare_repos.matching_refs(repo.git_dir, "refs/")
        if name not in moved and not name.startswith("refs/pull/")
    ]
    others += [before for before, _, _ in updates if before != ZERO]
    for before, after, ref in updates:
        if ref.startswith("refs/tags/") and tag_count > MAX_TAGS_PER_PUSH:
            continue
        if ref.startswith("refs/heads/") and branch_count > MAX_BRANCHES_PER_PUSH:
            continue
        if not ref.startswith(("refs/tags/", "refs/heads/")):
            continue

        def push(before: str = before, after: str = after, ref: str = ref) -> Json:
            body = payloads.push(urls, repo, ref, before, after, others=others, who=who)
            body["sender"] = payloads.user(urls, who)
            return body

        hub.emit(repo, "push", push)
        if before == ZERO or after == ZERO:
            event = "create" if before == ZERO else "delete"
            created = before == ZERO

            def made(ref: str = ref, created: bool = created) -> Json:
                return payloads.ref_event(repo, ref, created=created)

            hub.emit(repo, event, _envelope(urls, repo, who, None, made))
    _synchronized(hub, urls, repo, updates, who)


def _synchronized(
    hub: WebhookHub, urls: Urls, repo: Repo, updates: list[tuple[str, str, str]], who: User
) -> None:
    """``pull_request`` ``synchronize`` for each open pull request whose head moved."""
    for before, after, ref in updates:
        if before == ZERO or after == ZERO or not ref.startswith("refs/heads/"):
            continue
        branch = ref.removeprefix("refs/heads/")
        for issue in sorted(repo.issues.values(), key=lambda i: i.number):
            pr = issue.pull
            if pr is None or issue.state != "open" or pr.head_ref != branch:
                continue

            def sync(issue: Issue = issue, before: str = before, after: str = after) -> Json:
                return {
                    "number": issue.number,
                    "before": before,
                    "after": after,
                    "pull_request": payloads.pull_request(urls, repo, issue),
                }

            hub.emit(repo, "pull_request", _envelope(urls, repo, who, "synchronize", sync))


# -- GitHub Apps ------------------------------------------------------------------------


def installation(
    hub: WebhookHub, urls: Urls, state: State, inst: Installation, action: str, sender: User
) -> None:
    """``installation`` ``created``/``deleted`` to the App's webhook."""
    repos = [state.repos[i] for i in sorted(state.installation_repo_ids(inst))]
    body: Json = {
        "action": action,
        "installation": payloads.installation(urls, inst),
        "repositories": [payloads.installation_repository(r) for r in repos],
        "requester": payloads.user(urls, sender) if action == "created" else None,
        "sender": payloads.user(urls, sender),
    }
    hub.emit_app(inst.app, "installation", body)


def installation_repositories(
    hub: WebhookHub,
    urls: Urls,
    inst: Installation,
    action: str,
    repos: list[Repo],
    sender: User,
) -> None:
    """``installation_repositories`` ``added``/``removed`` to the App's webhook."""
    listed = [payloads.installation_repository(r) for r in repos]
    body: Json = {
        "action": action,
        "installation": payloads.installation(urls, inst),
        "repository_selection": inst.repository_selection,
        "repositories_added": listed if action == "added" else [],
        "repositories_removed": listed if action == "removed" else [],
        "requester": payloads.user(urls, sender),
        "sender": payloads.user(urls, sender),
    }
    hub.emit_app(inst.app, "installation_repositories", body)
