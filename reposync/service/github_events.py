"""GitHub webhook deliveries: validated against GitHub's schema, normalized into changes.

A delivery's payload is checked against its own event's definition in the published
schema (``reposync/contracts/github-webhooks-schema.json``, octokit's): the action's own
definition where the schema has one (``issues$opened``), else the event's
(``push$event``); never against the union of all 53 events, which would cost a
validation per event and answer with a vague message. Validators are built once per
definition and kept.

Events that may change synced content ask for a Run of the Bindings whose authority is
the repository; ``repository`` events move locators (renamed, transferred) and
visibilities (publicized, privatized); ``installation`` and ``installation_repositories``
say where reposync's GitHub App lost or regained access; ``ping`` proves the hook works.
Any other event is recorded as ignored.
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

from reposync.errors import WebhookMalformed, WebhookPayloadInvalid
from reposync.service.changes import (
    AccessChange,
    Notification,
    Outcome,
    RefMove,
    RepositoryChange,
)
from reposync.sync.vocabulary import ObjectType

PROVIDER = "github"
SCHEMA_FILE = "github-webhooks-schema.json"
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
#: Every event reposync acts on; the schema definition of each is ``DEFINITIONS[event]``.
HANDLED_EVENTS = frozenset(
    {*CONTENT_EVENTS, "repository", "installation", "installation_repositories", "ping"}
)
#: Where the schema names an event's definition ``<event>$event`` rather than ``_event``.
_DOLLAR_EVENTS = frozenset({"push", "create", "delete", "ping"})

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


@functools.cache
def schema() -> dict[str, Any]:
    """The published payload schema (package data), loaded once."""
    text = resources.files("reposync").joinpath("contracts", SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def definition_name(event: str, action: object) -> str:
    """The narrowest definition of a delivery: its action's, else its event's."""
    base = f"{event}$event" if event in _DOLLAR_EVENTS else f"{event}_event"
    if isinstance(action, str) and f"{event}${action}" in schema()["definitions"]:
        return f"{event}${action}"
    return base


@functools.cache
def _validator(name: str) -> Draft7Validator:
    definitions = schema()["definitions"]
    # The definition's own refs ("#/definitions/...") resolve against this document.
    return Draft7Validator({"definitions": definitions, "$ref": f"#/definitions/{name}"})


def validate(event: str, payload: object) -> None:
    """Raise ``WebhookPayloadInvalid`` naming where and why ``payload`` breaks its schema."""
    action = payload.get("action") if isinstance(payload, dict) else None
    name = definition_name(event, action)
    error = best_match(_validator(name).iter_errors(payload))
    if error is None:
        return
    where = error.json_path
    message = error.message if len(error.message) <= 300 else error.message[:297] + "..."
    raise WebhookPayloadInvalid(
        f"the {event} payload does not match GitHub's schema ({name}) at {where}: {message}"
    )


def parse_body(body: bytes) -> Any:
    """The JSON value of a delivery body (``WebhookMalformed`` when it is none)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise WebhookMalformed("the delivery body is JSON nested too deeply") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WebhookMalformed(f"the delivery body is not JSON: {exc}") from None


def notification(event: str, delivery_id: str, body: bytes) -> Notification:
    """Validate and normalize one delivery (``event`` is ``X-GitHub-Event``)."""
    if event not in HANDLED_EVENTS:
        return Notification(PROVIDER, delivery_id, event, None, Outcome.IGNORED)
    payload = parse_body(body)
    validate(event, payload)
    action = payload.get("action")
    if event == "ping":
        return Notification(PROVIDER, delivery_id, event, None, Outcome.PONG)
    if event in ("installation", "installation_repositories"):
        return _installation(event, delivery_id, payload)
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
        change = _repository(change, action, repository)
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
                None if payload["created"] or before == NULL_SHA else before,
                None if payload["deleted"] or after == NULL_SHA else after,
            ),
        )
    elif event in ("create", "delete"):
        prefix = "refs/heads/" if payload["ref_type"] == "branch" else "refs/tags/"
        refs = (RefMove(prefix + payload["ref"], None, None),)
    return replace(
        change,
        refs=refs,
        object_types=tuple(t.value for t in CONTENT_EVENTS[event]),
        content_changed=True,
    )


def _repository(
    change: RepositoryChange, action: str, repository: dict[str, Any]
) -> RepositoryChange:
    if action in ("renamed", "transferred"):
        return replace(change, new_locator=repository["full_name"])
    if action in ("publicized", "privatized"):
        visibility = repository.get("visibility") or (
            "private" if action == "privatized" else "public"
        )
        return replace(change, visibility=visibility)
    if action in _REPOSITORY_ACCESS:
        return replace(change, access=AccessChange(_REPOSITORY_ACCESS[action]))
    if action == "edited":  # the default branch (synced) may have changed
        return replace(
            change, content_changed=True, object_types=(ObjectType.DEFAULT_BRANCH.value,)
        )
    return change


def _installation(event: str, delivery_id: str, payload: dict[str, Any]) -> Notification:
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
                installation_access=(installation, access),
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
    """The repository's own clock: ``updated_at`` for its own events, ``pushed_at`` else."""
    value = repository.get("updated_at") if event == "repository" else repository.get("pushed_at")
    if isinstance(value, int):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if parsed.tzinfo is None:
            return None
        return parsed
    return None
