"""Issue carriers on Forgejo: what Forgejo cannot hold as a pull request, held by an issue.

The rules (which fields a carrier keeps, how comments carry reviews, review comments
and review requests, ``comment-<id>`` identities) are ``forge.carriers``'; here are
Forgejo's requests: a carrier is an issue under the pull request's number (a placeholder
taken over, when the number was kept free for it: Forgejo cannot turn an issue into a
pull request), and what it carries are issue comments on it.
"""

from __future__ import annotations

from reposync.providers.base import TargetWrite
from reposync.providers.forge.carriers import (
    carrier_body,
)
from reposync.providers.forgejo import objects as fj
from reposync.providers.forgejo.writes.context import WriteContext
from reposync.providers.forgejo.writes.issues import issue_fields, set_labels
from reposync.sync.vocabulary import Representation


def kind(ctx: WriteContext, number: int) -> str:
    """What number ``number`` is on Forgejo: ``pull``, ``carrier`` or ``issue`` (what the
    batch created it as, else read once)."""
    if number not in ctx.kinds:
        data = ctx.reader.issue_json(number)
        ctx.kinds[number] = (
            "pull" if fj.is_pull(data) else "carrier" if fj.is_carrier(data) else "issue"
        )
    return ctx.kinds[number]


def create_carrier(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """A pull request as a carrier issue under its number, in its state."""
    payload = write.payload or {}
    fields = {
        **issue_fields(ctx, payload),
        "body": carrier_body(write, source_label=ctx.source_label(write)),
        "closed": payload.get("state") == "closed",
    }
    slot = ctx.numbers.slot(write.number)
    if slot is not None:
        ctx.space.reopen_as(slot, fields)
        created = slot
    else:
        created = ctx.space.create_issue(fields)
        ctx.numbers.created(created)
    ctx.kinds[created] = "carrier"
    return str(created), Representation.PROJECTED


def update_carrier(
    ctx: WriteContext, write: TargetWrite, number: int
) -> tuple[str, Representation]:
    """A pull request update on the carrier issue that holds it."""
    payload = write.payload or {}
    current = ctx.reader.issue_json(number)
    ctx.client.write(
        "PATCH",
        ctx.path(f"/issues/{number}"),
        json_body={
            "title": payload["title"],
            "state": payload["state"],
            "body": carrier_body(write, source_label=ctx.source_label(write)),
            "milestone": ctx.milestone_id(payload.get("milestone")) or 0,
        },
    )
    set_labels(ctx, number, current, list(payload.get("labels") or []))
    return str(number), Representation.PROJECTED
