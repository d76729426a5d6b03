"""Releases and their assets on GitHub.

Asset bytes are streamed to GitHub's uploads host. An asset has no body to carry a
marker: a lost upload is found again by its source name (``asset_named``), and an
upload whose name is already there with the same digest is ours (a retried upload).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.github import shapes
from reposync.providers.github.writes.context import Handlers, WriteContext
from reposync.sync.vocabulary import Action, ObjectType, Representation


def _release_body(ctx: WriteContext, write: TargetWrite) -> dict[str, Any]:
    payload = write.payload or {}
    return {
        "tag_name": payload["tag"],
        "name": payload["name"],
        "body": ctx.body(write, ObjectType.RELEASE),
        "draft": bool(payload["draft"]),
        "prerelease": bool(payload["prerelease"]),
    }


def create_release(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    created = ctx.client.write("POST", ctx.path("/releases"), json_body=_release_body(ctx, write))
    return str(created["id"]), Representation.ATTRIBUTED


def update_release(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    ctx.client.write(
        "PATCH",
        ctx.path(f"/releases/{write.target_identity}"),
        json_body=_release_body(ctx, write),
    )
    return write.target_identity or "", Representation.ATTRIBUTED


def delete_release(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write("DELETE", ctx.path(f"/releases/{write.target_identity}"))
    return write.target_identity or "", None


# -- assets -----------------------------------------------------------------------------


def asset_representation(payload: Mapping[str, Any]) -> Representation | None:
    """``renamed`` when GitHub rewrites the asset's name (``shapes``)."""
    name = str(payload.get("name") or "")
    return Representation.RENAMED if shapes.asset_name(name) != name else None


def create_release_asset(
    ctx: WriteContext, write: TargetWrite
) -> tuple[str, Representation | None]:
    """Uploads under the source's name. A name GitHub rewrites (``shapes``) is sent as
    the label too, which GitHub keeps verbatim and reads give back as the name
    (``renamed``); should GitHub rename one this model did not foresee, the label is
    set afterwards."""
    payload = write.payload or {}
    name = str(payload["name"])
    release, content = ctx.upload(write)
    existing = asset_named(ctx, release, name)
    if existing is not None:
        if str(existing.get("digest")) == f"sha256:{payload['sha256']}":
            # ours already (a retried upload)
            return str(existing["id"]), asset_representation(payload)
        raise WriteRefused(
            f"release {release} already has an asset {name!r} with other content",
            refusal="conflict",
            status=422,
        )
    params = {"name": name}
    if shapes.asset_name(name) != name:
        params["label"] = name
    url = f"{ctx.uploads_url}/repos/{ctx.repo}/releases/{release}/assets"
    with content() as stream:
        created = ctx.client.write(
            "POST",
            url,
            data=stream,
            params=params,
            headers={
                "Content-Type": payload["content_type"],
                "Content-Length": str(payload["size"]),
            },
        )
    if created.get("name") == name:
        return str(created["id"]), None
    if created.get("label") != name:
        ctx.client.write(
            "PATCH",
            ctx.path(f"/releases/assets/{created['id']}"),
            json_body={"label": name},
            creates_content=False,
        )
    return str(created["id"]), Representation.RENAMED


def asset_named(ctx: WriteContext, release: str, name: str) -> dict[str, Any] | None:
    """The release's asset whose source name is ``name`` (GitHub's, or its label's
    when GitHub renamed it)."""
    asset: dict[str, Any]
    for asset in ctx.client.paginate(ctx.path(f"/releases/{release}/assets")):
        if shapes.original_asset_name(asset["name"], asset.get("label")) == name:
            return asset
    return None


def update_release_asset(
    ctx: WriteContext, write: TargetWrite
) -> tuple[str, Representation | None]:
    """New bytes are a new upload: GitHub cannot replace an asset's content."""
    delete_release_asset(ctx, write)
    return create_release_asset(ctx, replace(write, target_identity=None))


def delete_release_asset(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write("DELETE", ctx.path(f"/releases/assets/{write.target_identity}"))
    return write.target_identity or "", None


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.RELEASE): create_release,
    (Action.UPDATE, ObjectType.RELEASE): update_release,
    (Action.DELETE, ObjectType.RELEASE): delete_release,
    (Action.CREATE, ObjectType.RELEASE_ASSET): create_release_asset,
    (Action.UPDATE, ObjectType.RELEASE_ASSET): update_release_asset,
    (Action.DELETE, ObjectType.RELEASE_ASSET): delete_release_asset,
}
