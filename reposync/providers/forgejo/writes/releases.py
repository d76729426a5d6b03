"""Releases and their attachments on Forgejo.

A release's author and times travel in its header (the author's own account writes it
where the map names one). An attachment keeps its name and bytes and nothing else: its
digest is read from the bytes, and a content type other than its name says is kept in
the release's header, by attachment id (``objects.ASSETS``) — one more write, only for
such an attachment. An attachment has no body to carry a marker: a lost upload is found
again by its name in its release, and an upload whose name is already there with the
same bytes is ours (a retried upload). New bytes are a new attachment: Forgejo replaces
none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from reposync.errors import ObjectNotFound, WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose, parse
from reposync.providers.forgejo import objects as fj
from reposync.providers.forgejo.reads import asset_digest
from reposync.providers.forgejo.writes.context import Handlers, WriteContext
from reposync.sync.vocabulary import Action, ObjectType, Representation


def _release_body(
    ctx: WriteContext, write: TargetWrite, assets: Mapping[str, Any], account: str | None
) -> dict[str, Any]:
    payload = write.payload or {}
    extra = {fj.ASSETS: dict(assets)} if assets else None
    return {
        "tag_name": payload["tag"],
        "name": payload["name"],
        "body": ctx.body(write, ObjectType.RELEASE, account=account, extra=extra),
        "draft": bool(payload["draft"]),
        "prerelease": bool(payload["prerelease"]),
    }


def create_release(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    def send(account: str | None) -> Any:
        body = _release_body(ctx, write, {}, account)
        return ctx.client.write("POST", ctx.path("/releases"), json_body=body, sudo=account)

    created = ctx.authored(write, send)
    return str(created["id"]), Representation.ATTRIBUTED


def update_release(ctx: WriteContext, write: TargetWrite) -> tuple[str, Representation]:
    """The release's fields; what its header keeps of its attachments is kept."""
    current = ctx.reader.raw(f"/releases/{write.target_identity}")
    login = str((current.get("author") or {}).get("login") or "").casefold()
    account = ctx.acting_as(write)
    own = account if account is not None and account.casefold() == login else None
    ctx.client.write(
        "PATCH",
        ctx.path(f"/releases/{write.target_identity}"),
        json_body=_release_body(ctx, write, fj.asset_facts(current.get("body")), own),
    )
    return write.target_identity or "", Representation.ATTRIBUTED


def delete_release(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    ctx.client.write("DELETE", ctx.path(f"/releases/{write.target_identity}"))
    return write.target_identity or "", None


# -- attachments ------------------------------------------------------------------------


def create_release_asset(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    payload = write.payload or {}
    name = str(payload["name"])
    release, content = ctx.upload(write)
    existing = asset_named(ctx, release, name)
    if existing is not None:
        if asset_digest(ctx.client, existing, {}) == payload["sha256"]:
            _keep_type(ctx, release, existing, payload)
            return str(existing["id"]), None  # ours already (a retried upload)
        raise WriteRefused(
            f"release {release} already has an attachment {name!r} with other bytes",
            refusal="conflict",
            status=409,
        )
    with content() as stream:
        created = ctx.client.write(
            "POST",
            ctx.path(f"/releases/{release}/assets"),
            data=stream,
            params={"name": name},
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Length": str(payload["size"]),
            },
        )
    _keep_type(ctx, release, created, payload)
    return str(created["id"]), None


def _keep_type(
    ctx: WriteContext, release: str, asset: Mapping[str, Any], payload: Mapping[str, Any]
) -> None:
    """Keep a content type the name does not say in the release's header."""
    wanted = str(payload["content_type"])
    if wanted == fj.guessed_type(str(asset["name"])):
        return
    current = ctx.client.get(ctx.path(f"/releases/{release}"))
    facts = fj.asset_facts(current.get("body"))
    if facts.get(str(asset["id"]), {}).get("content_type") == wanted:
        return
    facts[str(asset["id"])] = {"content_type": wanted}
    parsed = parse(current.get("body"))
    attribution = {**(parsed.attribution or {}), fj.ASSETS: facts}
    body = compose(
        parsed.body,
        marker=parsed.marker,
        attribution=attribution,
        headline=_headline(current.get("body")),
    )
    ctx.client.write("PATCH", ctx.path(f"/releases/{release}"), json_body={"body": body})


def _headline(body: str | None) -> str | None:
    """The visible line of a header, kept as it was written."""
    for line in (body or "").splitlines()[1:2]:
        if line.startswith("> "):
            return line[2:]
    return None


def asset_named(ctx: WriteContext, release: str, name: str) -> dict[str, Any] | None:
    """The release's attachment named ``name``."""
    try:
        assets = ctx.client.get(ctx.path(f"/releases/{release}/assets"))
    except ObjectNotFound:
        return None
    for asset in assets or []:
        if asset.get("name") == name:
            return dict(asset)
    return None


def update_release_asset(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    """New bytes are a new upload: Forgejo cannot replace an attachment's content."""
    delete_release_asset(ctx, write)
    return create_release_asset(ctx, replace(write, target_identity=None))


def delete_release_asset(ctx: WriteContext, write: TargetWrite) -> tuple[str, None]:
    identity = write.target_identity or ""
    release = ctx.parent(write) or _release_of(ctx, identity)
    if release is None:
        raise WriteRefused(
            f"attachment {identity} is in no release", refusal="not_found", status=404
        )
    ctx.client.write("DELETE", ctx.path(f"/releases/{release}/assets/{identity}"))
    return identity, None


def _release_of(ctx: WriteContext, identity: str) -> str | None:
    for release in ctx.client.paginate(ctx.path("/releases")):
        if any(str(a["id"]) == identity for a in release.get("assets") or []):
            return str(release["id"])
    return None


HANDLERS: Handlers = {
    (Action.CREATE, ObjectType.RELEASE): create_release,
    (Action.UPDATE, ObjectType.RELEASE): update_release,
    (Action.DELETE, ObjectType.RELEASE): delete_release,
    (Action.CREATE, ObjectType.RELEASE_ASSET): create_release_asset,
    (Action.UPDATE, ObjectType.RELEASE_ASSET): update_release_asset,
    (Action.DELETE, ObjectType.RELEASE_ASSET): delete_release_asset,
}
