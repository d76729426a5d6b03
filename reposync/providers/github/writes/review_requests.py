"""Review requests on GitHub, projected as comments on their pull request.

GitHub can request a review only from a collaborator of this repository, which the
source's reviewer rarely is: the request is shown as a comment (``projected``). A native
request (identity ``<number>:<login>``) can only be deleted.
"""

from __future__ import annotations

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose
from reposync.providers.github import objects as gh
from reposync.providers.github.writes.context import Handlers, WriteContext, number
from reposync.sync.vocabulary import Action, ObjectType, Representation


def _review_request_comment(ctx: WriteContext, write: TargetWrite, pull: int) -> str:
    """A review request shown as a comment on its pull request (``projected``).

    GitHub can request a review only from a collaborator of this repository, which
    the source's reviewer rarely is; the comment names the reviewer in code (no
    notification goes to a namesake) and its header keeps the canonical payload, so
    reads present the comment as this review request again, never as a comment.
    """
    payload = write.payload or {}
    reviewer = str(payload.get("reviewer") or "")
    when = payload.get("requested_at")
    attribution = {
        gh.CARRIED_TYPE: ObjectType.REVIEW_REQUEST.value,
        "reviewer": reviewer,
        "requested_at": when,
    }
    where = ctx.source_label(write)
    body = compose(
        f"Review requested from `@{reviewer}`{' on ' + when if when else ''}.",
        marker=write.marker,
        attribution=attribution,
        headline="Review request projected by reposync"
        + (f" from {where}" if where else "")
        + ": GitHub requests reviews only from its own collaborators",
    )
    if write.target_identity:
        ctx.client.write(
            "PATCH",
            ctx.path(f"/issues/comments/{write.target_identity.removeprefix('comment-')}"),
            json_body={"body": body},
        )
        return write.target_identity
    created = ctx.client.write(
        "POST", ctx.path(f"/issues/{pull}/comments"), json_body={"body": body}
    )
    return f"comment-{created['id']}"


def create_review_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    pull = number(ctx.parent(write))
    return _review_request_comment(ctx, write, pull), Representation.PROJECTED


def update_review_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if not identity.startswith("comment-"):
        # A native request has nothing to update (GitHub keeps no request time).
        raise WriteRefused(
            f"review request {identity} is native on GitHub and cannot change",
            refusal="unsupported",
            status=422,
        )
    return _review_request_comment(ctx, write, 0), Representation.PROJECTED


def delete_review_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if identity.startswith("comment-"):
        ctx.client.write(
            "DELETE", ctx.path(f"/issues/comments/{identity.removeprefix('comment-')}")
        )
    else:
        pull, _, login = identity.partition(":")
        ctx.client.write(
            "DELETE",
            ctx.path(f"/pulls/{pull}/requested_reviewers"),
            json_body={"reviewers": [login]},
        )
    return identity, None


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.REVIEW_REQUEST): create_review_request,
    (Action.UPDATE, ObjectType.REVIEW_REQUEST): update_review_request,
    (Action.DELETE, ObjectType.REVIEW_REQUEST): delete_review_request,
}
