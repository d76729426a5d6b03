"""The repository itself, its refs, the App endpoints and ``/rate_limit``."""

from __future__ import annotations

from typing import Any

from tests.fakes.forge_server.clock import iso
from tests.fakes.github import auth, render
from tests.fakes.github import webhook_events as hooks
from tests.fakes.github.errors import ApiError, not_found, validation_failed
from tests.fakes.github.models import Installation, Repo
from tests.fakes.github.paging import page_of
from tests.fakes.github.routing import Ctx, Reply, Route
from tests.fakes.gitserver import bare_repos


def permissions_of(ctx: Ctx, repo: Repo) -> dict[str, bool]:
    """The ``permissions`` a token's view of a repository carries (what it may do)."""
    token = ctx.token
    assert token is not None
    reached = auth.reaches(ctx.state, token, repo)
    write = reached and auth.can(token, ("contents",), True)
    admin = token.installation is None and token.user.login == repo.owner.login and token.write
    return render.permissions_for(reached or not repo.private, write, admin)


def get_repo(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    # An anonymous reader has no permissions to show (GitHub leaves the field out).
    permissions = permissions_of(ctx, repo) if ctx.token is not None else None
    return Reply(200, render.full_repository(ctx.urls, repo, permissions=permissions))


def update_repo(ctx: Ctx) -> Reply:
    """Repository settings an administrator changes: the default branch (it must name an
    existing branch, as on GitHub), description, visibility, name, the wiki feature."""
    repo = ctx.the_repo()
    token = ctx.token
    assert token is not None
    if token.installation is None and token.user.login != repo.owner.login:
        raise ApiError(403, "Must have admin rights to Repository.")
    body = ctx.json()
    before = hooks.repo_snapshot(repo)
    branch = body.get("default_branch")
    if branch is not None:
        if bare_repos.is_empty(repo.git_dir):
            raise validation_failed(
                "Repository",
                "default_branch",
                "custom",
                message="Cannot update default branch for an empty repository. "
                "Please init the repository and push first.",
            )
        if not isinstance(branch, str) or bare_repos.branch_sha(repo.git_dir, branch) is None:
            raise validation_failed("Repository", "default_branch", "invalid")
    if "name" in body and body["name"] != repo.name:
        ctx.state.rename_repo(repo, str(body["name"]))
    if branch is not None and branch != repo.default_branch:
        bare_repos.set_head(repo.git_dir, branch)
    if "description" in body:
        repo.description = body["description"]
    if "private" in body:
        repo.private = bool(body["private"])
    if "has_wiki" in body:
        repo.has_wiki = bool(body["has_wiki"])
    if body.get("visibility") in ("public", "private"):
        repo.private = body["visibility"] == "private"
    repo.updated_at = ctx.state.now()
    hooks.repository_changed(ctx, before)
    return Reply(200, render.full_repository(ctx.urls, repo, permissions=permissions_of(ctx, repo)))


def matching_refs(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    if bare_repos.is_empty(repo.git_dir):
        raise ApiError(409, "Git Repository is empty.")
    prefix = "refs/" + ctx.params["ref"]
    refs = bare_repos.matching_refs(repo.git_dir, prefix)
    return Reply(200, [render.git_ref(ctx.urls, repo, name, sha, kind) for name, sha, kind in refs])


def get_app(ctx: Ctx) -> Reply:
    app = ctx.app
    assert app is not None
    count = sum(1 for i in ctx.state.installations.values() if i.app.id == app.id)
    return Reply(200, render.integration(ctx.urls, app, count))


def create_access_token(ctx: Ctx) -> Reply:
    """Exchange the app's JWT for an installation token (one hour on the fake clock)."""
    app = ctx.app
    assert app is not None
    try:
        inst = ctx.state.installations[int(ctx.params["installation_id"])]
    except (KeyError, ValueError) as exc:
        raise not_found() from exc
    if inst.app.id != app.id:
        raise not_found()
    body = ctx.json()
    allowed = ctx.state.installation_repo_ids(inst)
    wanted: set[int] | None = None
    if body.get("repositories") or body.get("repository_ids"):
        wanted = set()
        for name in body.get("repositories") or []:
            repo, _ = ctx.state.find_repo(inst.account.login, str(name))
            wanted.add(repo.id if repo is not None else -1)
        wanted |= {int(i) for i in body.get("repository_ids") or []}
        if not wanted <= allowed:
            raise ApiError(
                422,
                "There is at least one repository that does not exist or is not accessible "
                "to the parent installation.",
            )
    permissions = dict(inst.permissions)
    if body.get("permissions"):
        order = {"read": 1, "write": 2, "admin": 3}
        for name, level in body["permissions"].items():
            if order.get(level, 9) > order.get(inst.permissions.get(name, ""), 0):
                raise ApiError(
                    422, "The permissions requested are not granted to this installation."
                )
        permissions = dict(body["permissions"])
    token = ctx.state.issue_installation_token(inst, repository_ids=wanted, permissions=permissions)
    assert token.expires_at is not None
    out: dict[str, Any] = {
        "token": token.value,
        "expires_at": iso(token.expires_at),
        "permissions": permissions,
        "repository_selection": "selected" if wanted is not None else inst.repository_selection,
    }
    if wanted is not None:
        out["repositories"] = [
            render.repository(ctx.urls, ctx.state.repos[i]) for i in sorted(wanted)
        ]
    return Reply(201, out)


def _user_installations(ctx: Ctx) -> list[Installation]:
    """Installations the token's user may see: on their account or on repos they reach."""
    token = ctx.token
    assert token is not None
    if token.installation is not None:
        raise ApiError(403, "Resource not accessible by integration")
    found = []
    for inst in sorted(ctx.state.installations.values(), key=lambda i: i.id):
        if token.app is not None and inst.app.id != token.app.id:
            continue  # a user access token lists its own App's installations only
        if inst.listed_from is not None and ctx.state.now() < inst.listed_from:
            continue  # GitHub's lag after an install (oauth.py: OAuthFlow.lag)
        repos = [ctx.state.repos[i] for i in ctx.state.installation_repo_ids(inst)]
        if inst.account.login == token.user.login or any(
            auth.reaches(ctx.state, token, r) for r in repos
        ):
            found.append(inst)
    return found


def list_user_installations(ctx: Ctx) -> Reply:
    found = []
    for inst in _user_installations(ctx):
        if inst.unlisted_for > 0:  # the lag, counted in listings rather than seconds
            inst.unlisted_for -= 1
            continue
        found.append(inst)
    chosen, link = page_of(found, ctx.query, ctx.url)
    body = {
        "total_count": len(found),
        "installations": [render.installation(ctx.urls, i) for i in chosen],
    }
    return Reply(200, body, {"link": link} if link else {})


def list_installation_repos(ctx: Ctx) -> Reply:
    token = ctx.token
    assert token is not None
    try:
        wanted = int(ctx.params["installation_id"])
    except ValueError as exc:
        raise not_found() from exc
    inst = next((i for i in _user_installations(ctx) if i.id == wanted), None)
    if inst is None or inst.unlisted_for > 0:
        raise not_found()
    repos = sorted(
        (ctx.state.repos[i] for i in ctx.state.installation_repo_ids(inst)), key=lambda r: r.id
    )
    repos = [r for r in repos if auth.reaches(ctx.state, token, r)]
    chosen, link = page_of(repos, ctx.query, ctx.url)
    body = {
        "total_count": len(repos),
        "repository_selection": inst.repository_selection,
        "repositories": [
            render.repository(ctx.urls, r, permissions=permissions_of(ctx, r)) for r in chosen
        ],
    }
    return Reply(200, body, {"link": link} if link else {})


def rate_limit(ctx: Ctx) -> Reply:
    """Does not spend primary quota."""
    token = ctx.token
    assert token is not None
    snap = ctx.limiter.snapshot(token.rate_key)
    core = {
        "limit": snap.limit,
        "remaining": snap.remaining,
        "reset": snap.reset,
        "used": snap.used,
    }
    now = int(ctx.state.now().timestamp())
    search = {"limit": 30, "remaining": 30, "reset": now + 60, "used": 0}
    graphql = {"limit": 5000, "remaining": 5000, "reset": now + 3600, "used": 0}
    return Reply(
        200, {"resources": {"core": core, "search": search, "graphql": graphql}, "rate": core}
    )


ROUTES = [
    Route("GET", "/repos/{owner}/{repo}", get_repo),
    Route(
        "PATCH",
        "/repos/{owner}/{repo}",
        update_repo,
        permissions=("administration",),
        write=True,
        resource="Repository",
    ),
    Route(
        "GET",
        "/repos/{owner}/{repo}/git/matching-refs/{ref}",
        matching_refs,
        permissions=("contents",),
    ),
    Route("GET", "/app", get_app, auth="jwt"),
    Route(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        create_access_token,
        auth="jwt",
    ),
    Route("GET", "/user/installations", list_user_installations, auth="user"),
    Route(
        "GET",
        "/user/installations/{installation_id}/repositories",
        list_installation_repos,
        auth="user",
    ),
    Route("GET", "/rate_limit", rate_limit, auth="token", counts=False),
]
