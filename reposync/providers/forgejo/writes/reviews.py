"""Reviews and review comments on Forgejo.

A review is created and submitted in one request; its line comments follow one by one,
each added to the review it names (Forgejo keeps a comment added alone there, so no
``NestedCreator`` is needed: each comment is its own item and its own write). Written by
the sync's own account, a review is a comment: Forgejo would count an approval, or block
merging on a change request, of the sync's (``state_as_comment``; the header keeps the
source's state). Written as the reviewer's own account (``Sudo``), an approval or a
change request is given natively, unless Forgejo refuses it (a reviewer approving their
own pull request), and then it is a comment too. A dismissal or a draft is never given.

Forgejo's review comments keep no reply link: a reply is posted at its own line (the
line of the comment it answers), where Forgejo threads comments by position, and the
header names the comment answered (``reply_by_line``); a reply to a comment deleted on
the source says so (``detached_reply``). A comment on no line, or on a review carried by
an issue, is an issue comment carrying its fields (``projected``). Forgejo's API edits
neither a submitted review nor a line comment: such updates are refused ``unsupported``.
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
    native_review_identity,
    review_state_notes,
)
from reposync.providers.forgejo import objects as fj
from reposync.providers.forgejo.reads import review_comment_identity
from reposync.providers.forgejo.writes.carriers import kind
from reposync.providers.forgejo.writes.context import Handlers, WriteContext, number
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)

#: Review states Forgejo gives natively to a review written as its reviewer's account.
NATIVE_EVENTS = {"APPROVED": "APPROVED", "CHANGES_REQUESTED": "REQUEST_CHANGES"}


def _notes(ctx: WriteContext) -> dict[str, str]:
    return review_state_notes(ctx.forge)


def _unsupported(ctx: WriteContext, what: str) -> WriteRefused:
    return WriteRefused(f"{ctx.forge}'s API cannot edit {what}", refusal="unsupported", status=422)


# -- reviews ----------------------------------------------------------------------------


def _position(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Where a line comment goes: ``new_position`` (a line of the new file) or
    ``old_position`` (of the old one)."""
    key = "old_position" if payload.get("side") == "LEFT" else "new_position"
    return {key: int(payload["line"])}


