"""Pull requests on Forgejo: opened natively where Forgejo can hold them, else carried.

A pull request is opened on its head branch, or on the shadow branch the refs phase
pushed for it, when that branch is at its head commit and its number is free to take;
otherwise (merged, closed, its head commit on no branch, its number kept by a
placeholder Forgejo cannot turn into a pull request, or Forgejo refuses it) it becomes a
carrier issue (``carriers``). Either way it keeps its source number (``forge.numbers``).
Forgejo's API sets no draft flag: a draft keeps it in the header.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from reposync.errors import Conflict, ObjectNotFound, WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.carriers import native_head
from reposync.providers.forgejo.writes.carriers import create_carrier, kind, update_carrier
from reposync.providers.forgejo.writes.context import Handlers, WriteContext, number
from reposync.providers.forgejo.writes.issues import issue_fields, poster_account
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)


def _branch_refs(ctx: WriteContext, branch: str) -> Any:
    """Forgejo's refs under ``refs/heads/<branch>`` (none: no such ref, or an empty
    repository), for ``forge.carriers.native_head``."""
    try:
        return ctx.client.get(ctx.path(f"/git/refs/heads/{quote(branch, safe='/')}"))
    except (ObjectNotFound, Conflict):
        return None


def create_pull_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    head = native_head(write, lambda branch: _branch_refs(ctx, branch))
    if head is None or ctx.numbers.slot(write.number) is not None:
        return create_carrier(ctx, write)
    request: dict[str, Any] = {
        **issue_fields(ctx, payload),
        "head": head,
        "base": payload["base_ref"],
    }

    def send(account: str | None) -> Any:
        body = ctx.body(write, ObjectType.PULL_REQUEST, account=account)
        return ctx.client.write(
            "POST", ctx.path("/pulls"), json_body={**request, "body": body}, sudo=account
        )

    try:
        created = ctx.authored(write, send)
    except WriteRefused as refused:
        if refused.status not in (409, 422):
            raise
        # Forgejo validates what the branch check cannot see (no commits between the
        # branches, a pull request already open on them); nothing was created: carry it.
        log.info("pull request #%s cannot be opened natively: %s", write.number, refused)
        return create_carrier(ctx, write)
    opened = int(created["number"])
    ctx.numbers.created(opened)
    ctx.kinds[opened] = "pull"
    return str(opened), Representation.ATTRIBUTED


def update_pull_request(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    pull = number(write.target_identity, ctx.forge)
    if kind(ctx, pull) == "carrier":
        return update_carrier(ctx, write, pull)
    current = ctx.reader.issue_json(pull)
    ctx.client.write(
        "PATCH",
        ctx.path(f"/pulls/{pull}"),
        json_body={
            **issue_fields(ctx, payload),
            "milestone": ctx.milestone_id(payload.get("milestone")) or 0,
            "body": ctx.body(
                write, ObjectType.PULL_REQUEST, account=poster_account(ctx, current, write)
            ),
            "state": payload["state"],
            "base": payload["base_ref"],
        },
    )
    return str(pull), Representation.ATTRIBUTED


#: No delete: deleting a pull request needs the repository's administrator on Forgejo.
HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.PULL_REQUEST): create_pull_request,
    (Action.UPDATE, ObjectType.PULL_REQUEST): update_pull_request,
}
