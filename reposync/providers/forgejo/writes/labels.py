"""Labels and milestones on Forgejo: named by their ids, found again by name and title.

Neither has a body to carry a marker: a lost create is found again by its natural key
(``markers.find_created``). Forgejo keeps a milestone's due time to the second, as the
API gives it; its API cannot clear one once set (a milestone without one is refused
``unsupported``, as on GitHub).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forgejo.writes.context import Handlers, WriteContext
from reposync.sync.vocabulary import Action, ObjectType


def _label_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": payload["name"],
        "color": f"#{payload['color']}",
        "description": payload["description"],
    }


def create_label(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    created = ctx.client.write(
        "POST", ctx.path("/labels"), json_body=_label_body(write.payload or {})
    )
    ctx.labels = None  # names the batch listed may have changed
    return str(created["id"]), None


def update_label(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write(
        "PATCH",
        ctx.path(f"/labels/{write.target_identity}"),
        json_body=_label_body(write.payload or {}),
    )
    ctx.labels = None
    return write.target_identity or "", None


def delete_label(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write("DELETE", ctx.path(f"/labels/{write.target_identity}"))
    ctx.labels = None
    return write.target_identity or "", None


def _milestone_body(payload: Mapping[str, Any]) -> dict[str, Any]:
    body = {
        "title": payload["title"],
        "description": payload["description"],
        "state": payload["state"],
    }
    if payload.get("due_on"):
        body["due_on"] = payload["due_on"]
    return body


def create_milestone(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    created = ctx.client.write(
        "POST", ctx.path("/milestones"), json_body=_milestone_body(write.payload or {})
    )
    ctx.milestones = None
    return str(created["id"]), None


def update_milestone(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    if (write.payload or {}).get("due_on") is None:
        current = ctx.reader.raw(f"/milestones/{write.target_identity}")
        if current.get("due_on"):
            raise WriteRefused(
                f"{ctx.forge}'s API cannot clear a milestone's due date; clear it on {ctx.forge}",
                refusal="unsupported",
                status=422,
            )
    ctx.client.write(
        "PATCH",
        ctx.path(f"/milestones/{write.target_identity}"),
        json_body=_milestone_body(write.payload or {}),
    )
    ctx.milestones = None
    return write.target_identity or "", None


def delete_milestone(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write("DELETE", ctx.path(f"/milestones/{write.target_identity}"))
    ctx.milestones = None
    return write.target_identity or "", None


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.LABEL): create_label,
    (Action.UPDATE, ObjectType.LABEL): update_label,
    (Action.DELETE, ObjectType.LABEL): delete_label,
    (Action.CREATE, ObjectType.MILESTONE): create_milestone,
    (Action.UPDATE, ObjectType.MILESTONE): update_milestone,
    (Action.DELETE, ObjectType.MILESTONE): delete_milestone,
}
