"""Reviews of a pull request and review comments: where a comment lands in the diff,
pending reviews (their author's alone until submitted), submitting, dismissing, deleting.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.github import lookups, render
from tests.fakes.github import webhook_events as hooks
from tests.fakes.github.errors import ApiError, not_found, unprocessable
from tests.fakes.github.models import Issue, Repo, Review, ReviewComment
from tests.fakes.github.routes_pulls import PULLS, custom_error
from tests.fakes.github.routing import Ctx, Reply, read, write
from tests.fakes.gitserver import bare_repos

THREAD = "pull_request_review_thread"
EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


# -- reviews ----------------------------------------------------------------------------


def review_json(ctx: Ctx, review: Review) -> dict[str, Any]:
    return render.review(ctx.urls, ctx.the_repo(), review)


def list_reviews(ctx: Ctx) -> Reply:
    issue, repo = lookups.pull(ctx), ctx.the_repo()
    found = [
        r
        for r in sorted(repo.reviews.values(), key=lambda r: r.id)
        if r.pull_number == issue.number and (r.state != "PENDING" or r.user == ctx.actor)
    ]
    return ctx.page(found, lambda r: review_json(ctx, r))


def create_review(ctx: Ctx) -> Reply:
    issue, body, repo = lookups.pull(ctx), ctx.json(), ctx.the_repo()
    pr = issue.pull
    assert pr is not None
    event = body.get("event")
    text = str(body.get("body") or "")
    comments = body.get("comments") or []
    if event is None:
        if _pending_of(ctx, issue) is not None:
            raise unprocessable("User can only have one pending review per pull request")
    else:
        _event_allowed(ctx, issue, event, text, bool(comments))
    commit_id = str(body.get("commit_id") or pr.head_sha)
    if not _in_pull(repo, issue, commit_id):
        raise unprocessable(f"Commit {commit_id} is not part of the pull request")
    drafts = [_placed_comment(ctx, issue, commit_id, c, simple=True) for c in comments]
    state = EVENTS[event] if event else "PENDING"
    review = ctx.state.add_review(
        repo, issue.number, author=ctx.actor, state=state, body=text, commit_id=commit_id
    )
    for placed in drafts:
        ctx.state.add_review_comment(repo, issue.number, review_id=review.id, **placed)
    if state != "PENDING":
        _reviewed(issue, ctx.actor.login)
        hooks.review_submitted(ctx, review)
    return Reply(200, review_json(ctx, review))


def _reviewed(issue: Issue, login: str) -> None:
    """A submitted review answers its author's review request (GitHub drops it)."""
    pr = issue.pull
    assert pr is not None
    pr.requested_reviewers = [u for u in pr.requested_reviewers if u.login != login]


def _event_allowed(ctx: Ctx, issue: Issue, event: str, text: str, has_comments: bool) -> None:
    """GitHub's rules for submitting a review with ``event`` (422 when it refuses)."""
    if event not in EVENTS:
        raise unprocessable(f"Unknown event {event!r}")
    if issue.user == ctx.actor and event == "APPROVE":
        raise unprocessable("Can not approve your own pull request")
    if issue.user == ctx.actor and event == "REQUEST_CHANGES":
        raise unprocessable("Can not request changes on your own pull request")
    if event == "REQUEST_CHANGES" and not text.strip():
        raise unprocessable("Body is required when requesting changes")
    if event == "COMMENT" and not text.strip() and not has_comments:
        raise unprocessable("Body is required when commenting")


def submit_review(ctx: Ctx) -> Reply:
    """``events``: a pending review is submitted with an event (and optionally a body)."""
    review, body, repo = _review(ctx), ctx.json(), ctx.the_repo()
    issue = lookups.pull(ctx)
    if review.state != "PENDING":
        raise unprocessable("Can not submit a non-pending review")
    event = body.get("event")
    if not isinstance(event, str):
        raise unprocessable("Unrecognizable event")
    text = str(body["body"]) if body.get("body") is not None else review.body
    has_comments = any(c.review_id == review.id for c in repo.review_comments.values())
    _event_allowed(ctx, issue, event, text, has_comments)
    review.body, review.state = text, EVENTS[event]
    review.submitted_at = ctx.state.now()
    _reviewed(issue, review.user.login)
    hooks.review_submitted(ctx, review)
    return Reply(200, review_json(ctx, review))


