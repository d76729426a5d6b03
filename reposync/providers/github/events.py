"""GitHub webhook deliveries, read tolerantly and normalized into changes.

A delivery's payload is read by ``payloads``: what reposync reads of its event
must be there and in range; nothing else is looked at, so the properties GitHub adds,
leaves out or sends only for some accounts never refuse a delivery.

Events that may change synced content ask for a Run of the Bindings whose authority is
the repository; ``repository`` events move locators (renamed, transferred) and
visibilities (publicized, privatized); ``installation`` and ``installation_repositories``
say where reposync's GitHub App lost or regained access; ``ping`` proves the hook works.
Any other event is recorded as ignored.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from reposync.errors import InvalidLocator
from reposync.providers.github import payloads
from reposync.providers.notifications import (
    AccessChange,
    ConnectionAccess,
    Notification,
    Outcome,
    RefMove,
    RepositoryChange,
)
from reposync.providers.registry import provider_class
from reposync.providers.webhooks import json_body
from reposync.sync.vocabulary import ObjectType

PROVIDER = "github"
#: A delivery that asserts the all-zero id as ``before``/``after`` created/deleted the ref.
NULL_SHA = "0" * 40

#: Events whose payload may mean synced content changed, and what it touched (a hint).
CONTENT_EVENTS: dict[str, tuple[ObjectType, ...]] = {
    "push": (ObjectType.GIT_REF,),
    "create": (ObjectType.GIT_REF,),
    "delete": (ObjectType.GIT_REF,),
    "issues": (ObjectType.ISSUE,),
    "issue_comment": (ObjectType.ISSUE_COMMENT,),
    "label": (ObjectType.LABEL,),
    "milestone": (ObjectType.MILESTONE,),
    "pull_request": (ObjectType.PULL_REQUEST, ObjectType.REVIEW_REQUEST),
    "pull_request_review": (ObjectType.REVIEW,),
    "pull_request_review_comment": (ObjectType.REVIEW_COMMENT,),
    "release": (ObjectType.RELEASE, ObjectType.RELEASE_ASSET),
}
#: Every event reposync acts on; what it reads of each is ``payloads.SCHEMAS``.
HANDLED_EVENTS = frozenset(
    {*CONTENT_EVENTS, "repository", "installation", "installation_repositories", "ping"}
)

#: Access lost or regained, by installation action (notice None: access is back).
_INSTALLATION_ACCESS: dict[str, str | None] = {
    "deleted": "the GitHub App installation {installation} was uninstalled",
    "suspend": "the GitHub App installation {installation} was suspended",
    "unsuspend": None,
    "created": None,
    "new_permissions_accepted": None,
}
#: Repository actions that say something about access to it.
_REPOSITORY_ACCESS: dict[str, str | None] = {
    "archived": "the repository was archived on GitHub: it is read-only",
    "unarchived": None,
    "deleted": "the repository was deleted on GitHub",
}


def notification(
    event: str, delivery_id: str, body: bytes, *, configured_installation: str = ""
) -> Notification:
    """Read and normalize one delivery (``event`` is ``X-GitHub-Event``, ``body`` its JSON).

    ``configured_installation`` is the App installation reposync opens sides without a
    connection through (``REPOSYNC_GITHUB_INSTALLATION_ID``): an event of that whole
    installation concerns those sides too.
    """
    if event not in HANDLED_EVENTS:
        return Notification(PROVIDER, delivery_id, event, None, Outcome.IGNORED)
    payload = payloads.read(event, json_body(body))
    action = payload.get("action")
    if event == "ping":
        return Notification(PROVIDER, delivery_id, event, None, Outcome.PONG)
    if event in ("installation", "installation_repositories"):
        return _installation(event, delivery_id, payload, configured_installation)
    repository = payload["repository"]
    change = RepositoryChange(
        provider=PROVIDER,
        repository_id=str(repository["id"]),
        full_name=repository["full_name"],
        event=event,
        action=action,
        occurred_at=_occurred_at(event, repository),
    )
    if event == "repository":
        change = _repository(change, payload["action"], repository)
    else:
        change = _content(change, event, payload)
    return Notification(PROVIDER, delivery_id, event, action, Outcome.ACCEPTED, (change,))


def _content(change: RepositoryChange, event: str, payload: dict[str, Any]) -> RepositoryChange:
    refs: tuple[RefMove, ...] = ()
    if event == "push":
        before, after = payload["before"], payload["after"]
        refs = (
            RefMove(
                payload["ref"],
                None if payload.get("created") or _null(before) else before,
                None if payload.get("deleted") or _null(after) else after,
            ),
        )
    elif event in ("create", "delete"):
        prefix = {"branch": "refs/heads/", "tag": "refs/tags/"}.get(payload["ref_type"])
        if prefix is not None:  # another kind of ref says nothing a hint could use
            refs = (RefMove(prefix + payload["ref"], None, None),)
    return replace(
        change,
        refs=refs,
        object_types=tuple(t.value for t in CONTENT_EVENTS[event]),
        content_changed=True,
    )


def _null(object_id: str) -> bool:
    return not object_id.strip("0")


def _repository(
    change: RepositoryChange, action: str, repository: dict[str, Any]
) -> RepositoryChange:
    if action in ("renamed", "transferred"):
        return replace(change, new_locator=_locator(action, repository["full_name"]))
    if action == "publicized":
        return replace(change, visibility="public")
    if action == "privatized":
        # The action says what happened; ``visibility`` only tells an enterprise's
        # ``internal`` from ``private``. GitHub's own examples carry a privatized
        # repository whose ``visibility`` still says "public" (``private`` is true).
        internal = repository.get("visibility") == "internal"
        return replace(change, visibility="internal" if internal else "private")
    if action in _REPOSITORY_ACCESS:
        return replace(change, access=AccessChange(_REPOSITORY_ACCESS[action]))
    if action == "edited":  # the default branch (synced) may have changed
        return replace(
            change, content_changed=True, object_types=(ObjectType.DEFAULT_BRANCH.value,)
        )
    return change


def _locator(action: str, full_name: str) -> str:
    """A renamed or transferred repository's new ``owner/name``, held to the grammar of
    GitHub's locators before a Binding's side takes it."""
    try:
        return provider_class(PROVIDER).normalize_locator(full_name)
    except InvalidLocator:
        raise payloads.refuse(
            "repository",
            "$.repository.full_name",
            f"{full_name[:120]!r} is not a GitHub OWNER/NAME, so no Binding takes it as "
            f"its new locator ({action})",
        ) from None


def _installation(
    event: str, delivery_id: str, payload: dict[str, Any], configured: str
) -> Notification:
    action = payload["action"]
    installation = str(payload["installation"]["id"])
    changes: list[RepositoryChange] = []
    if event == "installation":
        template = _INSTALLATION_ACCESS.get(action)
        if action not in _INSTALLATION_ACCESS:
            return Notification(PROVIDER, delivery_id, event, action, Outcome.ACCEPTED)
        access = AccessChange(
            None if template is None else template.format(installation=installation)
        )
        listed = payload.get("repositories")
        if listed is None:  # the payload names no repository: the whole installation
            return Notification(
                PROVIDER,
                delivery_id,
                event,
                action,
                Outcome.ACCEPTED,
                connection_access=ConnectionAccess(
                    # a side's connection_id (auth.CONNECTION) that names the installation
                    f"github:installation:{installation}",
                    bool(configured) and installation == configured,
                    access,
                ),
            )
        changes = [_access_change(event, action, repo, access) for repo in listed]
    else:
        removed = AccessChange(
            f"the repository was removed from the GitHub App installation {installation}"
        )
        changes = [
            *(
                _access_change(event, action, r, AccessChange(None))
                for r in _list(payload, "added")
            ),
            *(_access_change(event, action, r, removed) for r in _list(payload, "removed")),
        ]
    return Notification(PROVIDER, delivery_id, event, action, Outcome.ACCEPTED, tuple(changes))


def _list(payload: dict[str, Any], which: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = payload.get(f"repositories_{which}") or []
    return listed


def _access_change(
    event: str, action: str, repository: dict[str, Any], access: AccessChange
) -> RepositoryChange:
    return RepositoryChange(
        provider=PROVIDER,
        repository_id=str(repository["id"]),
        full_name=repository["full_name"],
        event=event,
        action=action,
        access=access,
        # Access regained: whatever changed meanwhile is owed a Run.
        content_changed=access.notice is None,
    )


def _occurred_at(event: str, repository: dict[str, Any]) -> datetime | None:
    """The repository's own clock: ``updated_at`` for its own events, ``pushed_at`` else
    (both in range: the reader checked them)."""
    value = repository.get("updated_at") if event == "repository" else repository.get("pushed_at")
    if isinstance(value, int):
        return payloads.epoch_time(value)
    if isinstance(value, str):
        return payloads.parse_time(value)
    return None
