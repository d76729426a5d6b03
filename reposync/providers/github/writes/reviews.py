"""Reviews and review comments on GitHub.

A review is created whole with its top-level line comments, then submitted as a
comment: GitHub records no approval, change request or dismissal by the sync's own
account (the header keeps the source's state, ``REVIEW_STATE_NOTES`` says why it shows
as a comment). A comment its review's create did not carry is created alone, and GitHub
may place it elsewhere than the source had it (``PLACEMENT_FIELDS``). On a carrier, both
are issue comments (``carriers.carried_comment``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose, parse
from reposync.providers.github import objects as gh
from reposync.providers.github.writes.carriers import carried_comment, kind
from reposync.providers.github.writes.context import (
    ATTRIBUTED_FIELDS,
    Handlers,
    WriteContext,
    number,
)
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)

#: Review states GitHub cannot give a review the sync creates (its account would be
#: approving, requesting changes, or holding a draft): submitted as a comment, the header
#: keeping the state and saying so (``state_as_comment``).
REVIEW_STATE_NOTES = {
    "APPROVED": "approved on the source; shown as a comment: GitHub would count an "
    "approval by the sync's account",
    "CHANGES_REQUESTED": "requested changes on the source; shown as a comment: GitHub "
    "would block merging on the sync's account",
    "DISMISSED": "a dismissed review on the source; shown as a comment: GitHub dismisses "
    "only approvals and change requests",
    "PENDING": "pending on the source (a draft its author had not submitted); shown as "
    "a comment: a pending review on GitHub is the sync's own draft",
}
#: Header fields of a review comment GitHub placed elsewhere than the source had it:
#: ``review`` (the review it belongs to, when GitHub opened another one for it) and
#: ``in_reply_to`` (the comment it answered, when GitHub threads it to the root, or
#: ``GONE_COMMENT`` when the source's was deleted). Reads restore both.
PLACEMENT_FIELDS = ("review", "in_reply_to")
#: What a reply answers when the source's comment is gone (as a local forge keeps it).
GONE_COMMENT = "deleted"


def _placement_representation(extra: Mapping[str, Any]) -> Representation:
    if extra.get("in_reply_to") == GONE_COMMENT:
        return Representation.DETACHED_REPLY
    if extra.get("in_reply_to") is not None:
        return Representation.REPLY_TO_ROOT
    if extra.get("review") is not None:
        return Representation.OWN_REVIEW
    return Representation.ATTRIBUTED


def _placement_note(extra: Mapping[str, Any]) -> str | None:
    """The visible part of ``PLACEMENT_FIELDS``: what GitHub shows differently."""
    replied = extra.get("in_reply_to")
    if replied == GONE_COMMENT:
        return "in reply to a comment deleted on the source; shown as a comment of its own"
    if replied is not None:
        return (
            f"in reply to comment {replied}; GitHub threads replies to the first comment "
            "of a thread"
        )
    if extra.get("review") is not None:
        return f"part of review {extra['review']}; GitHub opened a review of its own for it"
    return None


# -- reviews ----------------------------------------------------------------------------


def _review_body(ctx: WriteContext, write: TargetWrite) -> str:
    """A review's body: the header keeps every field, and says when GitHub shows the
    review in another state than the source's (see ``REVIEW_STATE_NOTES``)."""
    payload = write.payload or {}
    attribution = {key: payload.get(key) for key in ATTRIBUTED_FIELDS[ObjectType.REVIEW]}
    return compose(
        payload.get("body") or "",
        marker=write.marker,
        attribution=attribution,
        source_label=ctx.source_label(write),
        note=REVIEW_STATE_NOTES.get(str(payload.get("state"))),
    )


def review_representation(write: TargetWrite) -> Representation:
    state = str((write.payload or {}).get("state"))
    if state in REVIEW_STATE_NOTES:
        return Representation.STATE_AS_COMMENT
    return Representation.ATTRIBUTED


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
    identity = f"{pull}/{created['id']}"
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
    if identity.startswith("comment-"):
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
    """A review comment's body; ``extra`` (see ``PLACEMENT_FIELDS``) says where the source
    had it when GitHub put it elsewhere, in the header and in a visible note."""
    payload = write.payload or {}
    attribution = {key: payload.get(key) for key in ATTRIBUTED_FIELDS[ObjectType.REVIEW_COMMENT]}
    attribution.update(extra)
    return compose(
        payload.get("body") or "",
        marker=write.marker,
        attribution=attribution,
        source_label=ctx.source_label(write),
        note=_placement_note(extra),
    )


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
    if review.startswith("comment-"):
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
    if reply is not None and not reply.startswith("comment-"):
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
    return str(created["id"]), _placement_representation(extra)


def _review_pull(ctx: WriteContext, write: TargetWrite) -> int:
    """The pull request (carrier) of a review that was carried in a comment."""
    review = (ctx.parent(write) or "").removeprefix("comment-")
    comment = ctx.client.get(ctx.path(f"/issues/comments/{review}"))
    return gh.parent_number(comment)


def _review_comment_extra(ctx: WriteContext, write: TargetWrite) -> dict[str, Any]:
    payload = write.payload or {}
    return {
        "review": ctx.parent(write),
        "path": payload.get("path"),
        "line": payload.get("line"),
        "side": payload.get("side"),
        "in_reply_to": ctx.ref(write, "in_reply_to"),
    }


def update_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if identity.startswith("comment-"):
        return (
            carried_comment(
                ctx, write, 0, ObjectType.REVIEW_COMMENT, _review_comment_extra(ctx, write)
            ),
            Representation.PROJECTED,
        )
    # Where GitHub put it does not change with its text: keep what the header says.
    current = ctx.client.get(ctx.path(f"/pulls/comments/{identity}"))
    kept = parse(current.get("body")).attribution or {}
    extra = {key: kept[key] for key in PLACEMENT_FIELDS if key in kept}
    ctx.client.write(
        "PATCH",
        ctx.path(f"/pulls/comments/{identity}"),
        json_body={"body": _comment_body(ctx, write, extra)},
    )
    return identity, _placement_representation(extra)


def delete_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if identity.startswith("comment-"):
        ctx.client.write(
            "DELETE", ctx.path(f"/issues/comments/{identity.removeprefix('comment-')}")
        )
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
