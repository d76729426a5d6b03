"""Accounts and their repositories: the authenticated user, users, organizations.

What a client reads before it opens a repository: who it is (``GET /user``: the
account's own, private view), someone's profile or an organization's, and the
repositories of each. A caller sees public repositories and those its token reaches
(auth.reaches: owner or collaborator, within a fine-grained token's repositories, within
a classic token's scopes); organization membership is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakes.github import auth, lookups, render, render_accounts
from tests.fakes.github.errors import ApiError, not_found, validation_failed
from tests.fakes.github.models import Repo, User
from tests.fakes.github.routes_meta import permissions_of
from tests.fakes.github.routing import Ctx, Reply, Route

SORTS = ("created", "updated", "pushed", "full_name")


def _account(ctx: Ctx, login: str) -> User:
    found = ctx.state.users.get(login.casefold())
    if found is None or found.type == "Bot":
        raise not_found()
    return found


def _visible(ctx: Ctx, repo: Repo) -> bool:
    if not repo.private:
        return True
    return ctx.token is not None and auth.reaches(ctx.state, ctx.token, repo)


def _owned(ctx: Ctx, owner: User) -> list[Repo]:
    return [r for r in ctx.state.repos.values() if r.owner.login == owner.login]


def _public_count(ctx: Ctx, owner: User) -> int:
    return sum(1 for r in _owned(ctx, owner) if not r.private)


def _sorted(ctx: Ctx, repos: list[Repo], default: str) -> list[Repo]:
    """``sort`` and ``direction`` as GitHub reads them: ``full_name`` ascends by default,
    the dates descend."""
    sort = lookups.choice(ctx, "sort", SORTS, default, "Repository")
    direction = lookups.choice(
        ctx, "direction", ("asc", "desc"), "asc" if sort == "full_name" else "desc", "Repository"
    )
    keys: dict[str, Callable[[Repo], Any]] = {
        "created": lambda r: r.created_at,
        "updated": lambda r: r.updated_at,
        "pushed": lambda r: r.pushed_at or r.created_at,
        "full_name": lambda r: r.full_name.casefold(),
    }
    return lookups.ordered(repos, keys[sort], direction, lambda r: r.id)


def _page(ctx: Ctx, repos: list[Repo]) -> Reply:
    def rendered(repo: Repo) -> dict[str, Any]:
        permissions = permissions_of(ctx, repo) if ctx.token is not None else None
        return render.repository(ctx.urls, repo, permissions=permissions)

    return ctx.page(repos, rendered)


def _person(ctx: Ctx) -> User:
    """The user a person's token acts for; an installation acts for no one (403)."""
    token = ctx.token
    assert token is not None
    if token.installation is not None:
        raise ApiError(403, "Resource not accessible by integration")
    return token.user


def get_authenticated(ctx: Ctx) -> Reply:
    """The account's own view (``private-user``)."""
    me = _person(ctx)
    owned = _owned(ctx, me)
    private = sum(1 for r in owned if r.private)
    body = render_accounts.profile(
        ctx.urls,
        me,
        public_repos=len(owned) - private,
        private={"owned_private_repos": private, "total_private_repos": private},
    )
    return Reply(200, body)


def get_user(ctx: Ctx) -> Reply:
    found = _account(ctx, ctx.params["username"])
    return Reply(
        200, render_accounts.profile(ctx.urls, found, public_repos=_public_count(ctx, found))
    )


def get_org(ctx: Ctx) -> Reply:
    org = _account(ctx, ctx.params["org"])
    if org.type != "Organization":
        raise not_found()
    return Reply(
        200, render_accounts.organization(ctx.urls, org, public_repos=_public_count(ctx, org))
    )


def list_mine(ctx: Ctx) -> Reply:
    """``visibility`` and ``affiliation``, or the older ``type`` (not both: 422)."""
    me = _person(ctx)
    token = ctx.token
    assert token is not None
    kind = ctx.arg("type")
    if kind is not None and (ctx.arg("visibility") or ctx.arg("affiliation")):
        raise validation_failed("Repository", "type", "invalid", value=kind)
    visibility = lookups.choice(
        ctx, "visibility", ("all", "public", "private"), "all", "Repository"
    )
    affiliation = {"owner", "collaborator", "organization_member"}
    if ctx.arg("affiliation"):
        affiliation = {a.strip() for a in (ctx.arg("affiliation") or "").split(",")}
    if kind is not None:
        kind = lookups.choice(
            ctx, "type", ("all", "owner", "public", "private", "member"), "all", "Repository"
        )
        affiliation = {"owner": {"owner"}, "member": {"collaborator"}}.get(
            kind, {"owner", "collaborator"}
        )
        visibility = kind if kind in ("public", "private") else "all"
    found = []
    for repo in ctx.state.repos.values():
        if not auth.reaches(ctx.state, token, repo):
            continue
        owner = repo.owner.login == me.login
        related = (owner and "owner" in affiliation) or (
            not owner and affiliation & {"collaborator", "organization_member"}
        )
        if related and visibility in ("all", "private" if repo.private else "public"):
            found.append(repo)
    return _page(ctx, _sorted(ctx, found, "full_name"))


def list_for_user(ctx: Ctx) -> Reply:
    """A user's public repositories (``type``: owner, the default; member; all)."""
    owner = _account(ctx, ctx.params["username"])
    kind = lookups.choice(ctx, "type", ("all", "owner", "member"), "owner", "Repository")
    found = [
        r
        for r in ctx.state.repos.values()
        if not r.private
        and (
            (kind != "member" and r.owner.login == owner.login)
            or (kind != "owner" and owner.login in r.collaborators)
        )
    ]
    return _page(ctx, _sorted(ctx, found, "full_name"))


def list_for_org(ctx: Ctx) -> Reply:
    org = _account(ctx, ctx.params["org"])
    if org.type != "Organization":
        raise not_found()
    kinds = ("all", "public", "private", "forks", "sources", "member")
    kind = lookups.choice(ctx, "type", kinds, "all", "Repository")
    found = [r for r in _owned(ctx, org) if _visible(ctx, r)]
    if kind == "public":
        found = [r for r in found if not r.private]
    elif kind == "private":
        found = [r for r in found if r.private]
    elif kind == "forks":
        found = []  # forks are not modelled
    elif kind == "member":
        login = ctx.actor.login
        found = [r for r in found if login in r.collaborators]
    return _page(ctx, _sorted(ctx, found, "created"))


ROUTES = [
    Route("GET", "/user", get_authenticated, auth="user", scopes=()),
    Route("GET", "/user/repos", list_mine, auth="user", scopes=("repo",)),
    Route("GET", "/users/{username}", get_user, auth="public", scopes=()),
    Route("GET", "/users/{username}/repos", list_for_user, auth="public", scopes=()),
    Route("GET", "/orgs/{org}", get_org, auth="public", scopes=()),
    Route("GET", "/orgs/{org}/repos", list_for_org, auth="public", scopes=()),
]
