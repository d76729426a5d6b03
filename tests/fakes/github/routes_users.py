"""Accounts and their repositories: the authenticated user, users, organizations.

What a client reads before it opens a repository: who it is (``GET /user``: the
account's own, private view), someone's profile or an organization's, and the
repositories of each. A caller sees public repositories and those its token reaches
(auth.reaches: owner or collaborator, within a fine-grained token's repositories, within
a classic token's scopes).

Creating a repository (``POST /user/repos``, ``POST /orgs/{org}/repos``), as GitHub's
"Create a repository ..." pages describe it: a person creates their own (an
installation acts for no one: 403), an organization's members create the
organization's (``State.add_member``; organization roles are not modelled), and so does
an installation on the organization with ``administration: write``; a member who
creates one becomes its collaborator (GitHub makes them its admin). A classic token
needs ``repo`` for a private repository, ``public_repo`` or ``repo`` for a public one;
a read-only fine-grained token creates nothing. A name taken on the account (whatever
its case) is 422; characters GitHub does not keep in names become ``-``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.fakes.github import auth, lookups, render, render_accounts
from tests.fakes.github.errors import ApiError, not_accessible, not_found, validation_failed
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


#: Runs of characters GitHub does not keep in a repository's name (it writes ``-``).
_UNKEPT = re.compile(r"[^A-Za-z0-9._-]+")
NO_ORG_ADMIN = "You need admin access to the organization before adding a repository to it."


def create_for_authenticated(ctx: Ctx) -> Reply:
    """``POST /user/repos``: a repository of the token's own user."""
    return _create(ctx, _person(ctx))


def create_in_org(ctx: Ctx) -> Reply:
    """``POST /orgs/{org}/repos``: by a member, or an installation on the organization
    that may administer its repositories."""
    org = _account(ctx, ctx.params["org"])
    if org.type != "Organization":
        raise not_found()
    token = ctx.token
    assert token is not None
    inst = token.installation
    if inst is not None:
        if inst.account.login != org.login or token.permissions.get("administration") != "write":
            raise not_accessible(token.kind)
    elif token.user.login not in org.members:
        raise ApiError(403, NO_ORG_ADMIN)
    return _create(ctx, org)


def _create(ctx: Ctx, owner: User) -> Reply:
    token = ctx.token
    assert token is not None
    body = ctx.json()
    visibility = body.get("visibility")
    private = visibility == "private" if visibility else bool(body.get("private", False))
    if token.scopes is not None and not (
        "repo" in token.scopes or (not private and "public_repo" in token.scopes)
    ):
        raise not_accessible(token.kind)
    if token.scopes is None and token.installation is None and not token.write:
        raise not_accessible(token.kind)
    name = _UNKEPT.sub("-", str(body["name"]))
    member = token.installation is None and owner.type == "Organization"
    if ctx.state.find_repo(owner.login, name)[0] is not None:
        raise ApiError(
            422,
            "Repository creation failed.",
            errors=[
                {
                    "resource": "Repository",
                    "code": "custom",
                    "field": "name",
                    "message": "name already exists on this account",
                }
            ],
        )
    repo = ctx.state.create_repo(
        f"{owner.login}/{name}",
        private=private,
        description=body.get("description"),
        auto_init=bool(body.get("auto_init", False)),
        has_wiki=bool(body.get("has_wiki", True)),
        # A member who creates an organization's repository administers it (GitHub makes
        # the creator an admin); the organization's base permission is not modelled.
        collaborators=[token.user.login] if member else [],
    )
    inst = token.installation
    if inst is not None and inst.repository_selection == "selected":
        inst.repository_ids.add(repo.id)  # what an installation creates, it reaches
    rendered = render.full_repository(ctx.urls, repo, permissions=permissions_of(ctx, repo))
    return Reply(201, rendered, {"location": ctx.urls.repo_api(repo)})


ROUTES = [
    Route("GET", "/user", get_authenticated, auth="user", scopes=()),
    Route("GET", "/user/repos", list_mine, auth="user", scopes=("repo",)),
    Route("GET", "/users/{username}", get_user, auth="public", scopes=()),
    Route("GET", "/users/{username}/repos", list_for_user, auth="public", scopes=()),
    Route("GET", "/orgs/{org}", get_org, auth="public", scopes=()),
    Route("GET", "/orgs/{org}/repos", list_for_org, auth="public", scopes=()),
    Route(
        "POST",
        "/user/repos",
        create_for_authenticated,
        auth="user",
        write=True,
        content=True,
        resource="Repository",
        scopes=("public_repo", "repo"),
    ),
    Route(
        "POST",
        "/orgs/{org}/repos",
        create_in_org,
        auth="token",
        write=True,
        content=True,
        resource="Repository",
        scopes=("public_repo", "repo"),
    ),
]
