"""GitHub owners: an organization's or a user's repositories, listed and created.

Which listing answers depends on who the owner is to the credentials (GitHub's REST
pages "List organization repositories", "List repositories for the authenticated user",
"List repositories for a user"): an organization lists every repository the token sees
(``/orgs/{org}/repos?type=all``); the token's own user lists theirs, private ones too
(``/user/repos?affiliation=owner``); another user shows only their public ones
(``/users/{user}/repos``), and so does any user to an App installation, which acts for no
user (``GET /user`` is 403 for it).

Creation ("Create an organization repository", "Create a repository for the
authenticated user") is a content-creating write, paced through the shared write budget
as every other. A user's repositories are created only with that user's own credentials.
"""

from __future__ import annotations

import re
from typing import Any

from reposync.errors import (
    Conflict,
    InvalidLocator,
    ObjectNotFound,
    OwnerNotFound,
    PermissionDenied,
    WriteRefused,
)
from reposync.providers.base import OwnedRepository, OwnerSpec
from reposync.providers.github.client import GitHubClient

#: A GitHub login: 1-39 letters, digits and hyphens, not starting with a hyphen.
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


def normalize_owner(location: str) -> str:
    login = location.strip().strip("/")
    if not _LOGIN.match(login):
        raise InvalidLocator(
            f"github:{login} is not an organization or user login (for example github:acme)"
        )
    return login


def list_repositories(client: GitHubClient, owner: OwnerSpec) -> list[OwnedRepository]:
    login, organization = _account(client, owner)
    if organization:
        items = client.paginate(f"/orgs/{login}/repos", {"type": "all"})
    elif _is_me(client, login):
        items = client.paginate("/user/repos", {"affiliation": "owner", "visibility": "all"})
    else:
        items = client.paginate(f"/users/{login}/repos", {"type": "owner"})
    found = [owned(item) for item in items if _owned_by(item, login)]
    return sorted(found, key=lambda repo: repo.name.casefold())


def create_repository(
    client: GitHubClient,
    owner: OwnerSpec,
    name: str,
    visibility: str,
    description: str | None,
) -> OwnedRepository:
    """Public only when ``visibility`` is; anything else (``internal`` too, which only an
    enterprise's organizations have) becomes private."""
    login, organization = _account(client, owner)
    if organization:
        path = f"/orgs/{login}/repos"
    elif _is_me(client, login):
        path = "/user/repos"
    else:
        raise PermissionDenied(
            f"the GitHub credentials do not act for the user {login}; GitHub creates a "
            "user's repositories only with that user's own token"
        )
    body: dict[str, Any] = {"name": name, "private": visibility != "public", "has_wiki": True}
    if description:
        body["description"] = description
    try:
        created = client.write("POST", path, json_body=body)
    except WriteRefused as refused:
        if refused.status == 422:  # GitHub's "Repository creation failed.": the name
            raise Conflict(
                f"GitHub did not create github:{login}/{name}: {refused.message} (a "
                "repository of that name, in any case, exists there)"
            ) from refused
        raise
    return owned(created)


def owned(item: dict[str, Any]) -> OwnedRepository:
    visibility = item.get("visibility") or ("private" if item.get("private") else "public")
    return OwnedRepository(
        name=str(item["name"]),
        locator=str(item["full_name"]),
        repository_id=str(item["id"]),
        visibility=str(visibility),
        description=item.get("description"),
    )


def _account(client: GitHubClient, owner: OwnerSpec) -> tuple[str, bool]:
    """The owner's login as GitHub spells it, and whether it is an organization."""
    try:
        account = client.get(f"/users/{owner.locator}")
    except ObjectNotFound:
        raise OwnerNotFound(f"github:{owner.locator} is no GitHub user or organization") from None
    return str(account["login"]), account.get("type") == "Organization"


def _is_me(client: GitHubClient, login: str) -> bool:
    """Whether the credentials are the user ``login``'s (an installation is nobody's)."""
    try:
        me = client.get("/user")
    except PermissionDenied:
        return False
    return str(me.get("login", "")).casefold() == login.casefold()


def _owned_by(item: dict[str, Any], login: str) -> bool:
    owner = item.get("owner") or {}
    return str(owner.get("login", "")).casefold() == login.casefold()
