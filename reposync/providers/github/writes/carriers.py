"""Issue carriers on GitHub: what GitHub cannot hold as a pull request, held by an issue.

The rules (which fields a carrier keeps, how comments carry reviews and review
comments, ``comment-<id>`` identities) are ``forge.carriers``'; here are GitHub's
requests: a carrier is an issue under the pull request's number, and what it carries
are issue comments on it.
"""

from __future__ import annotations

from reposync.providers.base import TargetWrite

# Re-exported: GitHub's carrier issues keep exactly these fields.
from reposync.providers.forge.carriers import CARRIER_FIELDS as CARRIER_FIELDS
from reposync.providers.forge.carriers import (
    carrier_body,
)
from reposync.providers.github import objects as gh
from reposync.providers.github.writes.context import WriteContext
from reposync.providers.github.writes.issues import issue_fields
from reposync.sync.vocabulary import Representation


def kind(ctx: WriteContext, number: int) -> str:
    """What number ``number`` is on GitHub: ``pull``, ``carrier`` or ``issue`` (what the
    batch created it as, else read once)."""
    if number not in ctx.kinds:
        data = ctx.client.get(ctx.path(f"/issues/{number}"))
        ctx.kinds[number] = (
            "pull" if "pull_request" in data else "carrier" if gh.is_carrier(data) else "issue"
        )
    return ctx.kinds[number]


def create_carrier(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """A pull request as a carrier issue under its number."""
    payload = write.payload or {}
    fields = {
        **issue_fields(ctx, payload),
        "body": carrier_body(write, source_label=ctx.source_label(write)),
    }
    number = ctx.numbers.take_or_create(write.number, fields)
    if payload.get("state") == "closed":
        ctx.client.write("PATCH", ctx.path(f"/issues/{number}"), json_body={"state": "closed"})
    ctx.kinds[number] = "carrier"
    return str(number), Representation.PROJECTED


def update_carrier(
    ctx: WriteContext, write: TargetWrite, number: int
) -> tuple[str, Representation]:
    """A pull request update on the carrier issue that holds it."""
    payload = write.payload or {}
    ctx.client.write(
        "PATCH",
        ctx.path(f"/issues/{number}"),
        json_body={
            **issue_fields(ctx, payload),
            "state": payload["state"],
            "body": carrier_body(write, source_label=ctx.source_label(write)),
        },
    )
    return str(number), Representation.PROJECTED
