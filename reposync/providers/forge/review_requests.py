"""Review requests a forge cannot make, projected as comments on their pull request.

A forge requests a review only from an account of its own with access to the
repository, which the source's reviewer rarely is. The request is shown as a comment
(``projected``) naming the reviewer in code (no notification goes to a namesake),
whose header keeps the canonical payload, so reads present the comment as this review
request again (``carriers.carried_object``), never as a comment. A native request
(identity ``<number>:<login>``, made on the forge by a person) can only be withdrawn.

``HANDLERS`` write them on any forge whose batch context sends the requests
``ReviewRequestWrites`` names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.attribution import parent_number
from reposync.providers.forge.bodies import compose
from reposync.providers.forge.carriers import (
    CARRIED_TYPE,
    CommentRequests,
    comment_id,
    is_carried,
    put_comment,
)
from reposync.sync.vocabulary import Action, ObjectType, Representation


class ReviewRequestWrites(CommentRequests, Protocol):
    """What the handlers need of a forge's batch context: its name, a write's parent,
    its comment requests, and withdrawing a native request."""

    forge: str

    def parent(self, write: TargetWrite) -> str | None:
        """The target identity of the write's pull request."""

    def withdraw_review_request(self, pull: str, login: str) -> None:
        """Withdraws the native request of ``login``'s review on pull request ``pull``."""


def review_request_body(write: TargetWrite, *, source_label: str | None, forge: str) -> str:
    """The comment that shows review request ``write`` on ``forge`` (its name, as the
    comment's visible line says why the request is a comment)."""
    payload = write.payload or {}
    reviewer = str(payload.get("reviewer") or "")
    when = payload.get("requested_at")
    attribution = {
        CARRIED_TYPE: ObjectType.REVIEW_REQUEST.value,
        "reviewer": reviewer,
        "requested_at": when,
    }
    return compose(
        f"Review requested from `@{reviewer}`{' on ' + when if when else ''}.",
        marker=write.marker,
        attribution=attribution,
        headline="Review request projected by reposync"
        + (f" from {source_label}" if source_label else "")
        + f": {forge} requests reviews only from its own collaborators",
    )


def create_review_request(
    ctx: ReviewRequestWrites, write: TargetWrite
) -> tuple[str, Representation]:
    pull = parent_number(ctx.parent(write), ctx.forge)
    body = review_request_body(write, source_label=ctx.source_label(write), forge=ctx.forge)
    return put_comment(ctx, write, pull, body), Representation.PROJECTED


def update_review_request(
    ctx: ReviewRequestWrites, write: TargetWrite
) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if not is_carried(identity):
        # A native request has nothing to update (GitHub keeps no request time).
        raise WriteRefused(
            f"review request {identity} is native on {ctx.forge} and cannot change",
            refusal="unsupported",
            status=422,
        )
    body = review_request_body(write, source_label=ctx.source_label(write), forge=ctx.forge)
    return put_comment(ctx, write, 0, body), Representation.PROJECTED


def delete_review_request(ctx: ReviewRequestWrites, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if is_carried(identity):
        ctx.delete_comment(comment_id(identity))
    else:
        pull, _, login = identity.partition(":")
        ctx.withdraw_review_request(pull, login)
    return identity, None


#: A review request's writes, on every forge that projects them.
HANDLERS: Mapping[
    tuple[Action, ObjectType],
    Callable[[ReviewRequestWrites, TargetWrite], tuple[str, Representation | None]],
] = {
    (Action.CREATE, ObjectType.REVIEW_REQUEST): create_review_request,
    (Action.UPDATE, ObjectType.REVIEW_REQUEST): update_review_request,
    (Action.DELETE, ObjectType.REVIEW_REQUEST): delete_review_request,
}
