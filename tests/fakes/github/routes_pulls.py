"""Pull requests: opening, listing, editing, review requests, merging and its status.

Reviews and review comments are in routes_reviews.py.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.github import lookups, render
from tests.fakes.github import webhook_events as hooks
from tests.fakes.github.errors import ApiError, Unmodelled, not_found, validation_failed
from tests.fakes.github.models import Issue
from tests.fakes.github.routes_issues import apply_issue_edit
from tests.fakes.github.routing import Ctx, Reply, read, write
from tests.fakes.gitserver import bare_repos

PULLS = ("pull_requests",)
RESOURCE = "PullRequest"


def custom_error(resource: str, message: str, field: str | None = None) -> ApiError:
    """GitHub's 422 with a ``custom`` error and its message."""
    error: dict[str, Any] = {"resource": resource, "code": "custom", "message": message}
    if field is not None:
        error["field"] = field
    return ApiError(422, "Validation Failed", errors=[error])


# -- pull requests ----------------------------------------------------------------------


def pull_json(ctx: Ctx, issue: Issue) -> dict[str, Any]:
    repo = ctx.the_repo()
    pr = issue.pull
    assert pr is not None
    stats = bare_repos.compare(repo.git_dir, pr.base_sha, pr.head_sha)
    return render.with_rest_labels(render.pull_request(ctx.urls, repo, issue, stats))


def pull_simple_json(ctx: Ctx, issue: Issue) -> dict[str, Any]:
    return render.with_rest_labels(render.pull_request_simple(ctx.urls, ctx.the_repo(), issue))


def _head_branch(ctx: Ctx, head: str) -> str:
    """``branch`` or ``owner:branch`` of this repository (forks are not modelled)."""
    repo = ctx.the_repo()
    if ":" in head:
        owner, _, branch = head.partition(":")
        if owner.casefold() != repo.owner.login.casefold():
            raise validation_failed(RESOURCE, "head", "invalid")
        return branch
    return head