def list_review_comments_of_review(ctx: Ctx) -> Reply:
    """A review's comments, in the legacy ``review-comment`` shape GitHub answers here."""
    review, repo = _review(ctx), ctx.the_repo()
    found = sorted(
        (c for c in repo.review_comments.values() if c.review_id == review.id), key=lambda c: c.id
    )

    def legacy(comment: ReviewComment) -> dict[str, Any]:
        out = review_comment_json(ctx, comment)
        out.setdefault("position", None)
        # Required there; a file-level comment has no diff position: GitHub says 1.
        out.setdefault("original_position", 1)
        return out

    return ctx.page(found, legacy)


def _pending_of(ctx: Ctx, issue: Issue) -> Review | None:
    """The actor's pending review of this pull request (at most one, as on GitHub)."""
    return next(
        (
            r
            for r in ctx.the_repo().reviews.values()
            if r.state == "PENDING" and r.user == ctx.actor and r.pull_number == issue.number
        ),
        None,
    )


def _review(ctx: Ctx) -> Review:
    issue = lookups.pull(ctx)
    review = lookups.by_id(ctx.the_repo().reviews, ctx, "review_id")
    hidden = review.state == "PENDING" and review.user != ctx.actor
    if review.pull_number != issue.number or hidden:
        raise not_found()
    return review


def get_review(ctx: Ctx) -> Reply:
    return Reply(200, review_json(ctx, _review(ctx)))


def dismiss_review(ctx: Ctx) -> Reply:
    """Only an approval or a request for changes can be dismissed (422 otherwise)."""
    review, body = _review(ctx), ctx.json()
    if review.state == "PENDING":
        raise unprocessable("Can not dismiss a pending review")
    if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
        raise unprocessable(f"Can not dismiss a {review.state.lower()} pull request review")
    if not str(body.get("message") or "").strip():
        raise unprocessable("Message is required to dismiss a review")
    review.state = "DISMISSED"
    hooks.review(ctx, review, "dismissed")
    return Reply(200, review_json(ctx, review))


def delete_pending_review(ctx: Ctx) -> Reply:
    """A pending review (and its comments) goes; a submitted one stays (422)."""
    review, repo = _review(ctx), ctx.the_repo()
    if review.state != "PENDING":
        raise unprocessable("Can not delete a non-pending pull request review")
    del repo.reviews[review.id]
    for comment in [c for c in repo.review_comments.values() if c.review_id == review.id]:
        del repo.review_comments[comment.id]
    return Reply(200, review_json(ctx, review))


def update_review(ctx: Ctx) -> Reply:
    review, body = _review(ctx), ctx.json()
    old_body = review.body
    review.body = str(body["body"])
    if review.state != "PENDING" and old_body != review.body:
        hooks.review(ctx, review, "edited", old_body=old_body)
    return Reply(200, review_json(ctx, review))


# -- review comments --------------------------------------------------------------------


def _in_pull(repo: Repo, issue: Issue, commit_id: str) -> bool:
    pr = issue.pull
    assert pr is not None
    sha = bare_repos.resolve_commit(repo.git_dir, commit_id)
    return sha is not None and bare_repos.is_ancestor(repo.git_dir, sha, pr.head_sha)


