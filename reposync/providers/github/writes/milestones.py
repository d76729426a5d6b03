"""Milestones on GitHub: named by their number, found again by their title.

A milestone has no body to carry a marker: a create answered "already exists" is ours
when a milestone of that title holds the same content (a retried create), and a lost
create is found again by title (``markers.find_created``). GitHub keeps a due date's day
only; a due time it cannot keep travels in a header of the description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.errors import ObjectNotFound, WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose
from reposync.providers.github import objects as gh
from reposync.providers.github import shapes
from reposync.providers.github.writes.context import Handlers, WriteContext
from reposync.sync.canonical import content_hash
from reposync.sync.vocabulary import Action, ObjectType, Representation


def milestone_number(ctx: WriteContext, title: str | None) -> int | None:
    """The number of the milestone titled ``title`` (what issues and pull requests name),
    from a listing read once per batch; ``dependency_missing`` when there is none."""
    if title is None:
        return None
    if ctx.milestones is None:
        ctx.milestones = {
            m["title"]: m["number"]
            for m in ctx.client.paginate(ctx.path("/milestones"), {"state": "all"})
        }
    if title not in ctx.milestones:
        raise WriteRefused(
            f"milestone {title!r} is not on GitHub", refusal="dependency_missing", status=422
        )
    return ctx.milestones[title]


def milestone_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A due time GitHub cannot keep (it keeps the day: ``shapes``) is sent as is (GitHub
    takes its day) and kept exactly in a header of the description."""
    due = payload.get("due_on")
    description = payload["description"]
    if not shapes.keeps_due(due):
        description = compose(
            description,
            marker=None,
            attribution={"due_on": due},
            headline=f"Due {due} on the source; GitHub keeps the day only",
        )
    body = {"title": payload["title"], "state": payload["state"], "description": description}
    if due:
        body["due_on"] = due
    return body


def milestone_representation(payload: Mapping[str, Any]) -> Representation | None:
    return None if shapes.keeps_due(payload.get("due_on")) else Representation.DUE_DAY_ONLY


def create_milestone(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation | None]:
    payload = write.payload or {}
    try:
        created = ctx.client.write(
            "POST", ctx.path("/milestones"), json_body=milestone_body(payload)
        )
    except WriteRefused as refused:
        if refused.refusal != "conflict":
            raise
        for existing in ctx.client.paginate(ctx.path("/milestones"), {"state": "all"}):
            if existing["title"] == payload["title"] and gh.milestone(
                existing
            ).content_hash == content_hash(dict(payload)):
                return str(existing["number"]), milestone_representation(payload)
        raise
    return str(created["number"]), milestone_representation(payload)


def update_milestone(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation | None]:
    if (write.payload or {}).get("due_on") is None:
        try:
            current = ctx.client.get(ctx.path(f"/milestones/{write.target_identity}"))
        except ObjectNotFound as exc:
            raise WriteRefused(str(exc), refusal="not_found", status=404) from exc
        if current.get("due_on"):
            raise WriteRefused(
                "GitHub's API cannot clear a milestone's due date; clear it on GitHub",
                refusal="unsupported",
                status=422,
            )
    ctx.client.write(
        "PATCH",
        ctx.path(f"/milestones/{write.target_identity}"),
        json_body=milestone_body(write.payload or {}),
    )
    return write.target_identity or "", milestone_representation(write.payload or {})


def delete_milestone(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write("DELETE", ctx.path(f"/milestones/{write.target_identity}"))
    return write.target_identity or "", None


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.MILESTONE): create_milestone,
    (Action.UPDATE, ObjectType.MILESTONE): update_milestone,
    (Action.DELETE, ObjectType.MILESTONE): delete_milestone,
}