def list_pulls(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    state = lookups.choice(ctx, "state", ("open", "closed", "all"), "open", RESOURCE)
    sorts = ("created", "updated", "popularity", "long-running")
    sort = lookups.choice(ctx, "sort", sorts, "created", RESOURCE)
    default_direction = "desc" if sort == "created" else "asc"
    direction = lookups.choice(ctx, "direction", ("asc", "desc"), default_direction, RESOURCE)
    found = [i for i in repo.issues.values() if i.pull is not None and state in ("all", i.state)]
    head = ctx.arg("head")
    if head:
        owner, _, branch = head.partition(":")
        found = [
            i
            for i in found
            if owner.casefold() == repo.owner.login.casefold()
            and (not branch or (i.pull is not None and i.pull.head_ref == branch))
        ]
    base = ctx.arg("base")
    if base:
        found = [i for i in found if i.pull is not None and i.pull.base_ref == base]

    def comments(i: Issue) -> int:
        return sum(1 for c in repo.comments.values() if c.issue_number == i.number)

    keys = {
        "created": lambda i: i.created_at,
        "updated": lambda i: i.updated_at,
        "popularity": comments,
        "long-running": lambda i: i.created_at,
    }
    found = lookups.ordered(found, keys[sort], direction, lambda i: i.number)
    return ctx.page(found, lambda i: pull_simple_json(ctx, i))


def create_pull(ctx: Ctx) -> Reply:
    body, repo = ctx.json(), ctx.the_repo()
    head = _head_branch(ctx, str(body["head"]))
    base = str(body["base"])
    head_sha = bare_repos.branch_sha(repo.git_dir, head)
    if head_sha is None:
        raise validation_failed(RESOURCE, "head", "invalid")
    base_sha = bare_repos.branch_sha(repo.git_dir, base)
    if base_sha is None:
        raise validation_failed(RESOURCE, "base", "invalid")
    for other in repo.issues.values():
        pr = other.pull
        if pr is not None and other.state == "open" and (pr.head_ref, pr.base_ref) == (head, base):
            raise custom_error(
                RESOURCE, f"A pull request already exists for {repo.owner.login}:{head}."
            )
    if bare_repos.is_ancestor(repo.git_dir, head_sha, base_sha):
        raise custom_error(RESOURCE, f"No commits between {base} and {head}")
    lookups.text_field(body, "body", RESOURCE)
    if body.get("issue") is not None:
        issue = _convert_issue(ctx, int(body["issue"]), head, base, bool(body.get("draft")))
    else:
        title = str(body.get("title") or "").strip()
        if not title:
            raise validation_failed(RESOURCE, "title", "missing_field")
        issue = ctx.state.add_pull(
            repo,
            title,
            head=head,
            base=base,
            author=ctx.actor,
            body=body.get("body"),
            draft=bool(body.get("draft", False)),
            via_app=ctx.via_app,
        )
    assert issue.pull is not None
    issue.pull.maintainer_can_modify = bool(body.get("maintainer_can_modify", False))
    hooks.issue_opened(ctx, issue)
    out = pull_json(ctx, issue)
    return Reply(201, out, lookups.location(out["url"]))


def _convert_issue(ctx: Ctx, number: int, head: str, base: str, draft: bool) -> Issue:
    """``issue``: turn an existing issue into the pull request (it keeps its number)."""
    repo = ctx.the_repo()
    issue = repo.issues.get(number)
    if issue is None or issue.pull is not None:
        raise validation_failed(RESOURCE, "issue", "invalid", value=number)
    del repo.issues[number]
    pull = ctx.state.add_pull(
        repo,
        issue.title,
        head=head,
        base=base,
        author=issue.user,
        body=issue.body,
        number=number,
        draft=draft,
        created_at=issue.created_at,
        via_app=issue.via_app,
    )
    pull.id, pull.labels, pull.milestone = issue.id, issue.labels, issue.milestone
    pull.assignees = issue.assignees
    return pull


def get_pull(ctx: Ctx) -> Reply:
    return Reply(200, pull_json(ctx, lookups.pull(ctx)))


def update_pull(ctx: Ctx) -> Reply:
    """Only title, body, state, base and maintainer_can_modify change; never ``merged``."""
    issue, body, repo = lookups.pull(ctx), ctx.json(), ctx.the_repo()
    pr = issue.pull
    assert pr is not None
    before = hooks.snapshot(issue)
    if "base" in body and body["base"] != pr.base_ref:
        base_sha = bare_repos.branch_sha(repo.git_dir, str(body["base"]))
        if base_sha is None:
            raise validation_failed(RESOURCE, "base", "invalid")
        pr.base_ref, pr.base_sha = str(body["base"]), base_sha
    reopening = body.get("state") == "open" and issue.state == "closed" and not pr.merged
    if reopening and bare_repos.branch_sha(repo.git_dir, pr.head_ref) is None:
        raise custom_error(RESOURCE, "state cannot be changed. The head branch was deleted.")
    edit = {k: body[k] for k in ("title", "body", "state") if k in body}
    apply_issue_edit(ctx, issue, edit)
    if "maintainer_can_modify" in body:
        pr.maintainer_can_modify = bool(body["maintainer_can_modify"])
    hooks.issue_changed(ctx, issue, before)
    return Reply(200, pull_json(ctx, issue))


# -- review requests and merge status ---------------------------------------------------


def _requested(ctx: Ctx) -> dict[str, Any]:
    pr = lookups.pull(ctx).pull
    assert pr is not None
    return {"users": [render.user(ctx.urls, u) for u in pr.requested_reviewers], "teams": []}


def list_requested_reviewers(ctx: Ctx) -> Reply:
    return Reply(200, _requested(ctx))


def request_reviewers(ctx: Ctx) -> Reply:
    """Only collaborators can be asked, never the pull request's author (422 otherwise)."""
    issue, body, repo = lookups.pull(ctx), ctx.json(), ctx.the_repo()
    pr = issue.pull
    assert pr is not None
    if body.get("team_reviewers"):
        raise Unmodelled("Requesting a review from a team")
    logins = [str(login) for login in body.get("reviewers") or []]
    for login in logins:
        if login.casefold() == issue.user.login.casefold():
            raise custom_error(RESOURCE, "Review cannot be requested from pull request author.")
        allowed = {repo.owner.login.casefold(), *(c.casefold() for c in repo.collaborators)}
        if login.casefold() not in allowed:
            raise custom_error(
                RESOURCE,
                "Reviews may only be requested from collaborators. One or more of the users "
                f"or teams you specified is not a collaborator of the {repo.full_name} "
                "repository.",
            )
    added = []
    for login in logins:
        if all(u.login.casefold() != login.casefold() for u in pr.requested_reviewers):
            pr.requested_reviewers.append(ctx.state.user(login))
            added.append(pr.requested_reviewers[-1])
    hooks.review_requests(ctx, issue, added, removed=False)
    return Reply(201, pull_simple_json(ctx, issue))


def remove_requested_reviewers(ctx: Ctx) -> Reply:
    issue, body = lookups.pull(ctx), ctx.json()
    pr = issue.pull
    assert pr is not None
    if not isinstance(body.get("reviewers"), list):
        raise validation_failed(RESOURCE, "reviewers", "missing_field")
    gone = {str(login).casefold() for login in body["reviewers"]}
    removed = [u for u in pr.requested_reviewers if u.login.casefold() in gone]
    pr.requested_reviewers = [u for u in pr.requested_reviewers if u.login.casefold() not in gone]
    hooks.review_requests(ctx, issue, removed, removed=True)
    return Reply(200, pull_simple_json(ctx, issue))


MERGE_METHODS = ("merge", "squash", "rebase")


def merge_pull(ctx: Ctx) -> Reply:
    """The merge button: a merge commit on the base branch; the pull request is closed
    and merged. 405 when it cannot be merged (closed, merged, conflicting), 409 when
    ``sha`` is not the head any more; squash and rebase are not modelled (501)."""
    issue, body, repo = lookups.pull(ctx), ctx.json(), ctx.the_repo()
    pr = issue.pull
    assert pr is not None
    method = body.get("merge_method") or "merge"
    if method not in MERGE_METHODS:
        raise validation_failed(RESOURCE, "merge_method", "invalid", value=str(method))
    if method != "merge":
        raise Unmodelled(f"Merging with merge_method {method}")
    if pr.merged or issue.state != "open":
        raise ApiError(405, "Pull Request is not mergeable")
    if body.get("sha") is not None and body["sha"] != pr.head_sha:
        raise ApiError(409, "Head branch was modified. Review and try the merge again.")
    title = body.get("commit_title") or (
        f"Merge pull request #{issue.number} from {repo.owner.login}/{pr.head_ref}"
    )
    message = f"{title}\n\n{body['commit_message']}" if body.get("commit_message") else title
    before, old_base = hooks.snapshot(issue), pr.base_sha
    try:
        ctx.state.merge_pull(repo, issue.number, merged_by=ctx.actor, message=message)
    except ValueError as exc:  # conflicts
        raise ApiError(405, "Pull Request is not mergeable") from exc
    assert pr.merge_commit_sha is not None
    if ctx.webhooks is not None:
        ref = f"refs/heads/{pr.base_ref}"
        updates = [(old_base, pr.merge_commit_sha, ref)]
        hooks.ref_updates(ctx.webhooks, ctx.urls, ctx.state, repo, updates, ctx.actor)
    hooks.issue_changed(ctx, issue, before)
    answer = {
        "sha": pr.merge_commit_sha,
        "merged": True,
        "message": "Pull Request successfully merged",
    }
    return Reply(200, answer)


def check_merged(ctx: Ctx) -> Reply:
    """204 when merged, 404 when not (GitHub's whole answer: no body either way)."""
    pr = lookups.pull(ctx).pull
    assert pr is not None
    if not pr.merged:
        raise not_found()
    return Reply(204)


R = "/repos/{owner}/{repo}"
P = PULLS
ROUTES = [
    read(f"{R}/pulls", list_pulls, P),
    write("POST", f"{R}/pulls", create_pull, P, RESOURCE),
    read(f"{R}/pulls/{{pull_number}}", get_pull, P),
    write("PATCH", f"{R}/pulls/{{pull_number}}", update_pull, P, RESOURCE),
    read(f"{R}/pulls/{{pull_number}}/requested_reviewers", list_requested_reviewers, P),
    write("POST", f"{R}/pulls/{{pull_number}}/requested_reviewers", request_reviewers, P, RESOURCE),
    write(
        "DELETE",
        f"{R}/pulls/{{pull_number}}/requested_reviewers",
        remove_requested_reviewers,
        P,
        RESOURCE,
    ),
    read(f"{R}/pulls/{{pull_number}}/merge", check_merged, P),
    write("PUT", f"{R}/pulls/{{pull_number}}/merge", merge_pull, ("contents",), RESOURCE),
]
