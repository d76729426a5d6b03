"""Pull requests, merging, review requests, reviews and their line comments.

Forgejo's rules modelled here (routers/api/v1/repo/pull.go, pull_review.go):

* A pull request takes the next index of the repository's one issue index; a second
  open one for the same head and base is 409; head equal to base is 422.
* Merging (``Do``: merge, squash, rebase, ...) makes a merge commit on the base branch,
  marks the pull request merged and closed, and answers 200 without a body; an already
  merged one is 405. ``GET .../merge`` is 204 when merged, 404 when not.
* Review requests are reviews of state ``REQUEST_REVIEW`` (the POST answers them, 201);
  a submitted review of that reviewer takes the request's place.
* A review without ``event`` is ``PENDING`` until submitted; the author of the pull
  request may neither approve nor request changes ("approve your own pull is not
  allowed"); a line comment is on ``new_position`` (a line of the new file) or
  ``old_position`` (of the old one), and its ``diff_hunk`` is the hunk up to that line.
* Dismissing sets ``dismissed`` (and undismissing clears it); only a pending review or
  one's own may be deleted.
* What Forgejo records in a pull request's timeline moves its issue's update time, as
  every comment it creates does (``updateCommentInfos`` ends with ``UpdateIssueCols(...,
  "updated_unix")``, models/issues/comment.go): a review submitted, a line comment of a
  submitted review, a dismissal, a review request. A pending review's comments do not
  (they return before that line).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.forgejo import render, webhooks
from tests.fakes.forgejo.errors import ApiError, conflict, forbidden, not_found, unprocessable
from tests.fakes.forgejo.models import Comment, Issue, Review
from tests.fakes.forgejo.routes_issues import apply_edit, find_issue
from tests.fakes.forgejo.routing import Ctx, Reply, under_repo
from tests.fakes.gitserver import bare_repos

EVENTS = {
    "APPROVED": "APPROVED",
    "REQUEST_CHANGES": "REQUEST_CHANGES",
    "COMMENT": "COMMENT",
    "PENDING": "PENDING",
    "": "PENDING",
}
MERGE_STYLES = ("merge", "rebase", "rebase-merge", "squash", "fast-forward-only", "manually-merged")


def _pull(ctx: Ctx) -> Issue:
    issue = find_issue(ctx)
    if issue.pull is None:
        raise not_found()
    return issue


def _render(ctx: Ctx, issue: Issue) -> Any:
    return render.pull(ctx.urls, ctx.state, ctx.the_repo(), issue, ctx.doer)


def list_pulls(ctx: Ctx) -> Reply:
    repo, state = ctx.the_repo(), ctx.arg("state", "open")
    found = [
        i
        for i in repo.issues.values()
        if i.pull is not None and (state == "all" or i.state == state)
    ]
    poster = ctx.arg("poster")
    if poster:
        found = [i for i in found if i.poster.login.casefold() == poster.casefold()]
    order = ctx.arg("sort")
    if order == "oldest":
        found.sort(key=lambda i: i.index)
    elif order == "recentupdate":
        found.sort(key=lambda i: (i.updated, i.index), reverse=True)
    elif order == "leastupdate":
        found.sort(key=lambda i: (i.updated, i.index))
    else:
        found.sort(key=lambda i: i.index, reverse=True)
    return ctx.page(found, lambda i: _render(ctx, i))


def get_pull(ctx: Ctx) -> Reply:
    return Reply(200, _render(ctx, _pull(ctx)))


def create_pull(ctx: Ctx) -> Reply:
    repo, body = ctx.the_repo(), ctx.json()
    head, base = str(body.get("head", "")), str(body.get("base", ""))
    for branch in (head, base):
        if bare_repos.branch_sha(repo.git_dir, branch) is None:
            raise not_found(f"branch does not exist [name: {branch}]")
    if head == base:
        raise unprocessable(
            "Invalid PullRequest: There are no changes between the head and the base"
        )
    for other in repo.issues.values():
        pr = other.pull
        if pr and other.state == "open" and (pr.head_ref, pr.base_ref) == (head, base):
            raise conflict(
                f"pull request already exists for these targets [id: {other.id}, "
                f"issue_id: {other.id}, head_repo_id: {repo.id}, base_repo_id: {repo.id}, "
                f"head_branch: {head}, base_branch: {base}]"
            )
    issue = ctx.state.create_pull(
        repo,
        str(body.get("title", "")),
        head,
        base,
        author=ctx.the_doer(),
        body=str(body.get("body", "")),
    )
    if ctx.state.can_write(ctx.the_doer(), repo):
        issue.labels = [int(i) for i in body.get("labels") or [] if int(i) in repo.labels]
        if body.get("milestone"):
            issue.milestone = (
                int(body["milestone"]) if int(body["milestone"]) in repo.milestones else None
            )
        names = list(body.get("assignees") or []) + (
            [body["assignee"]] if body.get("assignee") else []
        )
        issue.assignees = [u for n in dict.fromkeys(names) if (u := ctx.state.find_user(str(n)))]
    webhooks.pull_event(ctx, issue, "opened")
    return Reply(201, _render(ctx, issue))


def edit_pull(ctx: Ctx) -> Reply:
    issue, body = _pull(ctx), ctx.json()
    assert issue.pull is not None
    if issue.pull.merged and body.get("state") == "open":
        raise ApiError(409, "cannot reopen a merged pull request")
    if body.get("base") and body["base"] != issue.pull.base_ref:
        if bare_repos.branch_sha(ctx.the_repo().git_dir, str(body["base"])) is None:
            raise not_found()
        issue.pull.base_ref = str(body["base"])
    if body.get("allow_maintainer_edit") is not None:
        issue.pull.allow_maintainer_edit = bool(body["allow_maintainer_edit"])
    apply_edit(ctx, issue, body)
    return Reply(201, _render(ctx, issue))


def is_merged(ctx: Ctx) -> Reply:
    issue = _pull(ctx)
    assert issue.pull is not None
    if not issue.pull.merged:
        raise not_found()
    return Reply(204)


def merge(ctx: Ctx) -> Reply:
    repo, issue, body = ctx.the_repo(), _pull(ctx), ctx.json()
    pr = issue.pull
    assert pr is not None
    if body.get("Do") not in MERGE_STYLES:
        raise unprocessable("[Do]: Required")
    if pr.merged:
        raise ApiError(405, "")
    if issue.state == "closed":
        raise not_found()
    doer, now = ctx.the_doer(), ctx.state.now()
    if body["Do"] == "manually-merged":
        sha = str(body.get("MergeCommitID") or pr.head_sha)
    else:
        title = (
            body.get("MergeTitleField") or f"Merge pull request '{issue.title}' (#{issue.index})"
        )
        try:
            sha = bare_repos.merge(
                repo.git_dir,
                pr.base_ref,
                pr.head_sha,
                str(title),
                (doer.full_name or doer.login, doer.email or f"{doer.login}@forgejo.test"),
                now,
            )
        except ValueError:
            raise ApiError(409, "Merge Conflict") from None
    pr.merged, pr.merged_at, pr.merged_by, pr.merge_commit_sha = True, now, doer, sha
    issue.state, issue.closed_at, issue.updated = "closed", now, now
    if body.get("delete_branch_after_merge"):
        bare_repos.delete_ref(repo.git_dir, f"refs/heads/{pr.head_ref}")
    webhooks.pull_event(ctx, issue, "closed")
    return Reply(200)


# -- review requests ---------------------------------------------------------------------


def _people(ctx: Ctx) -> list[Any]:
    names = ctx.json().get("reviewers") or []
    found = []
    for name in names:
        who = ctx.state.find_user(str(name))
        if who is None:
            raise unprocessable(f"user does not exist [uid: 0, name: {name}]")
        found.append(who)
    return found


def request_reviews(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    pr = issue.pull
    assert pr is not None
    created = []
    for who in _people(ctx):
        if who.id == issue.poster.id:
            raise unprocessable("Author cannot be requested as reviewer")
        if any(u.id == who.id for u in pr.requested_reviewers):
            continue
        pr.requested_reviewers.append(who)
        now = ctx.state.now()
        review = Review(
            ctx.state.next_id("review"),
            issue.index,
            who,
            "REQUEST_REVIEW",
            "",
            pr.head_sha,
            now,
            now,
        )
        repo.reviews[review.id] = review
        created.append(review)
        issue.updated = now
        webhooks.review_request_event(ctx, issue, who, "review_requested")
    return Reply(201, [render.review(ctx.urls, repo, rv, ctx.doer) for rv in created])


def unrequest_reviews(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    pr = issue.pull
    assert pr is not None
    for who in _people(ctx):
        pr.requested_reviewers = [u for u in pr.requested_reviewers if u.id != who.id]
        issue.updated = ctx.state.now()
        for rv in list(repo.reviews.values()):
            if (
                rv.index == issue.index
                and rv.reviewer.id == who.id
                and rv.state == "REQUEST_REVIEW"
            ):
                del repo.reviews[rv.id]
        webhooks.review_request_event(ctx, issue, who, "review_request_removed")
    return Reply(204)


# -- reviews -----------------------------------------------------------------------------


def _review(ctx: Ctx, issue: Issue) -> Review:
    found = ctx.the_repo().reviews.get(ctx.int_param("id"))
    if found is None or found.index != issue.index:
        raise not_found()
    if found.state == "PENDING" and (ctx.doer is None or found.reviewer.id != ctx.doer.id):
        raise not_found()  # a pending review is its author's alone
    return found


def list_reviews(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    found = [
        rv
        for rv in sorted(repo.reviews.values(), key=lambda r: r.id)
        if rv.index == issue.index
        and (rv.state != "PENDING" or (ctx.doer is not None and rv.reviewer.id == ctx.doer.id))
    ]
    return ctx.page(found, lambda rv: render.review(ctx.urls, repo, rv, ctx.doer))


def get_review(ctx: Ctx) -> Reply:
    issue = _pull(ctx)
    return Reply(200, render.review(ctx.urls, ctx.the_repo(), _review(ctx, issue), ctx.doer))


def _hunk(repo_dir: Any, base: str, head: str, path: str, line: int) -> str:
    lines = bare_repos.file_diff(repo_dir, base, head, path)
    if not lines:
        return ""
    for at, diff_line in enumerate(lines):
        number = diff_line.new if line > 0 else diff_line.old
        if number == abs(line):
            start = diff_line.hunk_start
            return "\n".join(d.text for d in lines[start : at + 1])
    return ""


def _line_comment(ctx: Ctx, issue: Issue, review: Review, spec: dict[str, Any]) -> Comment:
    repo, pr = ctx.the_repo(), issue.pull
    assert pr is not None
    new, old = int(spec.get("new_position") or 0), int(spec.get("old_position") or 0)
    line = new if new else -old
    if not line:
        raise unprocessable("either new_position or old_position must be set")
    path = str(spec.get("path", ""))
    now = ctx.state.now()
    comment = Comment(
        ctx.state.next_id("comment"),
        issue.index,
        str(spec.get("body", "")),
        ctx.the_doer(),
        now,
        now,
        review_id=review.id,
        path=path,
        line=line,
        commit_id=review.commit_id,
        diff_hunk=_hunk(repo.git_dir, pr.merge_base, pr.head_sha, path, line),
    )
    repo.comments[comment.id] = comment
    return comment


def _check_event(issue: Issue, doer: Any, state: str) -> None:
    if issue.poster.id == doer.id and state == "APPROVED":
        raise unprocessable("approve your own pull is not allowed")
    if issue.poster.id == doer.id and state == "REQUEST_CHANGES":
        raise unprocessable("reject your own pull is not allowed")


def _submitted(ctx: Ctx, issue: Issue, review: Review) -> None:
    """A review left PENDING: it takes its reviewer's request's place, and is sent."""
    pr, repo = issue.pull, ctx.the_repo()
    assert pr is not None
    review.submitted = ctx.state.now()
    pr.requested_reviewers = [u for u in pr.requested_reviewers if u.id != review.reviewer.id]
    for rv in list(repo.reviews.values()):
        if (
            rv.index == issue.index
            and rv.reviewer.id == review.reviewer.id
            and rv.state == "REQUEST_REVIEW"
        ):
            del repo.reviews[rv.id]
    review.official = ctx.state.can_write(review.reviewer, repo)
    issue.updated = review.submitted
    webhooks.review_event(ctx, issue, review)


def create_review(ctx: Ctx) -> Reply:
    repo, issue, body = ctx.the_repo(), _pull(ctx), ctx.json()
    pr = issue.pull
    assert pr is not None
    event = str(body.get("event") or "")
    if event not in EVENTS:
        raise unprocessable(f"unknown review event: {event}")
    state, doer = EVENTS[event], ctx.the_doer()
    _check_event(issue, doer, state)
    comments = list(body.get("comments") or [])
    if state in ("COMMENT", "REQUEST_CHANGES") and not body.get("body") and not comments:
        raise unprocessable("review event COMMENT requires a body or a comment")
    now = ctx.state.now()
    review = Review(
        ctx.state.next_id("review"),
        issue.index,
        doer,
        state,
        str(body.get("body", "")),
        str(body.get("commit_id") or pr.head_sha),
        now,
        now,
    )
    repo.reviews[review.id] = review
    for spec in comments:
        _line_comment(ctx, issue, review, spec)
    if state != "PENDING":
        _submitted(ctx, issue, review)
    return Reply(200, render.review(ctx.urls, repo, review, doer))


def submit_review(ctx: Ctx) -> Reply:
    repo, issue, body = ctx.the_repo(), _pull(ctx), ctx.json()
    review = _review(ctx, issue)
    if review.state != "PENDING":
        raise unprocessable("only a pending review can be submitted")
    event = str(body.get("event") or "")
    if event not in EVENTS or EVENTS[event] == "PENDING":
        raise unprocessable(f"unknown review event: {event}")
    _check_event(issue, ctx.the_doer(), EVENTS[event])
    review.state = EVENTS[event]
    if body.get("body"):
        review.body = str(body["body"])
    review.updated = ctx.state.now()
    _submitted(ctx, issue, review)
    return Reply(200, render.review(ctx.urls, repo, review, ctx.doer))


def delete_review(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    review = _review(ctx, issue)
    doer = ctx.the_doer()
    if review.reviewer.id != doer.id and not doer.is_admin:
        raise forbidden("reviewer is not the doer")
    del repo.reviews[review.id]
    for cid in [c.id for c in repo.comments.values() if c.review_id == review.id]:
        del repo.comments[cid]
    return Reply(204)


def _dismissal(ctx: Ctx, dismissed: bool) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    review = _review(ctx, issue)
    if not ctx.state.can_write(ctx.the_doer(), repo):
        raise forbidden("Must be repo admin")
    if review.state not in ("APPROVED", "REQUEST_CHANGES"):
        raise unprocessable(
            "not need to dismiss this review because it's type is not Approve or change request"
        )
    review.dismissed = dismissed
    review.updated = issue.updated = ctx.state.now()
    return Reply(200, render.review(ctx.urls, repo, review, ctx.doer))


def dismiss_review(ctx: Ctx) -> Reply:
    return _dismissal(ctx, True)


def undismiss_review(ctx: Ctx) -> Reply:
    return _dismissal(ctx, False)


def list_review_comments(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    review = _review(ctx, issue)
    found = sorted(
        (c for c in repo.comments.values() if c.review_id == review.id), key=lambda c: c.id
    )
    return Reply(200, [render.review_comment(ctx.urls, repo, c, ctx.doer) for c in found])


def create_review_comment(ctx: Ctx) -> Reply:
    repo, issue = ctx.the_repo(), _pull(ctx)
    review = _review(ctx, issue)
    comment = _line_comment(ctx, issue, review, ctx.json())
    if review.state != "PENDING":
        issue.updated = comment.created
    return Reply(200, render.review_comment(ctx.urls, repo, comment, ctx.doer))


def _review_comment(ctx: Ctx) -> tuple[Review, Comment]:
    issue = _pull(ctx)
    review = _review(ctx, issue)
    found = ctx.the_repo().comments.get(ctx.int_param("comment"))
    if found is None or found.review_id != review.id:
        raise not_found()
    return review, found


def get_review_comment(ctx: Ctx) -> Reply:
    _, comment = _review_comment(ctx)
    return Reply(200, render.review_comment(ctx.urls, ctx.the_repo(), comment, ctx.doer))


def delete_review_comment(ctx: Ctx) -> Reply:
    _, comment = _review_comment(ctx)
    doer = ctx.the_doer()
    if comment.poster.id != doer.id and not ctx.state.can_write(doer, ctx.the_repo()):
        raise forbidden("user should have a permission to write to a repo")
    del ctx.the_repo().comments[comment.id]
    return Reply(204)


_pulls = under_repo("/pulls")


R = "/{index}/reviews/{id}"
ROUTES = [
    _pulls("GET", "", list_pulls),
    _pulls("POST", "", create_pull),
    _pulls("GET", "/{index}", get_pull),
    _pulls("PATCH", "/{index}", edit_pull),
    _pulls("GET", "/{index}/merge", is_merged),
    _pulls("POST", "/{index}/merge", merge, "write"),
    _pulls("POST", "/{index}/requested_reviewers", request_reviews),
    _pulls("DELETE", "/{index}/requested_reviewers", unrequest_reviews),
    _pulls("GET", "/{index}/reviews", list_reviews),
    _pulls("POST", "/{index}/reviews", create_review),
    _pulls("GET", R, get_review),
    _pulls("POST", R, submit_review),
    _pulls("DELETE", R, delete_review),
    _pulls("GET", f"{R}/comments", list_review_comments),
    _pulls("POST", f"{R}/comments", create_review_comment),
    _pulls("GET", f"{R}/comments/{{comment}}", get_review_comment),
    _pulls("DELETE", f"{R}/comments/{{comment}}", delete_review_comment),
    _pulls("POST", f"{R}/dismissals", dismiss_review),
    _pulls("POST", f"{R}/undismissals", undismiss_review),
]
