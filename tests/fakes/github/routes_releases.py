"""Releases and release assets (uploads go to the uploads host)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from werkzeug.exceptions import ClientDisconnected

from tests.fakes.github import auth, lookups, render, signed_urls
from tests.fakes.github import webhook_events as hooks
from tests.fakes.github.errors import ApiError, not_found, validation_failed
from tests.fakes.github.models import Asset, Release
from tests.fakes.github.routing import Ctx, Reply, read, write
from tests.fakes.gitserver import bare_repos

CONTENTS = ("contents",)
CHUNK = 1 << 20


def release_json(ctx: Ctx, release: Release) -> dict[str, Any]:
    return render.release(ctx.urls, ctx.the_repo(), release)


def _sees_drafts(ctx: Ctx) -> bool:
    """Draft releases are visible only to those who may push."""
    token = ctx.token
    if token is None:  # an anonymous read of a public repository
        return False
    repo = ctx.the_repo()
    return auth.reaches(ctx.state, token, repo) and auth.can(token, CONTENTS, True)


def _release(ctx: Ctx) -> Release:
    release = lookups.by_id(ctx.the_repo().releases, ctx, "release_id")
    if release.draft and not _sees_drafts(ctx):
        raise not_found()
    return release


def list_releases(ctx: Ctx) -> Reply:
    drafts = _sees_drafts(ctx)
    found = [r for r in ctx.the_repo().releases.values() if drafts or not r.draft]
    found.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    return ctx.page(found, lambda r: release_json(ctx, r))


def _check_tag(ctx: Ctx, tag: str, release_id: int | None) -> None:
    for other in ctx.the_repo().releases.values():
        if other.tag_name == tag and other.id != release_id:
            raise validation_failed("Release", "tag_name", "already_exists")


def _tag_if_published(ctx: Ctx, release: Release) -> None:
    """Publishing a release whose tag does not exist creates the tag."""
    repo = ctx.the_repo()
    if release.draft or bare_repos.tag_exists(repo.git_dir, release.tag_name):
        return
    sha = bare_repos.resolve_commit(repo.git_dir, release.target_commitish)
    if sha is None:
        raise validation_failed("Release", "target_commitish", "invalid")
    bare_repos.set_ref(repo.git_dir, f"refs/tags/{release.tag_name}", sha)


def create_release(ctx: Ctx) -> Reply:
    body, repo = ctx.json(), ctx.the_repo()
    tag = str(body["tag_name"]).strip()
    if not tag:
        raise validation_failed("Release", "tag_name", "missing_field")
    _check_tag(ctx, tag, None)
    target = str(body.get("target_commitish") or repo.default_branch)
    exists = bare_repos.tag_exists(repo.git_dir, tag)
    if not exists and bare_repos.resolve_commit(repo.git_dir, target) is None:
        raise validation_failed("Release", "target_commitish", "invalid")
    lookups.text_field(body, "body", "Release", limit=125000)
    tags_before = hooks.tags(repo)
    release = ctx.state.add_release(
        repo,
        tag,
        title=body.get("name"),
        body=body.get("body"),
        draft=bool(body.get("draft", False)),
        prerelease=bool(body.get("prerelease", False)),
        target_commitish=target,
        author=ctx.actor,
    )
    hooks.release_created(ctx, release, tags_before)
    out = release_json(ctx, release)
    return Reply(201, out, lookups.location(out["url"]))


def get_release(ctx: Ctx) -> Reply:
    return Reply(200, release_json(ctx, _release(ctx)))


def get_release_by_tag(ctx: Ctx) -> Reply:
    """A published release by its tag: drafts have no tag yet, so never found here (404
    even for those who may see drafts, as on GitHub)."""
    tag = ctx.params["tag"]
    for release in ctx.the_repo().releases.values():
        if release.tag_name == tag and not release.draft:
            return Reply(200, release_json(ctx, release))
    raise not_found()


def get_latest_release(ctx: Ctx) -> Reply:
    """The newest published full release by ``created_at`` (never a draft nor a
    prerelease); 404 when there is none."""
    found = [r for r in ctx.the_repo().releases.values() if not r.draft and not r.prerelease]
    if not found:
        raise not_found()
    return Reply(200, release_json(ctx, max(found, key=lambda r: (r.created_at, r.id))))


def update_release(ctx: Ctx) -> Reply:
    release, body = _release(ctx), ctx.json()
    before, tags_before = hooks.release_snapshot(release), hooks.tags(ctx.the_repo())
    if "tag_name" in body:
        _check_tag(ctx, str(body["tag_name"]), release.id)
        release.tag_name = str(body["tag_name"])
    for field in ("target_commitish", "name", "body"):
        if field in body:
            setattr(release, field, body[field])
    if "prerelease" in body:
        release.prerelease = bool(body["prerelease"])
    now = ctx.state.now()
    if "draft" in body and bool(body["draft"]) != release.draft:
        release.draft = bool(body["draft"])
        release.published_at = None if release.draft else now
    _tag_if_published(ctx, release)
    release.updated_at = now
    hooks.release_changed(ctx, release, before, tags_before)
    return Reply(200, release_json(ctx, release))


def delete_release(ctx: Ctx) -> Reply:
    release, repo = _release(ctx), ctx.the_repo()
    for asset_id in release.assets:
        asset = repo.assets.pop(asset_id, None)
        if asset is not None:
            asset.path.unlink(missing_ok=True)
    del repo.releases[release.id]
    hooks.release_deleted(ctx, release)
    return Reply(204)


# -- assets -----------------------------------------------------------------------------


def asset_json(ctx: Ctx, asset: Asset) -> dict[str, Any]:
    repo = ctx.the_repo()
    return render.asset(ctx.urls, repo, asset, repo.releases[asset.release_id])


def list_assets(ctx: Ctx) -> Reply:
    release, repo = _release(ctx), ctx.the_repo()
    found = [repo.assets[i] for i in release.assets if i in repo.assets]
    return ctx.page(found, lambda a: asset_json(ctx, a))


#: What GitHub keeps of an asset name: ASCII letters, digits, ``_``, ``-`` and ``.``.
_DISALLOWED = re.compile(r"[^A-Za-z0-9_.\-]+")


def _clean(part: str) -> str:
    return re.sub(r"\.{2,}", ".", _DISALLOWED.sub(".", part)).strip(".")


def safe_asset_name(name: str) -> str:
    """The name GitHub gives an uploaded asset ("renames asset filenames that have special
    characters, non-alphanumeric characters, and leading or trailing periods").

    Modelled on what uploads show: each run of other characters becomes one period
    (``checksums file.txt`` -> ``checksums.file.txt``, ``a~b (c).deb`` ->
    ``a.b.c.deb``), non-ASCII letters too (``ünïcode.bin`` -> ``n.code.bin``: no
    transliteration), periods are not doubled nor kept at either end, and a name whose
    stem has nothing left is ``default`` with its extension (``😀.pdf`` ->
    ``default.pdf``).
    """
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem.strip("."):
        stem, extension = name, ""
    stem, extension = _clean(stem), _clean(extension)
    stem = stem or "default"
    return f"{stem}.{extension}" if extension else stem


def upload_asset(ctx: Ctx) -> Reply:
    """Raw bytes in the body, ``name`` (and ``label``) in the query."""
    release, repo = _release(ctx), ctx.the_repo()
    raw_name = ctx.arg("name")
    if not raw_name:
        raise validation_failed("ReleaseAsset", "name", "missing_field")
    name = safe_asset_name(raw_name)
    _check_asset_name(ctx, release, name, None)
    asset_id = ctx.state.next_id("asset")
    path = ctx.state.root / "assets" / str(asset_id)
    digest = hashlib.sha256()
    stream = ctx.request.stream
    try:
        with path.open("wb") as out:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except ClientDisconnected:
        # The client went away mid-body (a stopped upload): nothing of it is kept.
        path.unlink(missing_ok=True)
        raise ApiError(400, "Problems parsing the upload: the body ended early") from None
    asset = ctx.state.store_asset(
        repo,
        release,
        asset_id,
        name,
        path,
        content_type=ctx.request.headers.get("content-type") or "application/octet-stream",
        label=ctx.arg("label"),
        uploader=ctx.actor,
        digest="sha256:" + digest.hexdigest(),
    )
    return Reply(201, asset_json(ctx, asset))


def _check_asset_name(ctx: Ctx, release: Release, name: str, asset_id: int | None) -> None:
    """A release holds each (GitHub-given) name once: 422 already_exists."""
    repo = ctx.the_repo()
    for other in release.assets:
        if other != asset_id and other in repo.assets and repo.assets[other].name == name:
            raise validation_failed("ReleaseAsset", "name", "already_exists")


def update_asset(ctx: Ctx) -> Reply:
    """PATCH: ``name`` (renamed as an upload's would be) and ``label`` (kept verbatim,
    ``""`` clears it); ``state`` is accepted and ignored for an uploaded asset."""
    asset, body, repo = _asset(ctx), ctx.json(), ctx.the_repo()
    if "name" in body:
        raw = str(body["name"] or "")
        if not raw.strip():
            raise validation_failed("ReleaseAsset", "name", "missing_field")
        name = safe_asset_name(raw)
        _check_asset_name(ctx, repo.releases[asset.release_id], name, asset.id)
        asset.name = name
    if "label" in body:
        asset.label = str(body["label"]) if body["label"] else None
    asset.updated_at = ctx.state.now()
    return Reply(200, asset_json(ctx, asset))


def _asset(ctx: Ctx) -> Asset:
    asset = lookups.by_id(ctx.the_repo().assets, ctx, "asset_id")
    release = ctx.the_repo().releases.get(asset.release_id)
    if release is None or (release.draft and not _sees_drafts(ctx)):
        raise not_found()
    return asset


def get_asset(ctx: Ctx) -> Reply:
    """JSON, or with ``Accept: application/octet-stream`` the bytes: "The API will either
    redirect the client to the location, or stream it directly". On github.com a 302 to
    a signed download URL (on GitHub a storage host's: it needs no credentials, so a
    client that drops ``Authorization`` on the way, as it should, still gets a private
    asset); GitHub Enterprise Server's single host streams them itself (a redirect off
    its API path is one some clients refuse to follow)."""
    asset = _asset(ctx)
    out = asset_json(ctx, asset)
    if "application/octet-stream" not in ctx.request.headers.get("accept", ""):
        return Reply(200, out)
    if ctx.layout == "ghes":
        asset.download_count += 1
        return Reply(200, raw=asset.path.read_bytes(), headers={"content-type": asset.content_type})
    signed = signed_urls.sign(ctx.state.signing_key, asset.id, ctx.state.now().timestamp())
    return Reply(302, None, {"location": f"{out['browser_download_url']}?{signed}"})


def delete_asset(ctx: Ctx) -> Reply:
    asset, repo = _asset(ctx), ctx.the_repo()
    del repo.assets[asset.id]
    release = repo.releases[asset.release_id]
    release.assets.remove(asset.id)
    asset.path.unlink(missing_ok=True)
    return Reply(204)


R = "/repos/{owner}/{repo}"
C = CONTENTS
ROUTES = [
    read(f"{R}/releases", list_releases, C),
    write("POST", f"{R}/releases", create_release, C, "Release"),
    read(f"{R}/releases/{{release_id}}", get_release, C),
    read(f"{R}/releases/tags/{{tag}}", get_release_by_tag, C),
    read(f"{R}/releases/latest", get_latest_release, C),
    write("PATCH", f"{R}/releases/{{release_id}}", update_release, C, "Release"),
    write("DELETE", f"{R}/releases/{{release_id}}", delete_release, C, "Release"),
    read(f"{R}/releases/{{release_id}}/assets", list_assets, C),
    write(
        "POST", f"{R}/releases/{{release_id}}/assets", upload_asset, C, "ReleaseAsset", "uploads"
    ),
    read(f"{R}/releases/assets/{{asset_id}}", get_asset, C),
    write("PATCH", f"{R}/releases/assets/{{asset_id}}", update_asset, C, "ReleaseAsset"),
    write("DELETE", f"{R}/releases/assets/{{asset_id}}", delete_asset, C, "ReleaseAsset"),
]
