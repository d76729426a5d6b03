"""Forgejo and Gitea deliveries, read tolerantly and normalized into changes.

Forgejo names a delivery twice: ``X-Forgejo-Event`` (``issues``, ``pull_request``,
``issue_comment``, ``pull_request_approved``, ...) and the finer ``X-Forgejo-Event-Type``
(``issue_label``, ``pull_request_comment``, ``pull_request_review_approved``, ...;
modules/webhook/type.go). The type says more (a comment on a pull request's conversation
is event ``issue_comment``, type ``pull_request_comment``; a review's line comment is event
``pull_request_comment``), so it is read first; a sender without it (an older Gitea) is
read by its event.

Events that may change synced content ask for a Run of the Bindings whose authority is
the repository, with the object types they touched as a hint; ``repository`` ``deleted``
says the repository is gone. Forgejo sends no event for a rename, a transfer, a change
of visibility, an archive or a label or milestone of its own: those are seen by the next
scheduled Run. Forgejo sends no ``ping`` either (its "Test delivery" is a ``push`` of the
default branch's head, before and after equal: a Run, and no move of a branch). Any
other event (``fork``, ``package``, ``action_run_*``, ...) is recorded as ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from reposync.forge_instances import ForgejoInstance
from reposync.providers.forgejo import locators, payloads
from reposync.providers.notifications import (
    AccessChange,
    Delivery,
    Notification,
    Outcome,
    RefMove,
    RepositoryChange,
)
from reposync.sync.vocabulary import ObjectType

#: A delivery that asserts the all-zero id as ``before``/``after`` created/deleted the ref.
NULL_SHA = "0" * 40

_REFS = (ObjectType.GIT_REF,)
_ISSUE = (ObjectType.ISSUE,)
_PULL = (ObjectType.PULL_REQUEST,)
_REVIEW = (ObjectType.REVIEW,)
_REVIEW_COMMENT = (ObjectType.REVIEW, ObjectType.REVIEW_COMMENT)


@dataclass(frozen=True, slots=True)
class Kind:
    """What reposync makes of one event: the shape of its payload (``payloads.SCHEMAS``)
    and the object types it may have changed (none: no content, a ``repository`` event)."""

    shape: str
    object_types: tuple[ObjectType, ...] = ()


#: By ``X-Forgejo-Event-Type`` (Forgejo's ``HookEventType``), what each finer type is.
TYPES: dict[str, Kind] = {
    "push": Kind("push", _REFS),
    "create": Kind("ref", _REFS),
    "delete": Kind("ref", _REFS),
    "issues": Kind("content", _ISSUE),
    "issue_assign": Kind("content", _ISSUE),
    "issue_label": Kind("content", _ISSUE),
    "issue_milestone": Kind("content", _ISSUE),
    "issue_comment": Kind("content", (ObjectType.ISSUE_COMMENT,)),
    "pull_request": Kind("content", _PULL),
    "pull_request_assign": Kind("content", _PULL),
    "pull_request_label": Kind("content", _PULL),
    "pull_request_milestone": Kind("content", _PULL),
    "pull_request_sync": Kind("content", _PULL),
    "pull_request_review_request": Kind("content", (ObjectType.REVIEW_REQUEST,)),
    "pull_request_comment": Kind("content", (ObjectType.ISSUE_COMMENT,)),
    "pull_request_review_approved": Kind("content", _REVIEW),
    "pull_request_review_rejected": Kind("content", _REVIEW),
    "pull_request_review_comment": Kind("content", _REVIEW_COMMENT),
    "release": Kind("content", (ObjectType.RELEASE, ObjectType.RELEASE_ASSET)),
    "wiki": Kind("content", (ObjectType.WIKI_REF,)),
    "repository": Kind("repository"),
}
#: By ``X-Forgejo-Event`` alone (``HookEventType.Event()``), for a sender without types.
EVENTS: dict[str, Kind] = {
    "push": TYPES["push"],
    "create": TYPES["create"],
    "delete": TYPES["delete"],
    "issues": TYPES["issues"],
    "issue_comment": TYPES["issue_comment"],
    "pull_request": Kind("content", (ObjectType.PULL_REQUEST, ObjectType.REVIEW_REQUEST)),
    "pull_request_approved": TYPES["pull_request_review_approved"],
    "pull_request_rejected": TYPES["pull_request_review_rejected"],
    "pull_request_comment": TYPES["pull_request_review_comment"],
    "release": TYPES["release"],
    "wiki": TYPES["wiki"],
    "repository": TYPES["repository"],
}
#: Repository actions that say something about access to it.
_REPOSITORY_ACCESS: dict[str, str] = {"deleted": "the repository was deleted on {forge}"}


def kind(event: str, event_type: str | None) -> Kind | None:
    """What the delivery is, by its type where the type is one reposync knows, else by
    its event; None for an event reposync does not act on."""
    if event_type and event_type in TYPES:
        return TYPES[event_type]
    return EVENTS.get(event)


def notification(
    provider: str,
    forge: str,
    delivery: Delivery,
    event_type: str | None,
    payload: Callable[[], object],
    instance_of: Callable[[str, str], ForgejoInstance],
) -> Notification:
    """Read and normalize one delivery (``delivery.event``: ``X-Forgejo-Event``;
    ``event_type``: ``X-Forgejo-Event-Type``, or None; ``payload``: its decoded JSON,
    read only for an event reposync acts on). ``instance_of`` gives the instance of the
    repository's ``html_url`` and ``full_name`` that signed the delivery (the reader's
    check); the repository's id is ``<Forgejo's id>@<instance>``."""
    event = delivery.event
    found = kind(event, event_type)
    if found is None:
        return Notification(provider, delivery.delivery_id, event, None, Outcome.IGNORED)
    read = payloads.read(found.shape, event, payload())
    action = read.get("action")
    repository = read["repository"]
    instance = instance_of(repository["html_url"], repository["full_name"])
    change = RepositoryChange(
        provider=provider,
        repository_id=locators.repository_id(instance.name, repository["id"]),
        full_name=f"{instance.name}/{repository['full_name']}",
        event=event_type if event_type in TYPES else event,
        action=action,
    )
    if found.shape == "repository":
        notice = _REPOSITORY_ACCESS.get(read["action"])
        if notice is not None:
            change = replace(change, access=AccessChange(notice.format(forge=forge)))
    else:
        change = replace(
            change,
            refs=_refs(found.shape, read),
            object_types=tuple(t.value for t in found.object_types),
            content_changed=True,
        )
    return Notification(provider, delivery.delivery_id, event, action, Outcome.ACCEPTED, (change,))


def _refs(shape: str, payload: dict[str, Any]) -> tuple[RefMove, ...]:
    if shape == "push":
        before, after = payload["before"], payload["after"]
        return (RefMove(payload["ref"], _or_none(before), _or_none(after)),)
    if shape == "ref":
        ref = _full_ref(payload["ref"], payload["ref_type"])
        # no object ids (the push beside it has them): a hint, never a branch's move
        return (RefMove(ref, None, None),) if ref is not None else ()
    return ()


def _or_none(object_id: str) -> str | None:
    return None if not object_id.strip("0") else object_id


def _full_ref(ref: str, ref_type: str) -> str | None:
    """A ``create``'s or ``delete``'s ref by its full name: Forgejo sends it whole, Gitea
    (and Forgejo's ``gitea`` hooks) the short name with its kind beside it."""
    if ref.startswith("refs/"):
        return ref
    prefix = {"branch": "refs/heads/", "tag": "refs/tags/"}.get(ref_type)
    return None if prefix is None else prefix + ref
