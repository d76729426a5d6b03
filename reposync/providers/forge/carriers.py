"""What a forge cannot hold as its own kind, carried by another object, and read back.

* A pull request that cannot be re-created (merged, closed, or its head commit is on no
  branch of the target) becomes a **carrier** issue under its number, whose header
  keeps every pull request field (``CARRIER_FIELDS``); reads present it as the pull
  request again.
* A review or review comment of a carrier becomes a comment on that issue carrying
  its fields, and so does a review request the forge cannot make (``review_requests``).
  Such objects have ``comment-<id>`` identities, and the header's ``CARRIED_TYPE`` says
  what they carry. Such a comment is written here (``carried_comment``, ``put_comment``)
  through the forge's own comment requests (``CommentRequests``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from reposync.providers.base import TargetWrite
from reposync.providers.forge.attribution import ATTRIBUTED_FIELDS, attributed_body
from reposync.providers.forge.bodies import Parsed, parse
from reposync.sync import objects
from reposync.sync.canonical import BRANCH_PREFIX, CanonicalObject, ObjectRef, shadow_ref
from reposync.sync.objects import number_key
from reposync.sync.vocabulary import ObjectType

#: Attribution field marking an issue or comment that carries another type.
CARRIED_TYPE = "reposync_type"
#: A carrier issue keeps every pull request field an issue cannot.
CARRIER_FIELDS = (
    "author",
    "created_at",
    "closed_at",
    "assignees",
    "merged",
    "merged_at",
    "draft",
    "base_ref",
    "base_sha",
    "head_ref",
    "head_sha",
)
#: Identities of objects carried in comments: this prefix and the comment's id.
COMMENT_PREFIX = "comment-"


def comment_identity(comment_id: object) -> str:
    """The identity of what comment ``comment_id`` carries."""
    return f"{COMMENT_PREFIX}{comment_id}"


def comment_id(identity: str) -> str:
    """The id of the comment that carries ``identity``."""
    return identity.removeprefix(COMMENT_PREFIX)


def is_carried(identity: str) -> bool:
    """Whether ``identity`` names an object carried in a comment."""
    return identity.startswith(COMMENT_PREFIX)


# -- writing ----------------------------------------------------------------------------


class CommentRequests(Protocol):
    """The requests a forge's batch context sends for the issue comments that carry
    objects (its own: on GitHub and Forgejo they happen to be spelt alike)."""

    source_label: Callable[[TargetWrite], str | None]

    def post_comment(self, number: int, body: str) -> object:
        """Posts a comment on issue or pull request ``number``; the new comment's id."""

    def edit_comment(self, comment: str, body: str) -> None:
        """Replaces the body of comment ``comment`` (its id)."""

    def delete_comment(self, comment: str) -> None:
        """Deletes comment ``comment`` (its id)."""


def native_head(
    write: TargetWrite, branch_refs: Callable[[str], Iterable[Mapping[str, Any]] | None]
) -> str | None:
    """The branch open pull request ``write`` can be opened on: its head, or the shadow
    branch the refs phase pushed for it, whichever is at its head commit; ``None`` when
    the forge cannot hold it as a pull request (merged, closed, its head commit on no
    branch here): it becomes a carrier. ``branch_refs(branch)`` is the forge's listing
    of the refs under ``refs/heads/<branch>`` (empty or ``None`` where there are none).
    """
    payload = write.payload or {}
    if payload.get("state") != "open" or payload.get("merged"):
        return None
    candidates: list[str] = [payload["head_ref"]]
    if write.number is not None:
        candidates.append(shadow_ref(write.number).removeprefix(BRANCH_PREFIX))
    for branch in candidates:
        wanted = BRANCH_PREFIX + branch
        if any(
            r.get("ref") == wanted and (r.get("object") or {}).get("sha") == payload["head_sha"]
            for r in branch_refs(branch) or []
        ):
            return branch
    return None


def carrier_body(write: TargetWrite, *, source_label: str | None) -> str:
    """The body of the issue that carries pull request ``write``."""
    return attributed_body(
        write,
        CARRIER_FIELDS,
        source_label=source_label,
        extra={CARRIED_TYPE: ObjectType.PULL_REQUEST.value},
    )


def carried_comment_body(
    write: TargetWrite,
    kind: ObjectType,
    extra: Mapping[str, Any],
    *,
    source_label: str | None,
) -> str:
    """The body of a comment carrying ``write`` (a ``kind``): its header keeps the type,
    its fields and ``extra`` (where the source had it)."""
    return attributed_body(
        write,
        ATTRIBUTED_FIELDS[kind],
        source_label=source_label,
        extra={**extra, CARRIED_TYPE: kind.value},
    )


