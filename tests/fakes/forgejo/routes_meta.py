"""The instance, accounts, repositories, Git refs and repository hooks.

Creating a repository answers 409 "The repository with the same name already exists."
(routers/api/v1/repo/repo.go ``CreateUserRepo``); ``default_branch`` of a PATCH must name
an existing branch of a non-empty repository; ``/git/refs/{ref}`` lists the refs whose
names start with ``refs/{ref}`` (404 when none does), as Forgejo's ``getGitRefs``.
"""

from __future__ import annotations

from tests.fakes.forgejo import render, webhooks
from tests.fakes.forgejo.errors import conflict, forbidden, not_found, unprocessable
from tests.fakes.forgejo.models import Repo, User
from tests.fakes.forgejo.routing import Ctx, Reply, Route
from tests.fakes.gitserver import bare_repos

#: What ``/version`` says: the release whose description the contract is cut from.
VERSION = "11.0.3+gitea-1.22.0"


def version(ctx: Ctx) -> Reply:
    return Reply(200, {"version": VERSION})


def settings_api(ctx: Ctx) -> Reply:
    default, most = ctx.limits
    return Reply(
        200,
        {
            "max_response_items": most,
            "default_paging_num": default,
            "default_git_trees_per_page": 1000,
            "default_max_blob_size": 10485760,
        },
    )


def current_user(ctx: Ctx) -> Reply:
    return Reply(200, render.user(ctx.urls, ctx.the_doer(), ctx.doer))


def _account(ctx: Ctx, name: str, *, org: bool | None = None) -> User:
    found = ctx.state.find_user(name)
    if found is None or (org is not None and found.is_org != org):
        raise not_found()
    return found


def get_user(ctx: Ctx) -> Reply:
    return Reply(200, render.user(ctx.urls, _account(ctx, ctx.params["username"]), ctx.doer))


def _repos(ctx: Ctx, owner: User | None) -> Reply:
    found = ctx.state.visible_repos(ctx.doer, owner)
    return ctx.page(found, lambda r: render.repository(ctx.urls, ctx.state, r, ctx.doer))


def user_repos(ctx: Ctx) -> Reply:
    return _repos(ctx, _account(ctx, ctx.params["username"]))


def my_repos(ctx: Ctx) -> Reply:
    """The caller's own repositories and those it may write to."""
    doer = ctx.the_doer()
    found = [r for r in ctx.state.visible_repos(doer) if ctx.state.can_write(doer, r)]
    return ctx.page(found, lambda r: render.repository(ctx.urls, ctx.state, r, doer))


def get_org(ctx: Ctx) -> Reply:
    return Reply(200, render.organization(ctx.urls, _account(ctx, ctx.params["org"], org=True)))


def org_repos(ctx: Ctx) -> Reply:
    return _repos(ctx, _account(ctx, ctx.params["org"], org=True))


def _create_repo(ctx: Ctx, owner: User) -> Reply:
    body = ctx.json()
    name = str(body["name"])
    if ctx.state.find_repo(owner.login, name) is not None:
        raise conflict("The repository with the same name already exists.")
    repo = ctx.state.create_repo(
        f"{owner.login}/{name}",
        private=bool(body.get("private", False)),
        default_branch=str(body.get("default_branch") or "main"),
        description=str(body.get("description", "")),
        auto_init=bool(body.get("auto_init", False)),
    )
    webhooks.repository_created(ctx, repo)
    return Reply(201, render.repository(ctx.urls, ctx.state, repo, ctx.doer))


def create_my_repo(ctx: Ctx) -> Reply:
    return _create_repo(ctx, ctx.the_doer())


def create_org_repo(ctx: Ctx) -> Reply:
    org = _account(ctx, ctx.params["org"], org=True)
    doer = ctx.the_doer()
    if not (doer.is_admin or ctx.state.is_member(org, doer.login)):
        raise forbidden("Given user is not allowed to create repository in organization.")
    return _create_repo(ctx, org)


def get_repo(ctx: Ctx) -> Reply:
    return Reply(200, render.repository(ctx.urls, ctx.state, ctx.the_repo(), ctx.doer))


def edit_repo(ctx: Ctx) -> Reply:
    repo, body = ctx.the_repo(), ctx.json()
    if "name" in body and body["name"] != repo.name:
        if ctx.state.find_repo(repo.owner.login, str(body["name"])) is not None:
            raise unprocessable("repository already exists")
        repo.name = str(body["name"])
    branch = body.get("default_branch")
    if branch is not None and branch != repo.default_branch and not repo.empty:
        if bare_repos.branch_sha(repo.git_dir, str(branch)) is None:
            raise not_found()
        bare_repos.set_head(repo.git_dir, str(branch))
    elif branch is not None and repo.empty:
        bare_repos.set_head(repo.git_dir, str(branch))
    for key, attr in (("description", "description"), ("website", "website")):
        if key in body:
            setattr(repo, attr, str(body[key]))
    for key in ("private", "has_wiki", "archived"):
        if key in body:
            setattr(repo, key, bool(body[key]))
    repo.updated = ctx.state.now()
    return Reply(200, render.repository(ctx.urls, ctx.state, repo, ctx.doer))


