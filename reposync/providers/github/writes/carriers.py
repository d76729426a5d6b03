"""Issue carriers: what GitHub cannot hold as a pull request, held by an issue.

A pull request that cannot be re-created (merged, closed, or its head commit is on no
branch here) becomes a closed-or-open issue under its number whose header keeps every
pull request field; reads present it as the pull request again. Reviews and review
comments on a carrier become issue comments carrying theirs (identities
``comment-<id>``), and so do projected review requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose
from reposync.providers.github import objects as gh
from reposync.providers.github.writes.context import ATTRIBUTED_FIELDS, WriteContext
from reposync.providers.github.writes.issues import issue_fields
from reposync.sync.vocabulary import ObjectType, Representation

#: A carrier issue keeps every pull request field GitHub's issue cannot.
CARRIER_FIELDS = (
    "author",
    "created_at",
    "closed_at",
    "assignees",
    "merged",
    "merged_at",
    "draft",
    "base_ref",
    "base_sha",
    "head_ref",
    "head_sha",
)


def kind(ctx: WriteContext, number: int) -> str:
    """What number ``number`` is on GitHub: ``pull``, ``carrier`` or ``issue`` (what the
    batch created it as, else read once)."""
    if number not in ctx.kinds:
        data = ctx.client.get(ctx.path(f"/issues/{number}"))
        ctx.kinds[number] = (
            "pull" if "pull_request" in data else "carrier" if gh.is_carrier(data) else "issue"
        )
    return ctx.kinds[number]


def _carrier_body(ctx: WriteContext, write: TargetWrite) -> str:
    payload = write.payload or {}
    extra = {key: payload.get(key) for key in CARRIER_FIELDS}
    extra[gh.CARRIED_TYPE] = ObjectType.PULL_REQUEST.value
    return ctx.body(write, ObjectType.ISSUE_COMMENT, extra)


def create_carrier(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """A pull request as a carrier issue under its number."""
    payload = write.payload or {}
    fields = {**issue_fields(ctx, payload), "body": _carrier_body(ctx, write)}
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
            "body": _carrier_body(ctx, write),
        },
    )
    return str(number), Representation.PROJECTED


def carried_comment(
    ctx: WriteContext, write: TargetWrite, number: int, kind: ObjectType, extra: Mapping[str, Any]
) -> str:
    """A review or review comment of a carrier, as an issue comment on issue ``number``
    whose header keeps its type and fields (created, or updated in place)."""
    payload = write.payload or {}
    attribution = {key: payload.get(key) for key in ATTRIBUTED_FIELDS[kind]}
    attribution.update(extra)
    attribution[gh.CARRIED_TYPE] = kind.value
    body = compose(
        payload.get("body") or "",
        marker=write.marker,
        attribution=attribution,
        source_label=ctx.source_label(write),
    )
    if write.target_identity:
        comment_id = write.target_identity.removeprefix("comment-")
        ctx.client.write(
            "PATCH", ctx.path(f"/issues/comments/{comment_id}"), json_body={"body": body}
        )
        return write.target_identity
    created = ctx.client.write(
        "POST", ctx.path(f"/issues/{number}/comments"), json_body={"body": body}
    )
    return f"comment-{created['id']}"