def _placed_comment(
    ctx: Ctx, issue: Issue, commit_id: str, spec: dict[str, Any], *, simple: bool = False
) -> dict[str, Any]:
    """Where a new review comment lands in the diff; 422 when GitHub cannot place it."""
    repo = ctx.the_repo()
    pr = issue.pull
    assert pr is not None

    def refuse(field: str, message: str) -> ApiError:
        return (
            unprocessable(message)
            if simple
            else custom_error("PullRequestReviewComment", message, field)
        )

    path = str(spec["path"])
    lines = bare_repos.file_diff(repo.git_dir, pr.base_sha, commit_id, path)
    if lines is None:
        raise refuse(f"{THREAD}.path", f"{THREAD}.path could not be resolved")
    placed: dict[str, Any] = {
        "author": ctx.actor,
        "body": str(spec["body"]),
        "path": path,
        "commit_id": commit_id,
    }
    if spec.get("subject_type") == "file":
        placed.update(subject_type="file", line=None, diff_hunk="")
        return placed
    side = str(spec.get("side") or "RIGHT")
    if spec.get("line") is not None:
        line = int(spec["line"])
        target = _find_line(lines, line, side)
        if target is None:
            raise refuse(f"{THREAD}.line", f"{THREAD}.line could not be resolved")
    elif spec.get("position") is not None:
        position = int(spec["position"])
        if not 0 < position < len(lines) or lines[position].text.startswith("@@"):
            raise refuse("position", "position is invalid")
        target = lines[position]
        side = "LEFT" if target.text.startswith("-") else "RIGHT"
        line = target.old if side == "LEFT" else target.new
    else:
        raise refuse("line", "line or position is required")
    placed.update(
        line=line,
        side=side,
        position=target.position,
        diff_hunk="\n".join(d.text for d in lines[target.hunk_start : target.position + 1]),
    )
    if spec.get("start_line") is not None:
        start_side = str(spec.get("start_side") or side)
        start = _find_line(lines, int(spec["start_line"]), start_side)
        if start is None or int(spec["start_line"]) >= line:
            raise refuse(f"{THREAD}.start_line", f"{THREAD}.start_line must precede the end line")
        placed.update(start_line=int(spec["start_line"]), start_side=start_side)
    return placed


def _find_line(lines: list[bare_repos.DiffLine], line: int, side: str) -> Any:
    for d in lines:
        if side == "RIGHT" and d.new == line and d.text[:1] in "+ ":
            return d
        if side == "LEFT" and d.old == line and d.text[:1] in "- ":
            return d
    return None


def review_comment_json(ctx: Ctx, comment: ReviewComment) -> dict[str, Any]:
    return render.review_comment(ctx.urls, ctx.the_repo(), comment)


def _sorted_review_comments(ctx: Ctx, found: list[ReviewComment]) -> list[ReviewComment]:
    since = lookups.since(ctx, "PullRequestReviewComment")
    if since is not None:
        found = [c for c in found if c.updated_at >= since]
    sort = lookups.choice(
        ctx, "sort", ("created", "updated", "created_at"), "created", "PullRequestReviewComment"
    )
    direction = lookups.choice(ctx, "direction", ("asc", "desc"), "asc", "PullRequestReviewComment")
    key = (lambda c: c.updated_at) if sort == "updated" else (lambda c: c.created_at)
    return lookups.ordered(found, key, direction, lambda c: c.id)


def _visible(ctx: Ctx, comment: ReviewComment) -> bool:
    """A pending review's comments are its author's until it is submitted."""
    review = ctx.the_repo().reviews.get(comment.review_id or 0)
    return review is None or review.state != "PENDING" or review.user == ctx.actor


def list_review_comments(ctx: Ctx) -> Reply:
    issue, repo = lookups.pull(ctx), ctx.the_repo()
    found = [
        c
        for c in repo.review_comments.values()
        if c.pull_number == issue.number and _visible(ctx, c)
    ]
    return ctx.page(_sorted_review_comments(ctx, found), lambda c: review_comment_json(ctx, c))


def list_repo_review_comments(ctx: Ctx) -> Reply:
    found = [c for c in ctx.the_repo().review_comments.values() if _visible(ctx, c)]
    return ctx.page(_sorted_review_comments(ctx, found), lambda c: review_comment_json(ctx, c))


def create_review_comment(ctx: Ctx) -> Reply:
    issue, body, repo = lookups.pull(ctx), ctx.json(), ctx.the_repo()
    lookups.text_field(body, "body", "PullRequestReviewComment")
    if body.get("in_reply_to") is not None:
        parent = repo.review_comments.get(int(body["in_reply_to"]))
        if parent is None or parent.pull_number != issue.number:
            raise not_found()
        return _reply_to(ctx, issue, parent, str(body["body"]))
    if _pending_of(ctx, issue) is not None:
        # A single comment opens a review of its own, and one may be pending at a time.
        raise custom_error(
            "PullRequestReviewComment",
            "user_id can only have one pending review per pull request",
            "user_id",
        )
    commit_id = str(body["commit_id"])
    if not _in_pull(repo, issue, commit_id):
        raise custom_error(
            "PullRequestReviewComment", "commit_id is not part of the pull request", "commit_id"
        )
    placed = _placed_comment(ctx, issue, commit_id, body)
    comment = ctx.state.add_review_comment(repo, issue.number, **placed)
    _announce(ctx, comment)
    out = review_comment_json(ctx, comment)
    return Reply(201, out, lookups.location(out["url"]))