def _ref_json(ctx: Ctx, repo: Repo, name: str, sha: str, kind: str) -> dict[str, object]:
    api = ctx.urls.repo_api(repo)
    return {
        "ref": name,
        "url": f"{api}/git/{name}",
        "object": {"type": kind, "sha": sha, "url": f"{api}/git/{kind}s/{sha}"},
    }


def _refs(ctx: Ctx, prefix: str) -> Reply:
    repo = ctx.the_repo()
    found = [
        _ref_json(ctx, repo, name, sha, kind)
        for name, sha, kind in bare_repos.matching_refs(repo.git_dir, prefix)
        if name.startswith(("refs/heads/", "refs/tags/", "refs/pull/"))
    ]
    if not found:
        raise not_found()
    return Reply(200, found)


def list_refs(ctx: Ctx) -> Reply:
    return _refs(ctx, "refs/")


def list_refs_under(ctx: Ctx) -> Reply:
    return _refs(ctx, "refs/" + ctx.params["ref"].removeprefix("refs/"))


def list_hooks(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    found = ctx.webhooks.hooks_of(repo)
    return ctx.page(found, lambda h: ctx.webhooks.hook_json(h))


def create_hook(ctx: Ctx) -> Reply:
    body = ctx.json()
    config = body.get("config") or {}
    if not config.get("url") or not config.get("content_type"):
        raise unprocessable("Missing config option: url")
    if config["content_type"] not in ("json", "form"):
        raise unprocessable("Invalid content type")
    hook = ctx.webhooks.add(
        str(config["url"]),
        repo=ctx.the_repo(),
        secret=config.get("secret") or None,
        events=tuple(body.get("events") or ("push",)),
        content_type=str(config["content_type"]),
        active=bool(body.get("active", False)),
        kind=str(body["type"]),
        branch_filter=str(body.get("branch_filter") or "*"),
    )
    return Reply(201, ctx.webhooks.hook_json(hook))


def _hook(ctx: Ctx) -> webhooks.ForgejoHook:
    hook = ctx.webhooks.hooks.get(ctx.int_param("id"))
    if not isinstance(hook, webhooks.ForgejoHook) or hook.repo_id != ctx.the_repo().id:
        raise not_found()
    return hook


def get_hook(ctx: Ctx) -> Reply:
    return Reply(200, ctx.webhooks.hook_json(_hook(ctx)))


def edit_hook(ctx: Ctx) -> Reply:
    hook, body = _hook(ctx), ctx.json()
    changes: dict[str, object] = {}
    config = body.get("config") or {}
    if "url" in config:
        changes["url"] = config["url"]
    if "content_type" in config:
        changes["content_type"] = config["content_type"]
    if "secret" in config:
        changes["secret"] = config["secret"] or None
    if body.get("events") is not None:
        changes["events"] = body["events"]
    if body.get("active") is not None:
        changes["active"] = bool(body["active"])
    if changes:
        ctx.webhooks.update(hook, **changes)
    if body.get("branch_filter") is not None:
        hook.branch_filter = str(body["branch_filter"])
    return Reply(200, ctx.webhooks.hook_json(hook))


def delete_hook(ctx: Ctx) -> Reply:
    ctx.webhooks.remove(_hook(ctx))
    return Reply(204)


def _signed(method: str, template: str, handler: object, scope: str) -> Route:
    return Route(method, template, handler, scope=scope, access="signed")  # type: ignore[arg-type]


R = "/repos/{owner}/{repo}"
ROUTES = [
    Route("GET", "/version", version, scope="", access="none"),
    Route("GET", "/settings/api", settings_api, scope="", access="none"),
    _signed("GET", "/user", current_user, "user"),
    Route("GET", "/users/{username}", get_user, scope="user", access="none"),
    Route("GET", "/users/{username}/repos", user_repos, scope="user", access="none"),
    _signed("GET", "/user/repos", my_repos, "repository"),
    _signed("POST", "/user/repos", create_my_repo, "repository"),
    Route("GET", "/orgs/{org}", get_org, scope="organization", access="none"),
    Route("GET", "/orgs/{org}/repos", org_repos, scope="organization", access="none"),
    _signed("POST", "/orgs/{org}/repos", create_org_repo, "organization"),
    Route("GET", R, get_repo),
    Route("PATCH", R, edit_repo, access="write"),
    Route("GET", f"{R}/git/refs", list_refs),
    Route("GET", f"{R}/git/refs/{{ref}}", list_refs_under),
    Route("GET", f"{R}/hooks", list_hooks, access="write"),
    Route("POST", f"{R}/hooks", create_hook, access="write"),
    Route("GET", f"{R}/hooks/{{id}}", get_hook, access="write"),
    Route("PATCH", f"{R}/hooks/{{id}}", edit_hook, access="write"),
    Route("DELETE", f"{R}/hooks/{{id}}", delete_hook, access="write"),
]
