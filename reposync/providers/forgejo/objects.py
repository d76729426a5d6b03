"""Forgejo's JSON as canonical objects.

Identities: labels, milestones, releases, comments and attachments by their ``id`` (what
Forgejo's paths use); issues and pull requests by their ``number`` (``index``); reviews
as ``<pull number>/<review id>`` (Forgejo lists them per pull request); review requests
as ``<pull number>:<login>``. Objects reposync carried in comments (a review of a pull
request carried by an issue, a projected review request) have ``comment-<id>``
identities (``forge.carriers``).

Attribution headers reposync wrote are read back here (``forge.attribution``): their
fields replace what Forgejo reports (the token's account as author, the write's time),
so an object read back equals the object written. Logins Forgejo reports are mapped
back to the source's through the instance's account map (``accounts.People``), so what
a person wrote as their own account reads as theirs.

What Forgejo keeps otherwise than the canonical model, read here:

* a review's ``REQUEST_CHANGES`` is ``CHANGES_REQUESTED``, ``COMMENT`` ``COMMENTED``, a
  ``dismissed`` one ``DISMISSED``; ``REQUEST_REVIEW`` is a review request, no review;
* a review comment's line is ``position`` (a line of the new file: ``RIGHT``) or
  ``original_position`` (of the old one: ``LEFT``); it keeps no reply link;
* an issue has no close reason; a conversation's lock has no reason either;
* an attachment has no content type and no digest: a header in its release's body keeps
  both where reposync uploaded it, otherwise the type is guessed from the name as
  browsers do, and the digest is of the bytes (``reads``).
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable, Mapping
from typing import Any

from reposync.providers.forge import carriers, reviews
from reposync.providers.forge import objects as forge_objects
from reposync.providers.forge.attribution import header_value
from reposync.providers.forge.bodies import parse
from reposync.providers.forge.reviews import native_review_identity
from reposync.providers.forgejo.accounts import People
from reposync.sync import fields, objects
from reposync.sync.canonical import CanonicalObject, ObjectRef
from reposync.sync.vocabulary import ObjectType

#: Forgejo's review states as the canonical model names them.
REVIEW_STATES = {
    "APPROVED": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
    "COMMENT": "COMMENTED",
    "PENDING": "PENDING",
}
#: A review of this state is a request for one (``review_request``), no review.
REQUESTED = "REQUEST_REVIEW"
#: The key of a release's header that keeps its assets' types and digests, by id.
ASSETS = "assets"
#: What an attachment whose name says nothing is served as.
DEFAULT_CONTENT_TYPE = "application/octet-stream"


def number_of(url: object) -> int:
    """``…/issues/12`` or ``…/pulls/12`` -> 12 (comments name their parent by URL)."""
    return int(str(url or "").rstrip("/").rsplit("/", 1)[-1])


def parent_number(comment: Mapping[str, Any]) -> int:
    """The issue or pull request a comment is on."""
    return number_of(comment.get("issue_url") or comment.get("pull_request_url"))


def label(data: Mapping[str, Any]) -> CanonicalObject:
    return objects.label(
        str(data["id"]),
        "",
        name=data["name"],
        color=str(data.get("color") or "ededed").lstrip("#"),
        description=data.get("description") or "",
    )


def milestone(data: Mapping[str, Any]) -> CanonicalObject:
    """A milestone; Forgejo keeps a due time to the second (its API's ``due_on``)."""
    return objects.milestone(
        str(data["id"]),
        data.get("updated_at") or "",
        title=data["title"],
        description=data.get("description") or "",
        state=data["state"],
        due_on=data.get("due_on"),
    )


def is_carrier(issue: Mapping[str, Any]) -> bool:
    """An issue reposync created to carry a pull request Forgejo cannot hold."""
    return carriers.is_carrier(issue.get("body"))


def is_pull(issue: Mapping[str, Any]) -> bool:
    """An issue JSON that is a pull request's (Forgejo's ``pull_request`` is set)."""
    return bool(issue.get("pull_request"))


def issue(data: Mapping[str, Any], people: People) -> CanonicalObject:
    """An issue; a lock the API could not set is the header's (``lock_in_header``)."""
    parsed = parse(data.get("body"))
    locked = bool(header_value(parsed, "locked", data.get("is_locked")))
    reason = header_value(parsed, "active_lock_reason", None) if locked else None
    return objects.issue(
        str(data["number"]),
        data.get("updated_at") or "",
        state_reason=header_value(parsed, "state_reason", None),
        **forge_objects.conversation(data, parsed, people.login),
        locked=locked,
        active_lock_reason=reason if reason in fields.LOCK_REASONS else None,
    )


def pull_request(
    data: Mapping[str, Any], people: People, *, carrier: bool = False
) -> CanonicalObject:
    """A pull request from ``pulls`` JSON, or from the issue that carries one; Forgejo's
    API sets no draft flag, so a draft's is the header's."""
    parsed = parse(data.get("body"))
    return forge_objects.pull_request(
        data,
        parsed,
        people.login,
        carrier=carrier,
        merged_at=data.get("merged_at") if data.get("merged") else None,
        draft=header_value(parsed, "draft", bool(data.get("draft"))),
    )


def issue_comment(
    data: Mapping[str, Any], parent_type: ObjectType, people: People
) -> CanonicalObject:
    """A comment, or what reposync carried in one (``forge.carriers.carried_object``)."""
    return forge_objects.issue_comment(data, parent_type, parent_number(data), people.login)


def review_state(data: Mapping[str, Any]) -> str:
    """Forgejo's state in the canonical model's words."""
    if data.get("dismissed"):
        return "DISMISSED"
    return REVIEW_STATES.get(str(data.get("state")), "COMMENTED")


def review(data: Mapping[str, Any], number: int, people: People) -> CanonicalObject:
    return forge_objects.review(
        data,
        number,
        people.login,
        updated_at=data.get("updated_at") or data.get("submitted_at") or "",
        state=review_state(data),
    )


#: The review a review comment belongs to: the one its header names, else its own.
review_identity = forge_objects.review_identity


def is_vessel(data: Mapping[str, Any], number: int, comments: Iterable[Mapping[str, Any]]) -> bool:
    """A review that holds only comments of other reviews, or nothing (``forge.reviews``)."""
    return reviews.is_vessel(
        native_review_identity(number, data["id"]),
        data.get("body"),
        commented=data.get("state") == "COMMENT" and not data.get("dismissed"),
        comment_reviews=(review_identity(c, number) for c in comments),
    )


def line_of(data: Mapping[str, Any]) -> tuple[int | None, str]:
    """A review comment's line and side: Forgejo's ``position`` is a line of the new
    file, ``original_position`` one of the old file."""
    new, old = int(data.get("position") or 0), int(data.get("original_position") or 0)
    if new > 0:
        return new, "RIGHT"
    if old > 0:
        return old, "LEFT"
    return None, "RIGHT"


def review_comment(
    data: Mapping[str, Any],
    review_identity: str,
    review_key: str | None,
    people: People,
    *,
    identity: str,
) -> CanonicalObject:
    """A line comment of a review (``identity``: ``reads.review_comment_identity``); what
    it answered is the header's (Forgejo keeps no reply link)."""
    line, side = line_of(data)
    return forge_objects.review_comment(
        data,
        review_identity,
        review_key,
        people.login,
        identity=identity,
        line=line,
        side=side,
        in_reply_to=None,
    )


#: A native requested reviewer (Forgejo's request time is not read: GitHub keeps none,
#: so the model has none for native requests).
review_request = forge_objects.review_request


def release(data: Mapping[str, Any], people: People) -> CanonicalObject:
    return forge_objects.release(
        data,
        people.login,
        updated_at=data.get("created_at") or "",
        published_at=None if data.get("draft") else data.get("published_at"),
    )


def asset_facts(release_body: str | None) -> dict[str, dict[str, Any]]:
    """What a release's header keeps of its assets: attachment id -> type and digest."""
    kept = (parse(release_body).attribution or {}).get(ASSETS)
    return (
        {str(k): dict(v) for k, v in kept.items() if isinstance(v, dict)}
        if isinstance(kept, dict)
        else {}
    )


def guessed_type(name: str) -> str:
    """The content type a name says (as Python's table has it), else octet-stream."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or DEFAULT_CONTENT_TYPE


def release_asset(
    data: Mapping[str, Any],
    release_identity: str,
    tag: str,
    *,
    content_type: str,
    sha256: str,
) -> CanonicalObject:
    return objects.release_asset(
        str(data["id"]),
        data.get("created_at") or "",
        parent=ObjectRef(ObjectType.RELEASE, release_identity),
        parent_key=tag,
        name=data["name"],
        content_type=content_type,
        size=data["size"],
        sha256=sha256,
    )
