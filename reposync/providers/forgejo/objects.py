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
from reposync.providers.forge.attribution import header_value
from reposync.providers.forge.bodies import Parsed, parse
from reposync.providers.forge.reviews import native_review_identity, placed_review
from reposync.providers.forgejo.accounts import People
from reposync.sync import fields, objects
from reposync.sync.canonical import CanonicalObject, ObjectRef
from reposync.sync.objects import number_key
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


def _conversation(data: Mapping[str, Any], parsed: Parsed, people: People) -> dict[str, Any]:
    """The fields issues and pull requests share, the header's where Forgejo has none."""
    assignees = [people.login(a) for a in data.get("assignees") or []]
    return {
        "number": data["number"],
        "title": data["title"],
        "body": parsed.body,
        "state": data["state"],
        "labels": [item["name"] for item in data.get("labels") or []],
        "milestone": (data.get("milestone") or {}).get("title"),
        "assignees": header_value(parsed, "assignees", assignees),
        "author": header_value(parsed, "author", people.login(data.get("user"))),
        "created_at": header_value(parsed, "created_at", data["created_at"]),
        "closed_at": header_value(parsed, "closed_at", data.get("closed_at")),
    }


def issue(data: Mapping[str, Any], people: People) -> CanonicalObject:
    """An issue; a lock the API could not set is the header's (``lock_in_header``)."""
    parsed = parse(data.get("body"))
    locked = bool(header_value(parsed, "locked", data.get("is_locked")))
    reason = header_value(parsed, "active_lock_reason", None) if locked else None
    return objects.issue(
        str(data["number"]),
        data.get("updated_at") or "",
        state_reason=header_value(parsed, "state_reason", None),
        **_conversation(data, parsed, people),
        locked=locked,
        active_lock_reason=reason if reason in fields.LOCK_REASONS else None,
    )


def pull_request(
    data: Mapping[str, Any], people: People, *, carrier: bool = False
) -> CanonicalObject:
    """A pull request from ``pulls`` JSON, or from the issue that carries one."""
    parsed = parse(data.get("body"))
    if carrier:
        carried = carriers.carried_pull(parsed)
        head = {"ref": carried.head_ref, "sha": carried.head_sha}
        base = {"ref": carried.base_ref, "sha": carried.base_sha}
        merged_at, draft = carried.merged_at, carried.draft
    else:
        head, base = data["head"], data["base"]
        merged_at = data.get("merged_at") if data.get("merged") else None
        draft = header_value(parsed, "draft", bool(data.get("draft")))
    return objects.pull_request(
        str(data["number"]),
        data.get("updated_at") or "",
        merged=header_value(parsed, "merged", merged_at is not None),
        merged_at=header_value(parsed, "merged_at", merged_at),
        draft=draft,
        base_ref=base["ref"],
        base_sha=header_value(parsed, "base_sha", base["sha"]),
        head_ref=header_value(parsed, "head_ref", head["ref"]),
        head_sha=header_value(parsed, "head_sha", head["sha"]),
        **_conversation(data, parsed, people),
    )


def issue_comment(
    data: Mapping[str, Any], parent_type: ObjectType, people: People
) -> CanonicalObject:
    """A comment, or what reposync carried in one (``forge.carriers.carried_object``)."""
    parsed = parse(data.get("body"))
    number = parent_number(data)
    carried = carriers.carried_object(data["id"], data.get("updated_at") or "", parsed, number)
    if carried is not None:
        return carried
    return objects.issue_comment(
        str(data["id"]),
        data.get("updated_at") or "",
        parent=ObjectRef(parent_type, str(number)),
        parent_key=number_key(number),
        body=parsed.body,
        author=header_value(parsed, "author", people.login(data.get("user"))),
        created_at=header_value(parsed, "created_at", data["created_at"]),
    )


def review_state(data: Mapping[str, Any]) -> str:
    """Forgejo's state in the canonical model's words."""
    if data.get("dismissed"):
        return "DISMISSED"
    return REVIEW_STATES.get(str(data.get("state")), "COMMENTED")


def review(data: Mapping[str, Any], number: int, people: People) -> CanonicalObject:
    parsed = parse(data.get("body"))
    return objects.review(
        native_review_identity(number, data["id"]),
        data.get("updated_at") or data.get("submitted_at") or "",
        parent=ObjectRef(ObjectType.PULL_REQUEST, str(number)),
        parent_key=number_key(number),
        state=header_value(parsed, "state", review_state(data)),
        body=parsed.body,
        commit_id=header_value(parsed, "commit_id", data.get("commit_id") or ""),
        author=header_value(parsed, "author", people.login(data.get("user"))),
        submitted_at=header_value(parsed, "submitted_at", data.get("submitted_at")),
    )


def review_identity(comment: Mapping[str, Any], number: int) -> str:
    """The review a review comment belongs to: the one its header names, else its own."""
    return placed_review(comment.get("body")) or native_review_identity(
        number, comment.get("pull_request_review_id")
    )


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
    parsed = parse(data.get("body"))
    line, side = line_of(data)
    reply_to = header_value(parsed, "in_reply_to", None)
    return objects.review_comment(
        identity,
        data.get("updated_at") or "",
        parent=ObjectRef(ObjectType.REVIEW, review_identity),
        parent_key=review_key,
        path=data["path"],
        line=line,
        side=side,
        commit_id=header_value(parsed, "commit_id", data.get("commit_id") or ""),
        body=parsed.body,
        author=header_value(parsed, "author", people.login(data.get("user"))),
        created_at=header_value(parsed, "created_at", data["created_at"]),
        in_reply_to=None
        if reply_to is None
        else ObjectRef(ObjectType.REVIEW_COMMENT, str(reply_to)),
    )


def review_request(number: int, login: str) -> CanonicalObject:
    """A native requested reviewer (Forgejo's request time is not read: GitHub keeps
    none, so the model has none for native requests)."""
    return objects.review_request(
        f"{number}:{login}",
        "",
        parent=ObjectRef(ObjectType.PULL_REQUEST, str(number)),
        parent_key=number_key(number),
        reviewer=login,
        requested_at=None,
    )


def release(data: Mapping[str, Any], people: People) -> CanonicalObject:
    parsed = parse(data.get("body"))
    return objects.release(
        str(data["id"]),
        data.get("created_at") or "",
        tag=data["tag_name"],
        name=data.get("name") or "",
        body=parsed.body,
        draft=bool(data.get("draft")),
        prerelease=bool(data.get("prerelease")),
        author=header_value(parsed, "author", people.login(data.get("author"))),
        created_at=header_value(parsed, "created_at", data["created_at"]),
        published_at=header_value(
            parsed, "published_at", None if data.get("draft") else data.get("published_at")
        ),
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
