"""Issues and their comments on GitHub.

An issue keeps its source number (``forge.numbers``); authorship and times travel in the
attributed header; the conversation lock is GitHub's own (lock/unlock), set after the
issue is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.github.writes.context import Handlers, WriteContext, number
from reposync.providers.github.writes.labels import labels_on_github
from reposync.providers.github.writes.milestones import milestone_number
from reposync.sync.vocabulary import Action, ObjectType, Representation


def issue_fields(ctx: WriteContext, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Title, labels and milestone, as GitHub's issue endpoints take them (pull requests
    too: their labels and milestone are their issue's)."""
    return {
        "title": payload["title"],
        "labels": labels_on_github(ctx, payload.get("labels") or []),
        "milestone": milestone_number(ctx, payload.get("milestone")),
    }


def create_issue(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    fields = {**issue_fields(ctx, payload), "body": ctx.body(write, ObjectType.ISSUE)}
    created = ctx.numbers.take_or_create(write.number, fields)
    close_if(ctx, created, payload)
    lock_as(ctx, created, payload, fresh=True)
    ctx.kinds[created] = "issue"
    return str(created), Representation.ATTRIBUTED


def lock_as(
    ctx: WriteContext,
    number: int,
    payload: Mapping[str, Any],
    *,
    fresh: bool = False,
    current: Mapping[str, Any] | None = None,
) -> None:
    """Locks or unlocks the conversation as the payload has it (PUT/DELETE /lock).

    A ``fresh`` issue (just created, or a placeholder taken over) is unlocked; for any
    other the ``current`` issue JSON (an edit's answer) or a read of it (a conditional
    GET) says whether anything is to do, so an unchanged lock costs no write.
    Another reason is an unlock, then a lock with it (GitHub changes a reason only
    on a locked conversation's lock page, so the API way is both steps).
    """
    want = bool(payload.get("locked"))
    reason = payload.get("active_lock_reason") if want else None
    if fresh and not want:
        return
    if fresh:
        current = {}
    elif current is None or "locked" not in current:
        current = ctx.client.get(ctx.path(f"/issues/{number}"))
    locked = bool(current.get("locked"))
    if locked == want and (not want or current.get("active_lock_reason") == reason):
        return
    path = ctx.path(f"/issues/{number}/lock")
    if locked:
        ctx.client.write("DELETE", path, creates_content=False)
    if want:
        body = {"lock_reason": reason} if reason is not None else None
        ctx.client.write("PUT", path, json_body=body, creates_content=False)


def close_if(ctx: WriteContext, number: int, payload: Mapping[str, Any]) -> None:
    """Close issue ``number`` when the payload is closed (GitHub creates issues open)."""
    if payload.get("state") == "closed":
        body: dict[str, Any] = {"state": "closed"}
        if payload.get("state_reason") in ("completed", "not_planned"):
            body["state_reason"] = payload["state_reason"]
        ctx.client.write("PATCH", ctx.path(f"/issues/{number}"), json_body=body)


def update_issue(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    body: dict[str, Any] = {
        **issue_fields(ctx, payload),
        "body": ctx.body(write, ObjectType.ISSUE),
        "state": payload["state"],
    }
    if payload.get("state_reason") in ("completed", "not_planned", "reopened"):
        body["state_reason"] = payload["state_reason"]
    edited = ctx.client.write("PATCH", ctx.path(f"/issues/{write.target_identity}"), json_body=body)
    lock_as(ctx, int(write.target_identity or 0), payload, current=edited)
    return write.target_identity or "", Representation.ATTRIBUTED


# -- comments ---------------------------------------------------------------------------


def create_issue_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    parent = number(ctx.parent(write))
    created = ctx.client.write(
        "POST",
        ctx.path(f"/issues/{parent}/comments"),
        json_body={"body": ctx.body(write, ObjectType.ISSUE_COMMENT)},
    )
    return str(created["id"]), Representation.ATTRIBUTED


def update_issue_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    ctx.client.write(
        "PATCH",
        ctx.path(f"/issues/comments/{write.target_identity}"),
        json_body={"body": ctx.body(write, ObjectType.ISSUE_COMMENT)},
    )
    return write.target_identity or "", Representation.ATTRIBUTED


def delete_issue_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.delete_comment(write.target_identity or "")
    return write.target_identity or "", None


#: No delete: GitHub's REST API cannot delete an issue.
HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.ISSUE): create_issue,
    (Action.UPDATE, ObjectType.ISSUE): update_issue,
    (Action.CREATE, ObjectType.ISSUE_COMMENT): create_issue_comment,
    (Action.UPDATE, ObjectType.ISSUE_COMMENT): update_issue_comment,
    (Action.DELETE, ObjectType.ISSUE_COMMENT): delete_issue_comment,
}