def put_comment(ctx: CommentRequests, write: TargetWrite, number: int, body: str) -> str:
    """The comment that carries ``write``, edited in place when it has one, else posted
    on issue or pull request ``number``: its ``comment-<id>`` identity."""
    if write.target_identity:
        ctx.edit_comment(comment_id(write.target_identity), body)
        return write.target_identity
    return comment_identity(ctx.post_comment(number, body))


def carried_comment(
    ctx: CommentRequests,
    write: TargetWrite,
    number: int,
    kind: ObjectType,
    extra: Mapping[str, Any],
) -> str:
    """What the forge cannot hold natively (a review of a carrier, a review comment it
    cannot place), as a comment on issue ``number`` whose header keeps its type and
    fields (created, or updated in place)."""
    body = carried_comment_body(write, kind, extra, source_label=ctx.source_label(write))
    return put_comment(ctx, write, number, body)


def carried_review_comment_extra(
    write: TargetWrite, *, review: str | None, in_reply_to: str | None
) -> dict[str, Any]:
    """What a comment carrying review comment ``write`` keeps besides its fields: where
    the source had it (its ``review`` and the comment it answered, as target identities;
    its path, line and side), since the carrier has no diff to place it in."""
    payload = write.payload or {}
    return {
        "review": review,
        "path": payload.get("path"),
        "line": payload.get("line"),
        "side": payload.get("side"),
        "in_reply_to": in_reply_to,
    }


# -- reading ----------------------------------------------------------------------------


def is_carrier(body: str | None) -> bool:
    """Whether an issue with this body is one reposync made to carry a pull request."""
    attribution = parse(body).attribution or {}
    return attribution.get(CARRIED_TYPE) == ObjectType.PULL_REQUEST.value


@dataclass(frozen=True, slots=True)
class CarriedPull:
    """What a carrier's header keeps of its pull request's branches and merge."""

    head_ref: Any
    head_sha: Any
    base_ref: Any
    base_sha: Any
    merged_at: Any
    draft: Any


def carried_pull(parsed: Parsed) -> CarriedPull:
    """The branches and merge of the pull request a carrier issue holds."""
    attribution = parsed.attribution or {}
    return CarriedPull(
        head_ref=attribution.get("head_ref", ""),
        head_sha=attribution.get("head_sha", ""),
        base_ref=attribution.get("base_ref", ""),
        base_sha=attribution.get("base_sha", ""),
        merged_at=attribution.get("merged_at"),
        draft=attribution.get("draft", False),
    )


def carried_object(
    comment: object, updated_at: str, parsed: Parsed, number: int
) -> CanonicalObject | None:
    """What reposync wrote as comment ``comment`` on issue or pull request ``number``: a
    review or review comment (its pull request is a carrier), or a review request
    (always projected); ``None`` for a comment that carries nothing."""
    attribution = parsed.attribution or {}
    kind = attribution.get(CARRIED_TYPE)
    identity = comment_identity(comment)
    pull = ObjectRef(ObjectType.PULL_REQUEST, str(number))
    if kind == ObjectType.REVIEW_REQUEST.value:
        return objects.review_request(
            identity,
            updated_at,
            parent=pull,
            parent_key=number_key(number),
            reviewer=attribution["reviewer"],
            requested_at=attribution.get("requested_at"),
        )
    if kind == ObjectType.REVIEW.value:
        return objects.review(
            identity,
            updated_at,
            parent=pull,
            parent_key=number_key(number),
            state=attribution["state"],
            body=parsed.body,
            commit_id=attribution["commit_id"],
            author=attribution["author"],
            submitted_at=attribution["submitted_at"],
        )
    if kind == ObjectType.REVIEW_COMMENT.value:
        in_reply_to = attribution.get("in_reply_to")
        return objects.review_comment(
            identity,
            updated_at,
            parent=ObjectRef(ObjectType.REVIEW, attribution["review"]),
            parent_key=attribution.get("review_key"),
            path=attribution["path"],
            line=attribution.get("line"),
            side=attribution.get("side") or "RIGHT",
            commit_id=attribution["commit_id"],
            body=parsed.body,
            author=attribution["author"],
            created_at=attribution["created_at"],
            in_reply_to=None
            if in_reply_to is None
            else ObjectRef(ObjectType.REVIEW_COMMENT, in_reply_to),
        )
    return None
