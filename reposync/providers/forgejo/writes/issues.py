"""Issues and their comments on Forgejo.

An issue keeps its source number (``forge.numbers``) and is created in its state in one
request (``closed``). Authorship and times travel in the attributed header, except the
author of a person the instance's map names, whose own account writes it (``Sudo``).
Forgejo 11's API cannot lock a conversation: a locked one keeps its lock in the header
(``lock_in_header``). Labels of an existing issue are set in a request of their own
(Forgejo's issue edit takes none), and only when they change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forgejo.writes.context import Handlers, WriteContext, number
from reposync.sync.vocabulary import Action, ObjectType, Representation


def issue_fields(ctx: WriteContext, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Title, labels (ids) and milestone (id), as Forgejo's create endpoints take them."""
    fields: dict[str, Any] = {
        "title": payload["title"],
        "labels": ctx.label_ids(sorted(payload.get("labels") or [])),
    }
    milestone = ctx.milestone_id(payload.get("milestone"))
    if milestone is not None:
        fields["milestone"] = milestone
    return fields


def lock_extra(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The header's lock fields: only a locked conversation has them (an unlocked one
    reads Forgejo's own lock, which a person may set on the instance)."""
    if not payload.get("locked"):
        return {}
    return {"locked": True, "active_lock_reason": payload.get("active_lock_reason")}


def issue_representation(payload: Mapping[str, Any]) -> Representation:
    return Representation.LOCK_IN_HEADER if payload.get("locked") else Representation.ATTRIBUTED


def create_issue(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    fields = issue_fields(ctx, payload)
    fields["closed"] = payload.get("state") == "closed"
    slot = ctx.numbers.slot(write.number)
    if slot is not None:  # a placeholder taken over stays the token's: author in the header
        fields["body"] = ctx.body(write, ObjectType.ISSUE, extra=lock_extra(payload))
        ctx.space.reopen_as(slot, fields)
        created = slot
    else:

        def send(account: str | None) -> int:
            body = ctx.body(write, ObjectType.ISSUE, account=account, extra=lock_extra(payload))
            return ctx.space.create_issue({**fields, "body": body}, sudo=account)

        created = ctx.authored(write, send)
        ctx.numbers.created(created)
    ctx.kinds[created] = "issue"
    return str(created), issue_representation(payload)


def poster_account(ctx: WriteContext, current: Mapping[str, Any], write: TargetWrite) -> str | None:
    """The account that wrote the object on Forgejo when it is the author's own (so the
    header needs no author), else ``None``."""
    account = ctx.acting_as(write)
    login = (current.get("user") or {}).get("login")
    return account if account is not None and str(login).casefold() == account.casefold() else None


def set_labels(
    ctx: WriteContext, number: int, current: Mapping[str, Any], names: list[str]
) -> None:
    """Replace an issue's labels when they differ from ``current``'s."""
    if sorted(lb["name"] for lb in current.get("labels") or []) == sorted(names):
        return
    path = ctx.path(f"/issues/{number}/labels")
    if names:
        ctx.client.write("PUT", path, json_body={"labels": ctx.label_ids(sorted(names))})
    else:
        ctx.client.write("DELETE", path)


def update_issue(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    payload = write.payload or {}
    issue = number(write.target_identity, ctx.forge)
    current = ctx.reader.issue_json(issue)
    body: dict[str, Any] = {
        "title": payload["title"],
        "body": ctx.body(
            write,
            ObjectType.ISSUE,
            account=poster_account(ctx, current, write),
            extra=lock_extra(payload),
        ),
        "state": payload["state"],
        "milestone": ctx.milestone_id(payload.get("milestone")) or 0,
    }
    ctx.client.write("PATCH", ctx.path(f"/issues/{issue}"), json_body=body)
    set_labels(ctx, issue, current, list(payload.get("labels") or []))
    return str(issue), issue_representation(payload)


# -- comments ---------------------------------------------------------------------------


def create_issue_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    parent = number(ctx.parent(write), ctx.forge)

    def send(account: str | None) -> Any:
        return ctx.client.write(
            "POST",
            ctx.path(f"/issues/{parent}/comments"),
            json_body={"body": ctx.body(write, ObjectType.ISSUE_COMMENT, account=account)},
            sudo=account,
        )

    created = ctx.authored(write, send)
    return str(created["id"]), Representation.ATTRIBUTED


def update_issue_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    identity = write.target_identity or ""
    current = ctx.reader.comment_json(identity)
    account = poster_account(ctx, current, write)
    ctx.client.write(
        "PATCH",
        ctx.path(f"/issues/comments/{identity}"),
        json_body={"body": ctx.body(write, ObjectType.ISSUE_COMMENT, account=account)},
    )
    return identity, Representation.ATTRIBUTED


def delete_issue_comment(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.delete_comment(write.target_identity or "")
    return write.target_identity or "", None


#: No delete: deleting an issue needs the repository's administrator on Forgejo and
#: frees no number; reposync leaves it to people, as on GitHub.
HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.ISSUE): create_issue,
    (Action.UPDATE, ObjectType.ISSUE): update_issue,
    (Action.CREATE, ObjectType.ISSUE_COMMENT): create_issue_comment,
    (Action.UPDATE, ObjectType.ISSUE_COMMENT): update_issue_comment,
    (Action.DELETE, ObjectType.ISSUE_COMMENT): delete_issue_comment,
}
