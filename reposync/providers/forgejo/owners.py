"""Forgejo owners: an organization's or a user's repositories, listed and created.

An owner's locator is ``HOST[:PORT][/PATH]/OWNER``: its instance, then the login. Which
listing answers depends on who the owner is (Forgejo's ``/orgs/{org}/repos``,
``/user/repos``, ``/users/{user}/repos``): an organization lists every repository the
token sees; the token's own user lists theirs, private ones too; another user what the
token may see of theirs. A repository is created in an organization the token may
create in, or under the token's own account; Forgejo repositories are public or
private, so anything but ``public`` is created private.
"""

from __future__ import annotations

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
from reposync.providers.forgejo import locators
from reposync.providers.forgejo.client import ForgejoClient


def normalize_owner(location: str, provider: str = "forgejo") -> str:
    """``HOST[:PORT][/PATH]/OWNER`` in its canonical spelling."""
    parsed = locators.parse(f"{location.strip().strip('/')}/repository", provider)
    return f"{parsed.instance}/{parsed.owner}"


def split_owner(owner: str, provider: str = "forgejo") -> tuple[str, str]:
    """(instance, login) of a normalized owner."""
    instance, _, login = owner.rpartition("/")
    if not instance or not login:
        raise InvalidLocator(f"{provider}:{owner} is not HOST[:PORT][/PATH]/OWNER")
    return instance, login


def repository_locator(owner: str, name: str, provider: str = "forgejo") -> str:
    if "/" in name:
        raise InvalidLocator(f"{name!r} is not a repository name (it holds a '/')")
    return locators.normalize(f"{owner}/{name}", provider)


def list_repositories(client: ForgejoClient, owner: OwnerSpec) -> list[OwnedRepository]:
    instance, login = split_owner(owner.locator, owner.provider)
    organization = _organization(client, login)
    if organization:
        items = client.paginate(f"/orgs/{login}/repos")
    elif _is_me(client, login):
        items = client.paginate("/user/repos")
    else:
        _user(client, owner, login)
        items = client.paginate(f"/users/{login}/repos")
    found = [owned(item, instance, owner.provider) for item in items if _owned_by(item, login)]
    return sorted(found, key=lambda repo: repo.name.casefold())


def create_repository(
    client: ForgejoClient,
    owner: OwnerSpec,
    name: str,
    visibility: str,
    description: str | None,
) -> OwnedRepository:
    """Public only when ``visibility`` is; anything else is private."""
    instance, login = split_owner(owner.locator, owner.provider)
    repository_locator(owner.locator, name, owner.provider)  # a name Forgejo can hold
    if _organization(client, login):
        path = f"/orgs/{login}/repos"
    elif _is_me(client, login):
        path = "/user/repos"
    else:
        _user(client, owner, login)
        raise PermissionDenied(
            f"the token of {instance} does not act for the user {login}; reposync creates "
            "a user's repositories only with that user's own token"
        )
    body: dict[str, Any] = {"name": name, "private": visibility != "public", "auto_init": False}
    if description:
        body["description"] = description
    try:
        created = client.write("POST", path, json_body=body)
    except WriteRefused as refused:
        if refused.status == 409:  # "The repository with the same name already exists."
            raise Conflict(
                f"{client.forge} did not create {login}/{name}: {refused.message}"
            ) from refused
        raise
    return owned(created, instance, owner.provider)


def owned(item: dict[str, Any], instance: str, provider: str) -> OwnedRepository:
    return OwnedRepository(
        name=str(item["name"]),
        locator=locators.normalize(f"{instance}/{item['full_name']}", provider),
        repository_id=locators.repository_id(instance, item["id"]),
        visibility="private" if item.get("private") else "public",
        description=item.get("description") or None,
    )


def _organization(client: ForgejoClient, login: str) -> bool:
    try:
        client.get(f"/orgs/{login}")
    except ObjectNotFound:
        return False
    return True


def _user(client: ForgejoClient, owner: OwnerSpec, login: str) -> None:
    try:
        client.get(f"/users/{login}")
    except ObjectNotFound:
        raise OwnerNotFound(
            f"{owner.provider}:{owner.locator} is no user or organization of {client.instance.name}"
        ) from None


def _is_me(client: ForgejoClient, login: str) -> bool:
    me = client.get("/user")
    return str(me.get("login", "")).casefold() == login.casefold()


def _owned_by(item: dict[str, Any], login: str) -> bool:
    owner = item.get("owner") or {}
    return str(owner.get("login", "")).casefold() == login.casefold()
