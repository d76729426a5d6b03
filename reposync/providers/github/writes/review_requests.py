"""Review requests on GitHub, projected as comments on their pull request.

GitHub can request a review only from a collaborator of this repository, which the
source's reviewer rarely is: the request is shown as a comment (``projected``, as
``forge.review_requests`` writes it). A native request (identity ``<number>:<login>``)
can only be deleted.
"""

from __future__ import annotations

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.carriers import comment_id, comment_identity, is_carried
from reposync.providers.forge.review_requests import review_request_body
from reposync.providers.github.writes.context import FORGE, Handlers, WriteContext, number
from reposync.sync.vocabulary import Action, ObjectType, Representation


def _review_request_comment(ctx: WriteContext, write: TargetWrite, pull: int) -> str:
    """A review request shown as a comment on its pull request (``projected``: see
    ``forge.review_requests``), created or edited in place."""
    body = review_request_body(write, source_label=ctx.source_label(write), forge=FORGE)
    if write.target_identity:
        ctx.client.write(
            "PATCH",
            ctx.path(f"/issues/comments/{comment_id(write.target_identity)}"),
            json_body={"body": body},
        )
        return write.target_identity
    created = ctx.client.write(
        "POST", ctx.path(f"/issues/{pull}/comments"), json_body={"body": body}
    )
    return comment_identity(created["id"])


def create_review_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    pull = number(ctx.parent(write))
    return _review_request_comment(ctx, write, pull), Representation.PROJECTED


def update_review_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    if not is_carried(identity):
        # A native request has nothing to update (GitHub keeps no request time).
        raise WriteRefused(
            f"review request {identity} is native on GitHub and cannot change",
            refusal="unsupported",
            status=422,
        )
    return _review_request_comment(ctx, write, 0), Representation.PROJECTED


def delete_review_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    if is_carried(identity):
        ctx.client.write("DELETE", ctx.path(f"/issues/comments/{comment_id(identity)}"))
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
