"""Reviews and review comments on GitHub.

A review is created whole with its top-level line comments, then submitted as a
comment: GitHub records no approval, change request or dismissal by the sync's own
account (the header keeps the source's state, ``REVIEW_STATE_NOTES`` says why it shows
as a comment). A comment its review's create did not carry is created alone, and GitHub
may place it elsewhere than the source had it (``forge.reviews.PLACEMENT_FIELDS``). On a
carrier, both are issue comments (``forge.carriers.carried_comment``). How each is written,
counted and read back is ``forge.reviews``'; here are GitHub's requests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge import reviews as forge_reviews
from reposync.providers.forge.carriers import (
    carried_comment,
    carried_review_comment_extra,
    comment_id,
    is_carried,
)
from reposync.providers.forge.reviews import (
    GONE_COMMENT,
    kept_placement,
    native_review_identity,
    placement_representation,
    review_body,
    review_comment_body,
    review_state_notes,
)
from reposync.providers.github import objects as gh
from reposync.providers.github.writes.carriers import kind
from reposync.providers.github.writes.context import FORGE, Handlers, WriteContext, number
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)

#: Review states GitHub cannot give a review the sync creates (its account would be
#: approving, requesting changes, or holding a draft): submitted as a comment, the header
#: keeping the state and saying so (``state_as_comment``).
REVIEW_STATE_NOTES = review_state_notes(FORGE)


# -- reviews ----------------------------------------------------------------------------


def _review_body(ctx: WriteContext, write: TargetWrite) -> str:
    return review_body(write, source_label=ctx.source_label(write), notes=REVIEW_STATE_NOTES)


def review_representation(write: TargetWrite) -> Representation:
    """How GitHub shows review ``write``: ``state_as_comment`` for the states it cannot give."""
    return forge_reviews.review_representation(write, REVIEW_STATE_NOTES)


def _inline(ctx: WriteContext, child: TargetWrite) -> dict[str, Any] | None:
    """A top-level line comment as create-review's ``comments[]`` takes it; ``None``
    for a file-level one (GitHub's create-review cannot take those)."""
    payload = child.payload or {}
    if payload.get("line") is None:
        return None
    return {
        "path": payload["path"],
        "line": payload["line"],
        "side": payload.get("side") or "RIGHT",
        "body": _comment_body(ctx, child, {}),
    }


def create_review(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """One review, whole: created pending with its top-level line comments, then
    submitted as a comment (GitHub records no approval, change request or dismissal
    by the sync's own account, and a pending review would be the sync's draft, which
    also blocks single comments on the pull request; the header keeps the state).

    Lost answers are settled by the marker in the review's body (``batch``'s recovery
    submits a review found pending). Should GitHub refuse the comments (their lines
    are not in its diff), the review is created without them and each comment's own
    item creates it alone, in a review of its own (``own_review``).
    """
    pull = number(ctx.parent(write))
    if kind(ctx, pull) != "pull":
        return (
            carried_comment(ctx, write, pull, ObjectType.REVIEW, {}),
            Representation.PROJECTED,
        )
    payload = write.payload or {}
    comments = [c for c in (_inline(ctx, child) for child in write.nested) if c is not None]
    request: dict[str, Any] = {"body": _review_body(ctx, write), "comments": comments}
    if payload.get("commit_id"):
        request["commit_id"] = payload["commit_id"]
    try:
        created = ctx.client.write("POST", ctx.path(f"/pulls/{pull}/reviews"), json_body=request)
    except WriteRefused as refused:
        if refused.status != 422:
            raise
        # Nothing was created (a commit or a line GitHub cannot place): the review
        # alone, on the pull request's head; its comments follow one by one.
        log.info("review of #%s created without its comments: %s", pull, refused)
        created = ctx.client.write(
            "POST",
            ctx.path(f"/pulls/{pull}/reviews"),
            json_body={"body": request["body"]},
        )
    identity = native_review_identity(pull, created["id"])
    submit_if_pending(ctx, identity, created)
    return identity, review_representation(write)


def submit_if_pending(ctx: WriteContext, identity: str, data: dict[str, Any] | None = None) -> None:
    """Submit review ``identity`` as a comment while it is pending (``data``: its JSON
    when at hand, else read)."""
    pull, review_id = identity.split("/", 1)
    if data is None:
        data = ctx.client.get(ctx.path(f"/pulls/{pull}/reviews/{review_id}"))
    if data.get("state") == "PENDING":
        ctx.client.write(
            "POST",
            ctx.path(f"/pulls/{pull}/reviews/{review_id}/events"),
            json_body={"event": "COMMENT"},
        )


def update_review(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if is_carried(identity):
        carrier = number(ctx.parent(write))
        return (
            carried_comment(ctx, write, carrier, ObjectType.REVIEW, {}),
            Representation.PROJECTED,
        )
    pull, review_id = identity.split("/", 1)
    ctx.client.write(
        "PUT",
        ctx.path(f"/pulls/{pull}/reviews/{review_id}"),
        json_body={"body": _review_body(ctx, write)},
    )
    return identity, review_representation(write)


# -- review comments --------------------------------------------------------------------


def _comment_body(ctx: WriteContext, write: TargetWrite, extra: Mapping[str, Any]) -> str:
    return review_comment_body(write, extra, source_label=ctx.source_label(write), forge=FORGE)


def create_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """A comment its review's create did not carry: a reply, a file-level comment, or
    one added to a review already on GitHub. GitHub opens a review for each, threads
    replies to the first comment, and knows no reply to a deleted comment; the
    header keeps the source's review and replied-to comment, and reads restore them.
    """
    payload = write.payload or {}
    review = ctx.parent(write)
    if review is None:
        raise WriteRefused(
            "the review is not on GitHub yet", refusal="dependency_missing", status=422
        )
    if is_carried(review):
        pull = _review_pull(ctx, write)
        return (
            carried_comment(
                ctx, write, pull, ObjectType.REVIEW_COMMENT, _review_comment_extra(ctx, write)
            ),
            Representation.PROJECTED,
        )
    pull = int(review.split("/", 1)[0])
    reply_ref = write.refs.get("in_reply_to")
    reply = ctx.ref(write, "in_reply_to")
    if reply_ref is not None and reply is None and not reply_ref.gone:
        raise WriteRefused(
            "the comment replied to is not on GitHub", refusal="dependency_missing", status=422
        )
    extra: dict[str, Any] = {"review": review}
    if reply is not None and not is_carried(reply):
        answered = ctx.client.get(ctx.path(f"/pulls/comments/{reply}"))
        if answered.get("in_reply_to_id") is not None:
            extra["in_reply_to"] = reply  # GitHub threads it to the root
        created = ctx.client.write(
            "POST",
            ctx.path(f"/pulls/{pull}/comments/{reply}/replies"),
            json_body={"body": _comment_body(ctx, write, extra)},
        )
    else:
        if reply_ref is not None:
            extra["in_reply_to"] = GONE_COMMENT
        request: dict[str, Any] = {
            "commit_id": payload["commit_id"],
            "path": payload["path"],
            "side": payload.get("side") or "RIGHT",
        }
        if payload.get("line") is not None:
            request["line"] = payload["line"]
        else:
            request["subject_type"] = "file"
        request["body"] = _comment_body(ctx, write, extra)
        created = ctx.client.write("POST", ctx.path(f"/pulls/{pull}/comments"), json_body=request)
    return str(created["id"]), placement_representation(extra)


def _review_pull(ctx: WriteContext, write: TargetWrite) -> int:
    """The pull request (carrier) of a review that was carried in a comment."""
    review = comment_id(ctx.parent(write) or "")
    comment = ctx.client.get(ctx.path(f"/issues/comments/{review}"))
    return gh.parent_number(comment)


def _review_comment_extra(ctx: WriteContext, write: TargetWrite) -> dict[str, Any]:
    return carried_review_comment_extra(
        write, review=ctx.parent(write), in_reply_to=ctx.ref(write, "in_reply_to")
    )


def update_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if is_carried(identity):
        return (
            carried_comment(
                ctx, write, 0, ObjectType.REVIEW_COMMENT, _review_comment_extra(ctx, write)
            ),
            Representation.PROJECTED,
        )
    # Where GitHub put it does not change with its text: keep what the header says.
    current = ctx.client.get(ctx.path(f"/pulls/comments/{identity}"))
    extra = kept_placement(current.get("body"))
    ctx.client.write(
        "PATCH",
        ctx.path(f"/pulls/comments/{identity}"),
        json_body={"body": _comment_body(ctx, write, extra)},
    )
    return identity, placement_representation(extra)


def delete_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if is_carried(identity):
        ctx.delete_comment(comment_id(identity))
    else:
        ctx.client.write("DELETE", ctx.path(f"/pulls/comments/{identity}"))
    return identity, None


#: No review delete: GitHub's REST API cannot delete a submitted review.
HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.REVIEW): create_review,
    (Action.UPDATE, ObjectType.REVIEW): update_review,
    (Action.CREATE, ObjectType.REVIEW_COMMENT): create_review_comment,
    (Action.UPDATE, ObjectType.REVIEW_COMMENT): update_review_comment,
    (Action.DELETE, ObjectType.REVIEW_COMMENT): delete_review_comment,
}