def _reply_to(ctx: Ctx, issue: Issue, parent: ReviewComment, text: str) -> Reply:
    repo = ctx.the_repo()
    root = parent
    while root.in_reply_to_id is not None and root.in_reply_to_id in repo.review_comments:
        root = repo.review_comments[root.in_reply_to_id]
    comment = ctx.state.add_review_comment(
        repo,
        issue.number,
        author=ctx.actor,
        body=text,
        path=root.path,
        line=root.line,
        side=root.side,
        start_line=root.start_line,
        start_side=root.start_side,
        commit_id=root.commit_id,
        diff_hunk=root.diff_hunk,
        position=root.position,
        subject_type=root.subject_type,
        in_reply_to=root.id,
    )
    _announce(ctx, comment)
    out = review_comment_json(ctx, comment)
    return Reply(201, out, lookups.location(out["url"]))


def _announce(ctx: Ctx, comment: ReviewComment) -> None:
    """A single comment comes with a review of its own, submitted at once: its events."""
    review = ctx.the_repo().reviews.get(comment.review_id or 0)
    if review is not None:
        hooks.review_submitted(ctx, review)


def create_reply(ctx: Ctx) -> Reply:
    issue, body = lookups.pull(ctx), ctx.json()
    parent = lookups.by_id(ctx.the_repo().review_comments, ctx, "comment_id")
    if parent.pull_number != issue.number:
        raise not_found()
    lookups.text_field(body, "body", "PullRequestReviewComment")
    return _reply_to(ctx, issue, parent, str(body["body"]))


def get_review_comment(ctx: Ctx) -> Reply:
    comment = lookups.by_id(ctx.the_repo().review_comments, ctx, "comment_id")
    return Reply(200, review_comment_json(ctx, comment))


def update_review_comment(ctx: Ctx) -> Reply:
    comment, body = lookups.by_id(ctx.the_repo().review_comments, ctx, "comment_id"), ctx.json()
    lookups.text_field(body, "body", "PullRequestReviewComment")
    old_body = comment.body
    comment.body = str(body["body"])
    comment.updated_at = ctx.state.now()
    hooks.review_comment(ctx, comment, "edited", old_body=old_body)
    return Reply(200, review_comment_json(ctx, comment))


def delete_review_comment(ctx: Ctx) -> Reply:
    comment = lookups.by_id(ctx.the_repo().review_comments, ctx, "comment_id")
    del ctx.the_repo().review_comments[comment.id]
    hooks.review_comment(ctx, comment, "deleted")
    return Reply(204)


R = "/repos/{owner}/{repo}"
P, REVIEW, COMMENT = PULLS, "PullRequestReview", "PullRequestReviewComment"
ROUTES = [
    read(f"{R}/pulls/{{pull_number}}/reviews", list_reviews, P),
    write("POST", f"{R}/pulls/{{pull_number}}/reviews", create_review, P, REVIEW),
    read(f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}", get_review, P),
    write("PUT", f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}", update_review, P, REVIEW),
    write(
        "DELETE",
        f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}",
        delete_pending_review,
        P,
        REVIEW,
    ),
    write(
        "PUT",
        f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}/dismissals",
        dismiss_review,
        P,
        REVIEW,
    ),
    write(
        "POST", f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}/events", submit_review, P, REVIEW
    ),
    read(
        f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}/comments",
        list_review_comments_of_review,
        P,
    ),
    read(f"{R}/pulls/comments", list_repo_review_comments, P),
    read(f"{R}/pulls/comments/{{comment_id}}", get_review_comment, P),
    read(f"{R}/pulls/{{pull_number}}/comments", list_review_comments, P),
    write("POST", f"{R}/pulls/{{pull_number}}/comments", create_review_comment, P, COMMENT),
    write(
        "POST",
        f"{R}/pulls/{{pull_number}}/comments/{{comment_id}}/replies",
        create_reply,
        P,
        COMMENT,
    ),
    write("PATCH", f"{R}/pulls/comments/{{comment_id}}", update_review_comment, P, COMMENT),
    write("DELETE", f"{R}/pulls/comments/{{comment_id}}", delete_review_comment, P, COMMENT),
]
