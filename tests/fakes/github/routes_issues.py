"""Labels, milestones, issues and issue comments."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from tests.fakes.forge_server.clock import parse_iso
from tests.fakes.github import lookups, render
from tests.fakes.github import webhook_events as hooks
from tests.fakes.github.errors import ApiError, not_found, validation_failed
from tests.fakes.github.models import Issue, Label, Milestone, Repo
from tests.fakes.github.routing import Ctx, Reply, read, write

COLOR = re.compile(r"^[0-9a-fA-F]{6}$")
ISSUES = ("issues",)
ISSUES_OR_PULLS = ("issues", "pull_requests")

# -- labels -----------------------------------------------------------------------------


def _label_json(ctx: Ctx, lb: Label) -> dict[str, Any]:
    return render.rest_label(ctx.urls, ctx.the_repo(), lb)


def _label(ctx: Ctx) -> Label:
    found = ctx.the_repo().label_named(ctx.params["name"])
    if found is None:
        raise not_found()
    return found


def _color(value: Any) -> str:
    color = str(value).lstrip("#")
    if not COLOR.match(color):
        raise validation_failed("Label", "color", "invalid")
    return color.lower()


def list_labels(ctx: Ctx) -> Reply:
    labels = sorted(ctx.the_repo().labels.values(), key=lambda lb: lb.id)
    return ctx.page(labels, lambda lb: _label_json(ctx, lb))


def create_label(ctx: Ctx) -> Reply:
    body, repo = ctx.json(), ctx.the_repo()
    name = str(body["name"]).strip()
    if not name:
        raise validation_failed("Label", "name", "missing_field")
    if repo.label_named(name) is not None:
        raise validation_failed("Label", "name", "already_exists")
    label = ctx.state.add_label(
        repo,
        name,
        color=_color(body.get("color", "ededed")),
        description=body.get("description"),
    )
    hooks.label(ctx, label, "created")
    out = _label_json(ctx, label)
    return Reply(201, out, lookups.location(out["url"]))


def get_label(ctx: Ctx) -> Reply:
    return Reply(200, _label_json(ctx, _label(ctx)))


def update_label(ctx: Ctx) -> Reply:
    label, body, repo = _label(ctx), ctx.json(), ctx.the_repo()
    before = dataclasses.replace(label)
    if "new_name" in body:
        other = repo.label_named(str(body["new_name"]))
        if other is not None and other.id != label.id:
            raise validation_failed("Label", "name", "already_exists")
        label.name = str(body["new_name"])
    if "color" in body:
        label.color = _color(body["color"])
    if "description" in body:
        label.description = body["description"]
    if label != before:
        hooks.label(ctx, label, "edited", before=before)
    return Reply(200, _label_json(ctx, label))


def delete_label(ctx: Ctx) -> Reply:
    label, repo = _label(ctx), ctx.the_repo()
    hooks.label(ctx, label, "deleted")
    del repo.labels[label.id]
    for issue in repo.issues.values():
        if label.id in issue.labels:
            issue.labels.remove(label.id)
    return Reply(204)


# -- milestones -------------------------------------------------------------------------


def _milestone_json(ctx: Ctx, ms: Milestone) -> dict[str, Any] | None:
    return render.milestone(ctx.urls, ctx.the_repo(), ms)


#: GitHub keeps a milestone's due date as a day, which it answers as midnight US Pacific
#: time (07:00 or 08:00 UTC, by daylight saving time).
PACIFIC = ZoneInfo("America/Los_Angeles")


def due_day(moment: datetime) -> datetime:
    """What GitHub keeps of a due time: its day in US Pacific time, at midnight there.

    So ``2020-09-24T06:59:00Z`` is kept as ``2020-09-23T07:00:00Z`` (the day before)
    and ``2020-09-24T07:01:00Z`` as ``2020-09-24T07:00:00Z``.
    """
    day = moment.astimezone(PACIFIC).date()
    return datetime(day.year, day.month, day.day, tzinfo=PACIFIC).astimezone(UTC)


def _due_on(value: Any) -> Any:
    if value is None:
        return None
    try:
        return due_day(parse_iso(str(value)))
    except ValueError as exc:
        raise validation_failed("Milestone", "due_on", "invalid") from exc


def _completeness(repo: Repo, ms: Milestone) -> float:
    members = [i for i in repo.issues.values() if i.milestone == ms.number]
    closed = sum(1 for i in members if i.state == "closed")
    return closed / len(members) if members else 0.0


def list_milestones(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    state = lookups.choice(ctx, "state", ("open", "closed", "all"), "open", "Milestone")
    sort = lookups.choice(ctx, "sort", ("due_on", "completeness"), "due_on", "Milestone")
    direction = lookups.choice(ctx, "direction", ("asc", "desc"), "asc", "Milestone")
    found = [m for m in repo.milestones.values() if state in ("all", m.state)]
    if sort == "completeness":
        found = lookups.ordered(found, lambda m: _completeness(repo, m), direction, lambda m: m.id)
    else:
        # Milestones without a due date come last either way.
        dated = [m for m in found if m.due_on is not None]
        undated = sorted((m for m in found if m.due_on is None), key=lambda m: m.number)
        dated = lookups.ordered(dated, lambda m: m.due_on, direction, lambda m: m.number)
        found = dated + undated
    return ctx.page(found, lambda m: _milestone_json(ctx, m))


def create_milestone(ctx: Ctx) -> Reply:
    body, repo = ctx.json(), ctx.the_repo()
    title = str(body["title"]).strip()
    if not title:
        raise validation_failed("Milestone", "title", "missing_field")
    if any(m.title == title for m in repo.milestones.values()):
        raise validation_failed("Milestone", "title", "already_exists")
    state = body.get("state", "open")
    ms = ctx.state.add_milestone(
        repo,
        title,
        state=state,
        description=body.get("description"),
        due_on=_due_on(body.get("due_on")),
        creator=ctx.actor,
        closed_at=ctx.state.now() if state == "closed" else None,
    )
    hooks.milestone_created(ctx, ms)
    out = _milestone_json(ctx, ms)
    assert out is not None
    return Reply(201, out, lookups.location(out["url"]))


def _milestone(ctx: Ctx) -> Milestone:
    return lookups.by_id(ctx.the_repo().milestones, ctx, "milestone_number")


def get_milestone(ctx: Ctx) -> Reply:
    return Reply(200, _milestone_json(ctx, _milestone(ctx)))


def update_milestone(ctx: Ctx) -> Reply:
    ms, body, repo = _milestone(ctx), ctx.json(), ctx.the_repo()
    before = hooks.milestone_snapshot(ms)
    now = ctx.state.now()
    if "title" in body:
        title = str(body["title"])
        if any(m.title == title and m.id != ms.id for m in repo.milestones.values()):
            raise validation_failed("Milestone", "title", "already_exists")
        ms.title = title
    if "description" in body:
        ms.description = body["description"]
    if "due_on" in body:
        ms.due_on = _due_on(body["due_on"])
    if "state" in body and body["state"] != ms.state:
        ms.state = body["state"]
        ms.closed_at = now if ms.state == "closed" else None
    ms.updated_at = now
    hooks.milestone_changed(ctx, ms, before)
    return Reply(200, _milestone_json(ctx, ms))


def delete_milestone(ctx: Ctx) -> Reply:
    ms, repo = _milestone(ctx), ctx.the_repo()
    hooks.milestone_deleted(ctx, ms)
    del repo.milestones[ms.number]
    for issue in repo.issues.values():
        if issue.milestone == ms.number:
            issue.milestone = None
    return Reply(204)


# -- issues -----------------------------------------------------------------------------


def issue_json(ctx: Ctx, issue: Issue) -> dict[str, Any]:
    out = render.issue(ctx.urls, ctx.the_repo(), issue, ctx.app_of(issue.via_app))
    return render.with_rest_labels(out)


def _milestone_number(ctx: Ctx, value: Any) -> int | None:
    if value is None:
        return None
    try:
        wanted = int(value)
    except (TypeError, ValueError) as exc:
        raise validation_failed("Issue", "milestone", "invalid", value=str(value)) from exc
    if wanted not in ctx.the_repo().milestones:
        raise validation_failed("Issue", "milestone", "invalid", value=wanted)
    return wanted


def _label_ids(ctx: Ctx, values: list[Any]) -> list[int]:
    """Label names (or objects with a name); GitHub creates the ones that do not exist."""
    ids: list[int] = []
    for value in values:
        name = value.get("name") if isinstance(value, dict) else value
        if not name:
            continue
        label = ctx.state.label_for(ctx.the_repo(), str(name))
        if label.id not in ids:
            ids.append(label.id)
    return ids


def _assignees(ctx: Ctx, body: dict[str, Any]) -> list[Any] | None:
    logins: list[str] | None = None
    if body.get("assignees") is not None:
        logins = [a.get("login") if isinstance(a, dict) else a for a in body["assignees"]]
    elif "assignee" in body:
        logins = [body["assignee"]] if body["assignee"] else []
    if logins is None:
        return None
    users = []
    for login in logins:
        user = ctx.state.users.get(str(login).casefold())
        if user is None:
            raise validation_failed("Issue", "assignees", "invalid", value=str(login))
        users.append(user)
    return users


def list_issues(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    state = lookups.choice(ctx, "state", ("open", "closed", "all"), "open", "Issue")
    sort = lookups.choice(ctx, "sort", ("created", "updated", "comments"), "created", "Issue")
    direction = lookups.choice(ctx, "direction", ("asc", "desc"), "desc", "Issue")
    since = lookups.since(ctx, "Issue")
    found = [i for i in repo.issues.values() if state in ("all", i.state)]
    if since is not None:
        found = [i for i in found if i.updated_at >= since]
    labels = ctx.arg("labels")
    if labels:
        wanted = {name.strip().casefold() for name in labels.split(",") if name.strip()}
        found = [
            i
            for i in found
            if wanted <= {repo.labels[x].name.casefold() for x in i.labels if x in repo.labels}
        ]
    milestone = ctx.arg("milestone")
    if milestone == "*":
        found = [i for i in found if i.milestone is not None]
    elif milestone == "none":
        found = [i for i in found if i.milestone is None]
    elif milestone:
        found = [i for i in found if str(i.milestone) == milestone]
    assignee = ctx.arg("assignee")
    if assignee == "*":
        found = [i for i in found if i.assignees]
    elif assignee == "none":
        found = [i for i in found if not i.assignees]
    elif assignee:
        found = [i for i in found if any(a.login == assignee for a in i.assignees)]
    creator = ctx.arg("creator")
    if creator:
        found = [i for i in found if i.user.login == creator]
    keys = {
        "created": lambda i: i.created_at,
        "updated": lambda i: i.updated_at,
        "comments": lambda i: sum(1 for c in repo.comments.values() if c.issue_number == i.number),
    }
    found = lookups.ordered(found, keys[sort], direction, lambda i: i.number)
    return ctx.page(found, lambda i: issue_json(ctx, i))


def create_issue(ctx: Ctx) -> Reply:
    body, repo = ctx.json(), ctx.the_repo()
    title = str(body["title"]).strip()
    if not title:
        raise validation_failed("Issue", "title", "missing_field")
    lookups.text_field(body, "body", "Issue")
    milestone = _milestone_number(ctx, body.get("milestone"))
    assignees = _assignees(ctx, body) or []
    issue = ctx.state.add_issue(
        repo,
        title,
        author=ctx.actor,
        body=body.get("body"),
        milestone=milestone,
        assignees=[a.login for a in assignees],
        via_app=ctx.via_app,
    )
    issue.labels = _label_ids(ctx, body.get("labels") or [])
    hooks.issue_opened(ctx, issue)
    out = issue_json(ctx, issue)
    return Reply(201, out, lookups.location(out["url"]))


def get_issue(ctx: Ctx) -> Reply:
    return Reply(200, issue_json(ctx, lookups.issue(ctx)))


def apply_issue_edit(ctx: Ctx, issue: Issue, body: dict[str, Any]) -> None:
    """The fields an issue edit may change (shared by the pull request edit)."""
    now = ctx.state.now()
    if body.get("title") is not None:
        title = str(body["title"]).strip()
        if not title:
            raise validation_failed("Issue", "title", "missing_field")
        issue.title = title
    if "body" in body:
        lookups.text_field(body, "body", "Issue")
        issue.body = body["body"]
    state = body.get("state")
    if state in ("open", "closed") and state != issue.state:
        if issue.pull is not None and issue.pull.merged:
            raise ApiError(
                422,
                "Validation Failed",
                errors=[
                    {
                        "resource": "PullRequest",
                        "field": "state",
                        "code": "custom",
                        "message": "state cannot be changed. The pull request has been merged.",
                    }
                ],
            )
        issue.state = state
        if state == "closed":
            issue.closed_at, issue.closed_by = now, ctx.actor
            if issue.pull is None:
                issue.state_reason = body.get("state_reason") or "completed"
        else:
            issue.closed_at, issue.closed_by = None, None
            issue.state_reason = "reopened" if issue.pull is None else None
    elif "state_reason" in body and issue.pull is None and issue.state == "closed":
        issue.state_reason = body["state_reason"]
    if "milestone" in body:
        issue.milestone = _milestone_number(ctx, body["milestone"])
    if body.get("labels") is not None:
        issue.labels = _label_ids(ctx, body["labels"])
    assignees = _assignees(ctx, body)
    if assignees is not None:
        issue.assignees = assignees
    issue.updated_at = now


def update_issue(ctx: Ctx) -> Reply:
    issue = lookups.issue(ctx)
    before = hooks.snapshot(issue)
    apply_issue_edit(ctx, issue, ctx.json())
    hooks.issue_changed(ctx, issue, before)
    return Reply(200, issue_json(ctx, issue))


# -- locks --------------------------------------------------------------------------------

LOCK_REASONS = ("off-topic", "too heated", "resolved", "spam")


def lock_issue(ctx: Ctx) -> Reply:
    """PUT /lock: locks the conversation (a pull request's too), with or without a reason.

    Locking a locked conversation again keeps it locked and takes the reason given (the
    contract refuses any reason but GitHub's four before this runs).
    """
    issue, body = lookups.issue(ctx), ctx.json()
    reason = body.get("lock_reason")
    if reason is not None and reason not in LOCK_REASONS:
        raise validation_failed("Issue", "lock_reason", "invalid", value=str(reason))
    before = hooks.snapshot(issue)
    issue.locked, issue.active_lock_reason = True, reason
    issue.updated_at = ctx.state.now()
    hooks.issue_changed(ctx, issue, before)
    return Reply(204)


def unlock_issue(ctx: Ctx) -> Reply:
    """DELETE /lock: unlocks (an unlocked conversation stays so, still 204)."""
    issue = lookups.issue(ctx)
    if issue.locked:
        before = hooks.snapshot(issue)
        issue.locked, issue.active_lock_reason = False, None
        issue.updated_at = ctx.state.now()
        hooks.issue_changed(ctx, issue, before)
    return Reply(204)


# -- an issue's labels ----------------------------------------------------------------------


def _issue_labels(ctx: Ctx, issue: Issue) -> Reply:
    repo = ctx.the_repo()
    labels = [repo.labels[i] for i in issue.labels if i in repo.labels]
    return ctx.page(labels, lambda lb: _label_json(ctx, lb))


def _requested_labels(ctx: Ctx, *, setting: bool = False) -> list[Any]:
    """``{"labels": [...]}`` (names or ``{"name": ...}``), or as GitHub's text documents
    too, the bare array (what PyGithub sends) and, when setting, a single name. Adding
    wants at least one; setting an empty list removes them all."""
    body = ctx.json_value()
    values = body.get("labels") if isinstance(body, dict) else body
    if setting and isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or (not values and not setting):
        raise validation_failed("Label", "labels", "missing_field")
    return values


def list_issue_labels(ctx: Ctx) -> Reply:
    return _issue_labels(ctx, lookups.issue(ctx))


def add_issue_labels(ctx: Ctx) -> Reply:
    """Adds to the issue's labels (creating labels that do not exist); 200 with them all."""
    issue = lookups.issue(ctx)
    before = hooks.snapshot(issue)
    for label_id in _label_ids(ctx, _requested_labels(ctx)):
        if label_id not in issue.labels:
            issue.labels.append(label_id)
    issue.updated_at = ctx.state.now()
    hooks.issue_changed(ctx, issue, before)
    return _issue_labels(ctx, issue)


def set_issue_labels(ctx: Ctx) -> Reply:
    """Replaces the issue's labels; 200 with the new ones."""
    issue = lookups.issue(ctx)
    before = hooks.snapshot(issue)
    issue.labels = _label_ids(ctx, _requested_labels(ctx, setting=True))
    issue.updated_at = ctx.state.now()
    hooks.issue_changed(ctx, issue, before)
    return _issue_labels(ctx, issue)


def remove_all_issue_labels(ctx: Ctx) -> Reply:
    issue = lookups.issue(ctx)
    if issue.labels:
        before = hooks.snapshot(issue)
        issue.labels = []
        issue.updated_at = ctx.state.now()
        hooks.issue_changed(ctx, issue, before)
    return Reply(204)


def remove_issue_label(ctx: Ctx) -> Reply:
    """200 with the labels left; 404 "Label does not exist" when the issue lacks it."""
    issue, repo = lookups.issue(ctx), ctx.the_repo()
    label = repo.label_named(ctx.params["name"])
    if label is None or label.id not in issue.labels:
        raise ApiError(404, "Label does not exist")
    before = hooks.snapshot(issue)
    issue.labels.remove(label.id)
    issue.updated_at = ctx.state.now()
    hooks.issue_changed(ctx, issue, before)
    return _issue_labels(ctx, issue)


# -- issue comments ---------------------------------------------------------------------


def comment_json(ctx: Ctx, comment: Any) -> dict[str, Any]:
    return render.issue_comment(ctx.urls, ctx.the_repo(), comment, ctx.app_of(comment.via_app))


def list_repo_comments(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    sort = ctx.arg("sort")
    since = lookups.since(ctx, "IssueComment")
    found = sorted(repo.comments.values(), key=lambda c: c.id)
    if since is not None:
        found = [c for c in found if c.updated_at >= since]
    if sort is not None:
        sort = lookups.choice(ctx, "sort", ("created", "updated"), "created", "IssueComment")
        direction = lookups.choice(ctx, "direction", ("asc", "desc"), "asc", "IssueComment")
        key = (lambda c: c.created_at) if sort == "created" else (lambda c: c.updated_at)
        found = lookups.ordered(found, key, direction, lambda c: c.id)
    return ctx.page(found, lambda c: comment_json(ctx, c))


def list_issue_comments(ctx: Ctx) -> Reply:
    issue, repo = lookups.issue(ctx), ctx.the_repo()
    since = lookups.since(ctx, "IssueComment")
    found = sorted(
        (c for c in repo.comments.values() if c.issue_number == issue.number), key=lambda c: c.id
    )
    if since is not None:
        found = [c for c in found if c.updated_at >= since]
    return ctx.page(found, lambda c: comment_json(ctx, c))


def create_comment(ctx: Ctx) -> Reply:
    issue, body = lookups.issue(ctx), ctx.json()
    text = body["body"]
    if not str(text).strip():
        raise validation_failed("IssueComment", "body", "missing_field")
    lookups.text_field(body, "body", "IssueComment")
    comment = ctx.state.add_comment(
        ctx.the_repo(),
        issue.number,
        str(text),
        author=ctx.actor,
        via_app=ctx.via_app,
        touch_issue=True,
    )
    hooks.issue_comment(ctx, comment, "created")
    out = comment_json(ctx, comment)
    return Reply(201, out, lookups.location(out["url"]))


def _comment(ctx: Ctx) -> Any:
    return lookups.by_id(ctx.the_repo().comments, ctx, "comment_id")


def get_comment(ctx: Ctx) -> Reply:
    return Reply(200, comment_json(ctx, _comment(ctx)))


def update_comment(ctx: Ctx) -> Reply:
    comment, body = _comment(ctx), ctx.json()
    if not str(body["body"]).strip():
        raise validation_failed("IssueComment", "body", "missing_field")
    lookups.text_field(body, "body", "IssueComment")
    old_body = comment.body
    comment.body = str(body["body"])
    comment.updated_at = ctx.state.now()
    hooks.issue_comment(ctx, comment, "edited", old_body=old_body)
    return Reply(200, comment_json(ctx, comment))


def delete_comment(ctx: Ctx) -> Reply:
    comment = _comment(ctx)
    del ctx.the_repo().comments[comment.id]
    hooks.issue_comment(ctx, comment, "deleted")
    return Reply(204)


R = "/repos/{owner}/{repo}"
IP = ISSUES_OR_PULLS
ROUTES = [
    read(f"{R}/labels", list_labels, IP),
    write("POST", f"{R}/labels", create_label, IP, "Label"),
    read(f"{R}/labels/{{name}}", get_label, IP),
    write("PATCH", f"{R}/labels/{{name}}", update_label, IP, "Label"),
    write("DELETE", f"{R}/labels/{{name}}", delete_label, IP, "Label"),
    read(f"{R}/milestones", list_milestones, IP),
    write("POST", f"{R}/milestones", create_milestone, IP, "Milestone"),
    read(f"{R}/milestones/{{milestone_number}}", get_milestone, IP),
    write("PATCH", f"{R}/milestones/{{milestone_number}}", update_milestone, IP, "Milestone"),
    write("DELETE", f"{R}/milestones/{{milestone_number}}", delete_milestone, IP, "Milestone"),
    read(f"{R}/issues", list_issues, ISSUES),
    write("POST", f"{R}/issues", create_issue, ISSUES, "Issue"),
    read(f"{R}/issues/{{issue_number}}", get_issue, IP),
    write("PATCH", f"{R}/issues/{{issue_number}}", update_issue, IP, "Issue"),
    write("PUT", f"{R}/issues/{{issue_number}}/lock", lock_issue, IP, "Issue"),
    write("DELETE", f"{R}/issues/{{issue_number}}/lock", unlock_issue, IP, "Issue"),
    read(f"{R}/issues/{{issue_number}}/labels", list_issue_labels, IP),
    write("POST", f"{R}/issues/{{issue_number}}/labels", add_issue_labels, IP, "Label"),
    write("PUT", f"{R}/issues/{{issue_number}}/labels", set_issue_labels, IP, "Label"),
    write("DELETE", f"{R}/issues/{{issue_number}}/labels", remove_all_issue_labels, IP, "Label"),
    write(
        "DELETE", f"{R}/issues/{{issue_number}}/labels/{{name}}", remove_issue_label, IP, "Label"
    ),
    read(f"{R}/issues/comments", list_repo_comments, IP),
    read(f"{R}/issues/{{issue_number}}/comments", list_issue_comments, IP),
    write("POST", f"{R}/issues/{{issue_number}}/comments", create_comment, IP, "IssueComment"),
    read(f"{R}/issues/comments/{{comment_id}}", get_comment, IP),
    write("PATCH", f"{R}/issues/comments/{{comment_id}}", update_comment, IP, "IssueComment"),
    write("DELETE", f"{R}/issues/comments/{{comment_id}}", delete_comment, IP, "IssueComment"),
]
