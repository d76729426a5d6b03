"""Labels, milestones, issues (and pull requests as issues), their comments and reactions.

Forgejo's rules modelled here (routers/api/v1/repo/issue*.go, label.go, milestone.go):

* Issues and pull requests share one ``index`` per repository; the issues list holds
  both unless ``type`` is ``issues`` or ``pulls``; ``state`` defaults to ``open``;
  ``since``/``before`` filter on the update time; the default sort is ``latest``
  (newest first).
* A creator who may not write to the repository gets an issue without the labels,
  milestone and assignees it asked for (``CreateIssue`` drops them); ``labels`` of a
  new issue are label ids, those of ``/issues/{index}/labels`` ids or names.
* A milestone keeps ``due_on`` to the second as given; one without a due date is kept
  as 9999-12-31 and read back as ``null``.
* The author and the times are the caller and the clock: nothing a client sends
  changes them (the Python API sets them for tests, as a migration would).
* Forgejo 11's API cannot lock or unlock an issue (its description has no such
  operation); ``is_locked`` is read only there, and set through the Python state.
* Reactions are the instance's allowed ones (``+1 -1 laugh hooray confused heart rocket
  eyes``; another is 403 "'x' is not an allowed reaction"); reacting again with the
  same one answers 200 with the existing reaction, a new one 201.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tests.fakes.forge_server.clock import parse_iso
from tests.fakes.forgejo import render, webhooks
from tests.fakes.forgejo.errors import NOT_WRITER, ApiError, forbidden, not_found, unprocessable
from tests.fakes.forgejo.models import Comment, Issue, Label, Milestone, Reaction, Repo
from tests.fakes.forgejo.routing import Ctx, Reply, under_repo

ALLOWED_REACTIONS = ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes")
NO_DUE_DATE = datetime(9999, 12, 31, 23, 59, 59).astimezone()


def _writer(ctx: Ctx) -> bool:
    return ctx.doer is not None and ctx.state.can_write(ctx.doer, ctx.the_repo())


def _require_writer(ctx: Ctx) -> None:
    if not _writer(ctx):
        raise ApiError(403, NOT_WRITER)


def _time(value: Any, field: str) -> datetime:
    try:
        return parse_iso(str(value))
    except ValueError:
        raise unprocessable(f"[{field}]: invalid time") from None


# -- labels ------------------------------------------------------------------------------


def _label(ctx: Ctx) -> Label:
    found = ctx.the_repo().labels.get(ctx.int_param("id"))
    if found is None:
        raise not_found()
    return found


def _color(value: Any) -> str:
    color = str(value).lstrip("#").lower()
    if len(color) not in (3, 6) or any(c not in "0123456789abcdef" for c in color):
        raise unprocessable("invalid color format")
    return color


def list_labels(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    found = sorted(repo.labels.values(), key=lambda lb: (lb.name, lb.id))
    return ctx.page(found, lambda lb: render.label(ctx.urls, repo, lb))


def get_label(ctx: Ctx) -> Reply:
    return Reply(200, render.label(ctx.urls, ctx.the_repo(), _label(ctx)))


def create_label(ctx: Ctx) -> Reply:
    repo, body = ctx.the_repo(), ctx.json()
    label = ctx.state.create_label(
        repo, str(body["name"]), _color(body["color"]), str(body.get("description", ""))
    )
    label.exclusive = bool(body.get("exclusive", False))
    label.is_archived = bool(body.get("is_archived", False))
    return Reply(201, render.label(ctx.urls, repo, label))


def edit_label(ctx: Ctx) -> Reply:
    label, body = _label(ctx), ctx.json()
    if body.get("name") is not None:
        label.name = str(body["name"])
    if body.get("color") is not None:
        label.color = _color(body["color"])
    for key in ("description", "exclusive", "is_archived"):
        if body.get(key) is not None:
            setattr(label, key, body[key])
    return Reply(200, render.label(ctx.urls, ctx.the_repo(), label))


def delete_label(ctx: Ctx) -> Reply:
    repo, label = ctx.the_repo(), _label(ctx)
    del repo.labels[label.id]
    for issue in repo.issues.values():
        if label.id in issue.labels:
            issue.labels.remove(label.id)
    return Reply(204)


# -- milestones --------------------------------------------------------------------------


def _milestone(ctx: Ctx) -> Milestone:
    repo, key = ctx.the_repo(), ctx.params["id"]
    found = repo.milestones.get(int(key)) if key.isdigit() else None
    if found is None:  # Forgejo takes a milestone's name in place of its id too
        found = next((m for m in repo.milestones.values() if m.title == key), None)
    if found is None:
        raise not_found()
    return found


def _set_state(ctx: Ctx, ms: Milestone, state: Any) -> None:
    if state not in (None, "open", "closed"):
        raise unprocessable(f"[State]: unknown state {state}")
    if state is not None and state != ms.state:
        ms.state = str(state)
        ms.closed_at = ctx.state.now() if state == "closed" else None


def list_milestones(ctx: Ctx) -> Reply:
    repo, wanted = ctx.the_repo(), ctx.arg("state", "open")
    name = ctx.arg("name")
    found = [
        m
        for m in repo.milestones.values()
        if (wanted == "all" or m.state == wanted) and (not name or m.title == name)
    ]
    found.sort(key=lambda m: (m.due_on or NO_DUE_DATE, m.id))
    return ctx.page(found, lambda m: render.milestone(repo, m))


def get_milestone(ctx: Ctx) -> Reply:
    return Reply(200, render.milestone(ctx.the_repo(), _milestone(ctx)))


def create_milestone(ctx: Ctx) -> Reply:
    repo, body = ctx.the_repo(), ctx.json()
    due = body.get("due_on")
    ms = ctx.state.create_milestone(
        repo, str(body.get("title", "")), due_on=_time(due, "Deadline") if due else None
    )
    ms.description = str(body.get("description", ""))
    _set_state(ctx, ms, body.get("state"))
    return Reply(201, render.milestone(repo, ms))


def edit_milestone(ctx: Ctx) -> Reply:
    ms, body = _milestone(ctx), ctx.json()
    if body.get("title"):
        ms.title = str(body["title"])
    if body.get("description") is not None:
        ms.description = str(body["description"])
    if body.get("due_on") is not None:
        ms.due_on = _time(body["due_on"], "Deadline")
    _set_state(ctx, ms, body.get("state"))
    ms.updated = ctx.state.now()
    return Reply(200, render.milestone(ctx.the_repo(), ms))


def delete_milestone(ctx: Ctx) -> Reply:
    repo, ms = ctx.the_repo(), _milestone(ctx)
    del repo.milestones[ms.id]
    for issue in repo.issues.values():
        if issue.milestone == ms.id:
            issue.milestone = None
    return Reply(204)


# -- issues ------------------------------------------------------------------------------


def find_issue(ctx: Ctx) -> Issue:
    try:
        index = int(ctx.params["index"])
    except ValueError:
        raise not_found() from None
    found = ctx.the_repo().issues.get(index)
    if found is None:
        raise not_found()
    return found


def _matches(ctx: Ctx, repo: Repo, issue: Issue) -> bool:
    state = ctx.arg("state", "open")
    if state != "all" and issue.state != state:
        return False
    kind = ctx.arg("type")
    if (kind == "issues" and issue.pull is not None) or (kind == "pulls" and issue.pull is None):
        return False
    since, before = ctx.arg("since"), ctx.arg("before")
    if since and issue.updated < _time(since, "since"):
        return False
    if before and issue.updated > _time(before, "before"):
        return False
    names = [n for n in (ctx.arg("labels") or "").split(",") if n]
    if names:
        wanted = {lb.id for lb in repo.labels.values() if lb.name in names}
        if not wanted & set(issue.labels):
            return False
    milestones = [m for m in (ctx.arg("milestones") or "").split(",") if m]
    if milestones:
        ids = {
            m.id
            for m in repo.milestones.values()
            if m.title in milestones or str(m.id) in milestones
        }
        if issue.milestone not in ids:
            return False
    creator = ctx.arg("created_by")
    if creator and issue.poster.login.casefold() != creator.casefold():
        return False
    assignee = ctx.arg("assigned_by")
    if assignee and not any(a.login.casefold() == assignee.casefold() for a in issue.assignees):
        return False
    words = (ctx.arg("q") or "").casefold()
    return not words or words in issue.title.casefold() or words in issue.body.casefold()


def list_issues(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    found = [i for i in repo.issues.values() if _matches(ctx, repo, i)]
    order = ctx.arg("sort", "latest")
    if order == "oldest":
        found.sort(key=lambda i: (i.created, i.index))
    elif order == "recentupdate":
        found.sort(key=lambda i: (i.updated, i.index), reverse=True)
    elif order == "leastupdate":
        found.sort(key=lambda i: (i.updated, i.index))
    else:
        found.sort(key=lambda i: (i.created, i.index), reverse=True)
    return ctx.page(found, lambda i: render.issue(ctx.urls, repo, i, ctx.doer))


def get_issue(ctx: Ctx) -> Reply:
    return Reply(200, render.issue(ctx.urls, ctx.the_repo(), find_issue(ctx), ctx.doer))


def _assignees(ctx: Ctx, body: dict[str, Any]) -> list[Any] | None:
    names = list(body.get("assignees") or [])
    if body.get("assignee"):
        names.insert(0, body["assignee"])
    if not names and "assignees" not in body and "assignee" not in body:
        return None
    people = []
    for name in dict.fromkeys(str(n) for n in names):
        who = ctx.state.find_user(name)
        if who is None:
            raise unprocessable(f"user does not exist [uid: 0, name: {name}]")
        people.append(who)
    return people


def _milestone_id(repo: Repo, value: Any) -> int | None:
    if not value:
        return None
    if int(value) not in repo.milestones:
        raise not_found()
    return int(value)


def create_issue(ctx: Ctx) -> Reply:
    repo, body = ctx.the_repo(), ctx.json()
    issue = ctx.state.create_issue(
        repo, str(body["title"]), author=ctx.the_doer(), body=str(body.get("body", ""))
    )
    issue.ref = str(body.get("ref", ""))
    if body.get("due_date"):
        issue.due_date = _time(body["due_date"], "Deadline")
    if _writer(ctx):
        issue.labels = [int(i) for i in body.get("labels") or [] if int(i) in repo.labels]
        issue.milestone = _milestone_id(repo, body.get("milestone"))
        issue.assignees = _assignees(ctx, body) or []
    webhooks.issue_event(ctx, issue, "opened")
    if body.get("closed"):
        _close(ctx, issue, "closed")
    return Reply(201, render.issue(ctx.urls, repo, issue, ctx.doer))


def _close(ctx: Ctx, issue: Issue, state: str) -> None:
    if state == issue.state:
        return
    issue.state = state
    issue.closed_at = ctx.state.now() if state == "closed" else None
    issue.updated = ctx.state.now()
    webhooks.issue_event(ctx, issue, "closed" if state == "closed" else "reopened")


def apply_edit(ctx: Ctx, issue: Issue, body: dict[str, Any]) -> None:
    """What an issue edit and a pull request edit share."""
    repo, poster = ctx.the_repo(), ctx.doer is not None and issue.poster.id == ctx.doer.id
    if not (poster or _writer(ctx)):
        raise forbidden(NOT_WRITER)
    now = ctx.state.now()
    changes: dict[str, Any] = {}
    if body.get("title") is not None and body["title"] != issue.title:
        changes["title"] = {"from": issue.title}
        issue.title = str(body["title"])
    if body.get("body") is not None and body["body"] != issue.body:
        changes["body"] = {"from": issue.body}
        issue.body = str(body["body"])
    if changes:
        issue.updated = now
        webhooks.issue_event(ctx, issue, "edited", changes)
    if _writer(ctx):
        if "milestone" in body and body["milestone"] is not None:
            before, issue.milestone = issue.milestone, _milestone_id(repo, body["milestone"])
            if before != issue.milestone:
                issue.updated = now
                action = "milestoned" if issue.milestone else "demilestoned"
                webhooks.issue_event(ctx, issue, action, event="milestone")
        people = _assignees(ctx, body)
        if people is not None and [p.id for p in people] != [a.id for a in issue.assignees]:
            issue.assignees = people
            issue.updated = now
            webhooks.issue_event(ctx, issue, "assigned", event="assign")
        if body.get("unset_due_date"):
            issue.due_date = None
        elif body.get("due_date"):
            issue.due_date = _time(body["due_date"], "Deadline")
        if body.get("labels") is not None:  # a pull request edit's
            issue.labels = [int(i) for i in body["labels"] if int(i) in repo.labels]
            webhooks.issue_event(ctx, issue, "label_updated", event="label")
    if body.get("state") is not None:
        if body["state"] not in ("open", "closed"):
            raise unprocessable(f"[State]: unknown state {body['state']}")
        _close(ctx, issue, str(body["state"]))


def edit_issue(ctx: Ctx) -> Reply:
    issue = find_issue(ctx)
    apply_edit(ctx, issue, ctx.json())
    return Reply(201, render.issue(ctx.urls, ctx.the_repo(), issue, ctx.doer))


# -- an issue's labels -------------------------------------------------------------------


def _named_labels(repo: Repo, given: list[Any]) -> list[int]:
    found = []
    for value in given:
        numeric = isinstance(value, int) or (isinstance(value, str) and value.isdigit())
        if numeric and int(value) in repo.labels:
            found.append(int(value))
            continue
        match = next((lb for lb in repo.labels.values() if lb.name == str(value)), None)
        if match is None:
            raise unprocessable(f"label does not exist [id: 0, name: {value}]")
        found.append(match.id)
    return found


def _issue_labels(ctx: Ctx, issue: Issue, status: int = 200) -> Reply:
    repo = ctx.the_repo()
    return Reply(
        status,
        [render.label(ctx.urls, repo, repo.labels[i]) for i in issue.labels if i in repo.labels],
    )


def get_issue_labels(ctx: Ctx) -> Reply:
    return _issue_labels(ctx, find_issue(ctx))


def _relabel(ctx: Ctx, issue: Issue, labels: list[int]) -> None:
    if labels != issue.labels:
        action = "label_updated" if labels else "label_cleared"
        issue.labels = labels
        issue.updated = ctx.state.now()
        webhooks.issue_event(ctx, issue, action, event="label")


def add_issue_labels(ctx: Ctx) -> Reply:
    _require_writer(ctx)
    issue = find_issue(ctx)
    added = _named_labels(ctx.the_repo(), list(ctx.json().get("labels") or []))
    _relabel(ctx, issue, list(dict.fromkeys(issue.labels + added)))
    return _issue_labels(ctx, issue)


def replace_issue_labels(ctx: Ctx) -> Reply:
    _require_writer(ctx)
    issue = find_issue(ctx)
    _relabel(ctx, issue, _named_labels(ctx.the_repo(), list(ctx.json().get("labels") or [])))
    return _issue_labels(ctx, issue)


def clear_issue_labels(ctx: Ctx) -> Reply:
    _require_writer(ctx)
    _relabel(ctx, find_issue(ctx), [])
    return Reply(204)


def remove_issue_label(ctx: Ctx) -> Reply:
    _require_writer(ctx)
    issue, label_id = find_issue(ctx), ctx.int_param("id")
    if label_id not in ctx.the_repo().labels:
        raise unprocessable(f"label does not exist [id: {label_id}]")
    _relabel(ctx, issue, [i for i in issue.labels if i != label_id])
    return Reply(204)


# -- comments ----------------------------------------------------------------------------


def _comment(ctx: Ctx) -> Comment:
    found = ctx.the_repo().comments.get(ctx.int_param("id"))
    if found is None or found.review_id is not None:
        raise not_found()
    return found


def _updated_window(ctx: Ctx, found: list[Comment]) -> list[Comment]:
    since, before = ctx.arg("since"), ctx.arg("before")
    if since:
        found = [c for c in found if c.updated >= _time(since, "since")]
    if before:
        found = [c for c in found if c.updated <= _time(before, "before")]
    return sorted(found, key=lambda c: (c.created, c.id))


def list_repo_comments(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    found = _updated_window(ctx, [c for c in repo.comments.values() if c.review_id is None])
    return ctx.page(found, lambda c: render.comment(ctx.urls, repo, c, ctx.doer))


def list_comments(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), find_issue(ctx)
    found = _updated_window(
        ctx, [c for c in repo.comments.values() if c.index == issue.index and c.review_id is None]
    )
    return Reply(200, [render.comment(ctx.urls, repo, c, ctx.doer) for c in found])


def create_comment(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), find_issue(ctx)
    if issue.is_locked and not _writer(ctx):
        raise forbidden("Issue is locked")
    comment = ctx.state.create_comment(
        repo, issue.index, str(ctx.json()["body"]), author=ctx.the_doer()
    )
    issue.updated = comment.created
    webhooks.comment_event(ctx, issue, comment, "created")
    return Reply(201, render.comment(ctx.urls, repo, comment, ctx.doer))


def get_comment(ctx: Ctx) -> Reply:
    return Reply(200, render.comment(ctx.urls, ctx.the_repo(), _comment(ctx), ctx.doer))


def _own_or_writer(ctx: Ctx, comment: Comment) -> None:
    if not (ctx.doer is not None and (comment.poster.id == ctx.doer.id or _writer(ctx))):
        raise ApiError(403, NOT_WRITER)


def edit_comment(ctx: Ctx) -> Reply:
    comment = _comment(ctx)
    _own_or_writer(ctx, comment)
    body = str(ctx.json()["body"])
    if body != comment.body:
        before, comment.body = comment.body, body
        comment.updated = ctx.state.now()
        issue = ctx.the_repo().issues[comment.index]
        webhooks.comment_event(ctx, issue, comment, "edited", {"body": {"from": before}})
    return Reply(200, render.comment(ctx.urls, ctx.the_repo(), comment, ctx.doer))


def delete_comment(ctx: Ctx) -> Reply:
    repo, comment = ctx.the_repo(), _comment(ctx)
    _own_or_writer(ctx, comment)
    del repo.comments[comment.id]
    repo.reactions = [r for r in repo.reactions if r.comment_id != comment.id]
    webhooks.comment_event(ctx, repo.issues[comment.index], comment, "deleted")
    return Reply(204)


# -- reactions ---------------------------------------------------------------------------


def _reactions(repo: Repo, index: int, comment_id: int | None) -> list[Reaction]:
    return [r for r in repo.reactions if r.index == index and r.comment_id == comment_id]


def _react(ctx: Ctx, index: int, comment_id: int | None) -> Reply:
    repo, content = ctx.the_repo(), str(ctx.json().get("content", ""))
    if content not in ALLOWED_REACTIONS:
        raise forbidden(f"'{content}' is not an allowed reaction")
    doer = ctx.the_doer()
    for existing in _reactions(repo, index, comment_id):
        if existing.user.id == doer.id and existing.content == content:
            return Reply(200, render.reaction(ctx.urls, existing, doer))
    reaction = Reaction(
        ctx.state.next_id("reaction"), doer, content, ctx.state.now(), index, comment_id
    )
    repo.reactions.append(reaction)
    return Reply(201, render.reaction(ctx.urls, reaction, doer))


def _unreact(ctx: Ctx, index: int, comment_id: int | None) -> Reply:
    repo, content, doer = ctx.the_repo(), str(ctx.json().get("content", "")), ctx.the_doer()
    repo.reactions = [
        r
        for r in repo.reactions
        if not (
            r.index == index
            and r.comment_id == comment_id
            and r.user.id == doer.id
            and r.content == content
        )
    ]
    return Reply(200)


def list_issue_reactions(ctx: Ctx) -> Reply:
    issue = find_issue(ctx)
    found = _reactions(ctx.the_repo(), issue.index, None)
    return ctx.page(found, lambda r: render.reaction(ctx.urls, r, ctx.doer))


def post_issue_reaction(ctx: Ctx) -> Reply:
    return _react(ctx, find_issue(ctx).index, None)


def delete_issue_reaction(ctx: Ctx) -> Reply:
    return _unreact(ctx, find_issue(ctx).index, None)


def list_comment_reactions(ctx: Ctx) -> Reply:
    comment = _comment(ctx)
    found = _reactions(ctx.the_repo(), comment.index, comment.id)
    return Reply(200, [render.reaction(ctx.urls, r, ctx.doer) for r in found])


def post_comment_reaction(ctx: Ctx) -> Reply:
    comment = _comment(ctx)
    return _react(ctx, comment.index, comment.id)


def delete_comment_reaction(ctx: Ctx) -> Reply:
    comment = _comment(ctx)
    return _unreact(ctx, comment.index, comment.id)


_issue = under_repo(scope="issue")


ROUTES = [
    _issue("GET", "/labels", list_labels),
    _issue("POST", "/labels", create_label, "write"),
    _issue("GET", "/labels/{id}", get_label),
    _issue("PATCH", "/labels/{id}", edit_label, "write"),
    _issue("DELETE", "/labels/{id}", delete_label, "write"),
    _issue("GET", "/milestones", list_milestones),
    _issue("POST", "/milestones", create_milestone, "write"),
    _issue("GET", "/milestones/{id}", get_milestone),
    _issue("PATCH", "/milestones/{id}", edit_milestone, "write"),
    _issue("DELETE", "/milestones/{id}", delete_milestone, "write"),
    _issue("GET", "/issues", list_issues),
    _issue("POST", "/issues", create_issue),
    _issue("GET", "/issues/{index}", get_issue),
    _issue("PATCH", "/issues/{index}", edit_issue),
    _issue("GET", "/issues/{index}/labels", get_issue_labels),
    _issue("POST", "/issues/{index}/labels", add_issue_labels),
    _issue("PUT", "/issues/{index}/labels", replace_issue_labels),
    _issue("DELETE", "/issues/{index}/labels", clear_issue_labels),
    _issue("DELETE", "/issues/{index}/labels/{id}", remove_issue_label),
    _issue("GET", "/issues/comments", list_repo_comments),
    _issue("GET", "/issues/{index}/comments", list_comments),
    _issue("POST", "/issues/{index}/comments", create_comment),
    _issue("GET", "/issues/comments/{id}", get_comment),
    _issue("PATCH", "/issues/comments/{id}", edit_comment),
    _issue("DELETE", "/issues/comments/{id}", delete_comment),
    _issue("GET", "/issues/{index}/reactions", list_issue_reactions),
    _issue("POST", "/issues/{index}/reactions", post_issue_reaction),
    _issue("DELETE", "/issues/{index}/reactions", delete_issue_reaction),
    _issue("GET", "/issues/comments/{id}/reactions", list_comment_reactions),
    _issue("POST", "/issues/comments/{id}/reactions", post_comment_reaction),
    _issue("DELETE", "/issues/comments/{id}/reactions", delete_comment_reaction),
]