def create_review(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """One review, submitted at once (a lost answer is settled by the marker in its
    body). A native state Forgejo refuses is given as a comment instead."""
    pull = number(ctx.parent(write), ctx.forge)
    if kind(ctx, pull) != "pull":
        return (
            carried_comment(ctx, write, pull, ObjectType.REVIEW, {}),
            Representation.PROJECTED,
        )
    payload = write.payload or {}
    given: list[str | None] = []

    def send(account: str | None) -> dict[str, Any]:
        event = NATIVE_EVENTS.get(str(payload.get("state"))) if account else None
        try:
            created = _send_review(ctx, write, pull, account, event)
        except WriteRefused as refused:
            if refused.status != 422 or event is None:
                raise
            log.info("review of #%s refused as %s (%s); sent as a comment", pull, event, refused)
            event = None
            created = _send_review(ctx, write, pull, account, None)
        given.append(event)
        return created

    created = ctx.authored(write, send)
    identity = native_review_identity(pull, created["id"])
    if given[-1] is not None:
        return identity, Representation.ATTRIBUTED
    return identity, forge_reviews.review_representation(write, _notes(ctx))


def _send_review(
    ctx: WriteContext,
    write: TargetWrite,
    pull: int,
    account: str | None,
    event: str | None,
) -> dict[str, Any]:
    """POST the review; ``event`` a native state, ``None``: a comment whose header keeps
    the state (and whose visible line says why it is not given)."""
    payload = write.payload or {}
    if event is None:
        note = _notes(ctx).get(str(payload.get("state")))
        body = ctx.body(write, ObjectType.REVIEW, account=account, note=note)
    else:
        body = ctx.body(write, ObjectType.REVIEW, account=account, omit=("state",))
    request = {"body": body, "event": event or "COMMENT"}
    created: dict[str, Any] = ctx.client.write(
        "POST", ctx.path(f"/pulls/{pull}/reviews"), json_body=request, sudo=account
    )
    return created


def update_review(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if is_carried(identity):
        carrier = number(ctx.parent(write), ctx.forge)
        return (
            carried_comment(ctx, write, carrier, ObjectType.REVIEW, {}),
            Representation.PROJECTED,
        )
    raise _unsupported(ctx, "a submitted review")


def delete_review(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if is_carried(identity):
        ctx.delete_comment(comment_id(identity))
    else:
        pull, _, review = identity.partition("/")
        ctx.client.write("DELETE", ctx.path(f"/pulls/{pull}/reviews/{review}"))
    return identity, None


# -- review comments --------------------------------------------------------------------


def placement(extra: Mapping[str, Any]) -> Representation:
    """How a review comment with placement fields ``extra`` exists on Forgejo."""
    if extra.get("in_reply_to") == GONE_COMMENT:
        return Representation.DETACHED_REPLY
    if extra.get("in_reply_to") is not None:
        return Representation.REPLY_BY_LINE
    return Representation.ATTRIBUTED


def placement_note(extra: Mapping[str, Any], forge: str) -> str | None:
    replied = extra.get("in_reply_to")
    if replied == GONE_COMMENT:
        return "in reply to a comment deleted on the source; shown as a comment of its own"
    if replied is not None:
        return f"in reply to comment {replied}; {forge} threads replies by their line"
    return None


def create_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    review = ctx.parent(write)
    if review is None:
        raise WriteRefused(
            f"the review is not on {ctx.forge} yet", refusal="dependency_missing", status=422
        )
    reply_ref = write.refs.get("in_reply_to")
    reply = ctx.ref(write, "in_reply_to")
    if reply_ref is not None and reply is None and not reply_ref.gone:
        raise WriteRefused(
            f"the comment replied to is not on {ctx.forge}",
            refusal="dependency_missing",
            status=422,
        )
    if is_carried(review) or payload.get("line") is None:
        carrier = _review_pull(ctx, review)
        carried = carried_review_comment_extra(write, review=review, in_reply_to=reply)
        return (
            carried_comment(ctx, write, carrier, ObjectType.REVIEW_COMMENT, carried),
            Representation.PROJECTED,
        )
    pull, _, review_id = review.partition("/")
    extra: dict[str, Any] = {}
    if reply_ref is not None:
        extra["in_reply_to"] = reply if reply is not None else GONE_COMMENT

    def send(account: str | None) -> Any:
        body = ctx.body(
            write,
            ObjectType.REVIEW_COMMENT,
            account=account,
            extra=extra,
            note=placement_note(extra, ctx.forge),
        )
        return ctx.client.write(
            "POST",
            ctx.path(f"/pulls/{pull}/reviews/{review_id}/comments"),
            json_body={"path": payload["path"], "body": body, **_position(payload)},
            sudo=account,
        )

    created = ctx.authored(write, send)
    return review_comment_identity(pull, review_id, created["id"]), placement(extra)


def _review_pull(ctx: WriteContext, review: str) -> int:
    """The pull request of a review: named by a native identity, or the carrier the
    comment carrying it is on."""
    if not is_carried(review):
        return number(review.partition("/")[0], ctx.forge)
    comment = ctx.reader.comment_json(comment_id(review))
    return fj.parent_number(comment)


def update_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if not is_carried(identity):
        raise _unsupported(ctx, "a review's line comment")
    review = ctx.parent(write) or ""
    extra = carried_review_comment_extra(
        write, review=review, in_reply_to=ctx.ref(write, "in_reply_to")
    )
    return (
        carried_comment(ctx, write, 0, ObjectType.REVIEW_COMMENT, extra),
        Representation.PROJECTED,
    )


def delete_review_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if is_carried(identity):
        ctx.delete_comment(comment_id(identity))
    else:
        pull, review, comment = identity.split("/")
        ctx.client.write("DELETE", ctx.path(f"/pulls/{pull}/reviews/{review}/comments/{comment}"))
    return identity, None


def review_representation(ctx: WriteContext, write: TargetWrite) -> Representation:
    """How a review found after a lost answer exists (as its create would have said)."""
    account = ctx.acting_as(write)
    if account and str((write.payload or {}).get("state")) in NATIVE_EVENTS:
        return Representation.ATTRIBUTED
    return forge_reviews.review_representation(write, _notes(ctx))


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.REVIEW): create_review,
    (Action.UPDATE, ObjectType.REVIEW): update_review,
    (Action.DELETE, ObjectType.REVIEW): delete_review,
    (Action.CREATE, ObjectType.REVIEW_COMMENT): create_review_comment,
    (Action.UPDATE, ObjectType.REVIEW_COMMENT): update_review_comment,
    (Action.DELETE, ObjectType.REVIEW_COMMENT): delete_review_comment,
}
