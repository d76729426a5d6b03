"""Labels on GitHub: named by their id, written by their name.

A label has no body to carry a marker: a create answered "already exists" is ours
when the existing label holds the same content (a retried create), and a lost create is
found again by name (``markers.find_created``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.github import objects as gh
from reposync.providers.github.writes.context import Handlers, WriteContext
from reposync.sync.canonical import content_hash
from reposync.sync.vocabulary import Action, ObjectType


def label_name(ctx: WriteContext, identity: str) -> str:
    """The name GitHub's label paths take for label ``identity`` (listed once per batch,
    again when a label is not in the list)."""
    if ctx.labels is None or identity not in ctx.labels:
        ctx.labels = {str(lb["id"]): lb["name"] for lb in ctx.client.paginate(ctx.path("/labels"))}
    if identity not in ctx.labels:
        raise WriteRefused(f"label {identity} is not on GitHub", refusal="not_found", status=404)
    return ctx.labels[identity]


def labels_on_github(ctx: WriteContext, names: Sequence[str]) -> list[str]:
    """``names``, each a label GitHub has (listed once per batch, again when one is not
    in the list); ``dependency_missing`` otherwise. GitHub would create a label an issue
    names that it lacks, with its default colour and no description; the label's own
    create (one that failed, to be tried again) would then find the name taken by other
    content: a conflict of reposync's own making, and a Run requiring attention."""
    wanted = list(names)
    if ctx.labels is None or not set(wanted) <= set(ctx.labels.values()):
        ctx.labels = {str(lb["id"]): lb["name"] for lb in ctx.client.paginate(ctx.path("/labels"))}
    held = set(ctx.labels.values())
    missing = [name for name in wanted if name not in held]
    if missing:
        raise WriteRefused(
            f"label {missing[0]!r} is not on GitHub", refusal="dependency_missing", status=422
        )
    return wanted


def label_by_name(ctx: WriteContext, name: str) -> dict[str, Any] | None:
    try:
        label: dict[str, Any] = ctx.client.get(ctx.path(f"/labels/{quote(name, safe='')}"))
    except Exception:
        return None
    return label


def create_label(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    payload = write.payload or {}
    body = {
        "name": payload["name"],
        "color": payload["color"],
        "description": payload["description"],
    }
    try:
        created = ctx.client.write("POST", ctx.path("/labels"), json_body=body)
    except WriteRefused as refused:
        existing = label_by_name(ctx, payload["name"]) if refused.refusal == "conflict" else None
        if existing is not None and content_hash(gh.label(existing).payload) == content_hash(
            dict(payload)
        ):
            return str(existing["id"]), None  # ours already (a retried create)
        raise
    return str(created["id"]), None


def update_label(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    payload = write.payload or {}
    name = label_name(ctx, write.target_identity or "")
    ctx.client.write(
        "PATCH",
        ctx.path(f"/labels/{quote(name, safe='')}"),
        json_body={
            "new_name": payload["name"],
            "color": payload["color"],
            "description": payload["description"],
        },
    )
    return write.target_identity or "", None


def delete_label(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    name = label_name(ctx, write.target_identity or "")
    ctx.client.write("DELETE", ctx.path(f"/labels/{quote(name, safe='')}"))
    return write.target_identity or "", None


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.LABEL): create_label,
    (Action.UPDATE, ObjectType.LABEL): update_label,
    (Action.DELETE, ObjectType.LABEL): delete_label,
}
