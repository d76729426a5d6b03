"""Pull requests on GitHub: opened natively where GitHub can hold them, else carried.

A pull request is opened on its head branch, or on the shadow branch the refs phase
pushed for it, when that branch is at its head commit; otherwise (merged, closed, or
GitHub refuses it) it becomes a carrier issue (``carriers``). Either way it keeps its
source number (``forge.numbers``).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from reposync.errors import Conflict, ObjectNotFound, WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.carriers import native_head
from reposync.providers.github.writes.carriers import create_carrier, kind, update_carrier
from reposync.providers.github.writes.context import Handlers, WriteContext, number
from reposync.providers.github.writes.issues import issue_fields
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)


def _branch_refs(ctx: WriteContext, branch: str) -> Any:
    """GitHub's refs whose name starts with ``refs/heads/<branch>`` (none: no such ref,
    or an empty repository), for ``forge.carriers.native_head``."""
    try:
        return ctx.client.get(ctx.path(f"/git/matching-refs/heads/{quote(branch, safe='/')}"))
    except (ObjectNotFound, Conflict):
        return None


def create_pull_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    head = native_head(write, lambda branch: _branch_refs(ctx, branch))
    if head is None:
        return create_carrier(ctx, write)
    slot = ctx.numbers.slot(write.number)
    body = ctx.body(write, ObjectType.PULL_REQUEST)
    request: dict[str, Any] = {
        "head": head,
        "base": payload["base_ref"],
        "draft": bool(payload.get("draft")),
    }
    if slot is not None:
        request["issue"] = slot
    else:
        request.update(title=payload["title"], body=body)
    try:
        created = ctx.client.write("POST", ctx.path("/pulls"), json_body=request)
    except WriteRefused as refused:
        if refused.status != 422:
            raise
        # GitHub validates what the branch check cannot see ("No commits between",
        # a pull request already open on the head); nothing was created: carry it.
        log.info("pull request #%s cannot be opened natively: %s", write.number, refused)
        return create_carrier(ctx, write)
    opened = int(created["number"])
    ctx.numbers.created(opened)
    if slot is not None:
        ctx.client.write(
            "PATCH",
            ctx.path(f"/pulls/{opened}"),
            json_body={"title": payload["title"], "body": body},
        )
    extra = issue_fields(ctx, payload)
    del extra["title"]
    if extra["labels"] or extra["milestone"] is not None:
        ctx.client.write("PATCH", ctx.path(f"/issues/{opened}"), json_body=extra)
    ctx.kinds[opened] = "pull"
    return str(opened), Representation.ATTRIBUTED


def update_pull_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    pull = number(write.target_identity)
    if kind(ctx, pull) == "carrier":
        return update_carrier(ctx, write, pull)
    ctx.client.write(
        "PATCH",
        ctx.path(f"/pulls/{pull}"),
        json_body={
            "title": payload["title"],
            "body": ctx.body(write, ObjectType.PULL_REQUEST),
            "state": payload["state"],
            "base": payload["base_ref"],
        },
    )
    fields = issue_fields(ctx, payload)
    del fields["title"]
    ctx.client.write("PATCH", ctx.path(f"/issues/{pull}"), json_body=fields)
    return str(pull), Representation.ATTRIBUTED


#: No delete: GitHub's REST API cannot delete a pull request.
HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.PULL_REQUEST): create_pull_request,
    (Action.UPDATE, ObjectType.PULL_REQUEST): update_pull_request,
}
