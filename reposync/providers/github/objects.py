"""GitHub's JSON as canonical objects.

Identities: labels and releases, comments and assets by their numeric ``id``; issues,
pull requests and milestones by their ``number`` (what GitHub's paths use); reviews as
``<pull number>/<review id>`` (GitHub only lists them per pull request). Objects
reposync projected into comments (a review of a pull request carried by an issue) have
``comment-<id>`` identities.

Attribution headers written by reposync are read back here: their fields replace what
GitHub reports (the bot as author, the import time as creation time), so an object read
back equals the object that was written.

Each mapper passes every field of its type's description (``reposync.sync.fields``) by
name, ``None`` included where GitHub keeps nothing; ``tests/providers/test_github_objects``
fails while a field of the description has no GitHub source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.forge import carriers, reviews
from reposync.providers.forge import objects as forge_objects
from reposync.providers.forge.attribution import header_value
from reposync.providers.forge.bodies import parse
from reposync.providers.forge.reviews import native_review_identity
from reposync.providers.github import shapes
from reposync.sync import fields, objects
from reposync.sync.canonical import CanonicalObject, ObjectRef
from reposync.sync.vocabulary import ObjectType

STATE_REASONS = {
    None: None,
    "completed": "completed",
    "not_planned": "not_planned",
    "reopened": "reopened",
    "duplicate": "not_planned",
}


def _login(user: Mapping[str, Any] | None) -> str:
    return (user or {}).get("login") or "ghost"


def label(data: dict[str, Any]) -> CanonicalObject:
    return objects.label(
        str(data["id"]),
        "",
        name=data["name"],
        color=data["color"],
        description=data.get("description") or "",
    )


def milestone(data: dict[str, Any]) -> CanonicalObject:
    """A milestone; its due time is the header's exact one while GitHub keeps its day
    (``shapes``: GitHub keeps the day only), else GitHub's."""
    parsed = parse(data.get("description"))
    due_on = data.get("due_on")
    exact = header_value(parsed, "due_on", None)
    if isinstance(exact, str) and due_on and shapes.due_day(exact) == objects.timestamp(due_on):
        due_on = exact
    description = parsed.body if parsed.attribution is not None else data.get("description")
    return objects.milestone(
        str(data["number"]),
        data.get("updated_at") or "",
        title=data["title"],
        description=description or "",
        state=data["state"],
        due_on=due_on,
    )


def is_carrier(issue: dict[str, Any]) -> bool:
    """An issue reposync created to carry a pull request GitHub cannot hold."""
    return carriers.is_carrier(issue.get("body"))


def issue(data: dict[str, Any]) -> CanonicalObject:
    parsed = parse(data.get("body"))
    return objects.issue(
        str(data["number"]),
        data.get("updated_at") or "",
        state_reason=header_value(
            parsed, "state_reason", STATE_REASONS.get(data.get("state_reason"))
        ),
        **forge_objects.conversation(data, parsed, _login),
        # GitHub's own lock state (a header's "locked" of older versions is ignored).
        locked=bool(data.get("locked")),
        active_lock_reason=_lock_reason(data),
    )


def _lock_reason(data: dict[str, Any]) -> str | None:
    """GitHub's reason of a locked conversation; one reposync does not know reads as
    none (the lock itself is kept)."""
    reason = data.get("active_lock_reason")
    return reason if data.get("locked") and reason in fields.LOCK_REASONS else None


def pull_request(data: dict[str, Any], *, carrier: bool = False) -> CanonicalObject:
    """A pull request from ``pulls`` JSON, or from the issue that carries one."""
    return forge_objects.pull_request(
        data,
        parse(data.get("body")),
        _login,
        carrier=carrier,
        merged_at=data.get("merged_at"),
        draft=bool(data.get("draft")),
    )


def parent_number(comment: dict[str, Any]) -> int:
    """``…/issues/12`` -> 12 (comments name their issue or pull request by URL)."""
    return int(str(comment["issue_url"]).rstrip("/").rsplit("/", 1)[1])


def issue_comment(data: dict[str, Any], parent_type: ObjectType) -> CanonicalObject:
    """A comment, or what reposync carried in one (``forge.carriers.carried_object``)."""
    return forge_objects.issue_comment(data, parent_type, parent_number(data), _login)


def review(data: dict[str, Any], number: int) -> CanonicalObject:
    return forge_objects.review(
        data, number, _login, updated_at=data.get("submitted_at") or "", state=data["state"]
    )


#: The review a review comment belongs to: the one its header names when GitHub opened
#: another for it (a reply, a file-level comment: see ``writes``), else its own.
review_identity = forge_objects.review_identity


def is_vessel(data: dict[str, Any], number: int, comments: list[dict[str, Any]]) -> bool:
    """A review GitHub opened for a comment of another review, or left empty
    (``forge.reviews.is_vessel``); ``comments`` are the review's own comments (by
    ``pull_request_review_id``)."""
    return reviews.is_vessel(
        native_review_identity(number, data["id"]),
        data.get("body"),
        commented=data.get("state") == "COMMENTED",
        comment_reviews=(review_identity(c, number) for c in comments),
    )


def review_comment(
    data: dict[str, Any], review_identity: str, review_key: str | None
) -> CanonicalObject:
    # Where GitHub threads a reply to the root (or knows no deleted comment), the header
    # names the comment it answered.
    return forge_objects.review_comment(
        data,
        review_identity,
        review_key,
        _login,
        identity=str(data["id"]),
        line=data.get("line"),
        side=data.get("side") or "RIGHT",
        in_reply_to=data.get("in_reply_to_id"),
    )


#: A native requested reviewer.
review_request = forge_objects.review_request


def release(data: dict[str, Any]) -> CanonicalObject:
    return forge_objects.release(
        data,
        _login,
        updated_at=data.get("updated_at") or data.get("created_at") or "",
        published_at=data.get("published_at"),
    )


def release_asset(data: dict[str, Any], release_identity: str, tag: str) -> CanonicalObject:
    digest = str(data.get("digest") or "")
    return objects.release_asset(
        str(data["id"]),
        data.get("updated_at") or "",
        parent=ObjectRef(ObjectType.RELEASE, release_identity),
        parent_key=tag,
        name=shapes.original_asset_name(data["name"], data.get("label")),
        content_type=data["content_type"],
        size=data["size"],
        sha256=digest.removeprefix("sha256:"),
    )
