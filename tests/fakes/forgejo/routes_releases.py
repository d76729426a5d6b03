"""Releases and their attachments (routers/api/v1/repo/release*.go in Forgejo's source).

* Drafts are listed only to those who may write; ``latest`` is the newest release that
  is neither a draft nor a prerelease.
* Creating a release for a tag that has one is 409 "release tag already exist
  [tag_name: v1]"; a missing tag is created at ``target_commitish`` (the default branch
  when unset) unless the release is a draft.
* An attachment is uploaded as ``multipart/form-data`` (field ``attachment``, its file
  name the attachment's unless ``?name=`` says otherwise) or as the raw body
  (``application/octet-stream``, ``?name=`` required); 201. Its bytes are served at
  ``browser_download_url`` (``/attachments/{uuid}``, git_http.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.fakes.forgejo import render, webhooks
from tests.fakes.forgejo.errors import ApiError, conflict, not_found, unprocessable
from tests.fakes.forgejo.models import Attachment, Release
from tests.fakes.forgejo.routing import Ctx, Reply, under_repo
from tests.fakes.gitserver import bare_repos


def _visible(ctx: Ctx, rel: Release) -> bool:
    return not rel.draft or (ctx.doer is not None and ctx.state.can_write(ctx.doer, ctx.the_repo()))


def _release(ctx: Ctx) -> Release:
    found = ctx.the_repo().releases.get(ctx.int_param("id"))
    if found is None or not _visible(ctx, found):
        raise not_found()
    return found


def _json(ctx: Ctx, rel: Release) -> Any:
    return render.release(ctx.urls, ctx.the_repo(), rel, ctx.doer)


def list_releases(ctx: Ctx) -> Reply:
    repo = ctx.the_repo()
    found = sorted(
        (r for r in repo.releases.values() if _visible(ctx, r)),
        key=lambda r: (r.created, r.id),
        reverse=True,
    )
    for name, attr in (("draft", "draft"), ("pre-release", "prerelease")):
        wanted = ctx.arg(name)
        if wanted in ("true", "false"):
            found = [r for r in found if getattr(r, attr) == (wanted == "true")]
    return ctx.page(found, lambda r: _json(ctx, r))


def get_release(ctx: Ctx) -> Reply:
    return Reply(200, _json(ctx, _release(ctx)))


def latest_release(ctx: Ctx) -> Reply:
    found = [r for r in ctx.the_repo().releases.values() if not r.draft and not r.prerelease]
    if not found:
        raise not_found()
    return Reply(200, _json(ctx, max(found, key=lambda r: (r.created, r.id))))


def _by_tag(ctx: Ctx) -> Release:
    found = ctx.state.release_by_tag(ctx.the_repo(), ctx.params["tag"])
    if found is None or not _visible(ctx, found):
        raise not_found()
    return found


def release_by_tag(ctx: Ctx) -> Reply:
    return Reply(200, _json(ctx, _by_tag(ctx)))


def create_release(ctx: Ctx) -> Reply:
    repo, body = ctx.the_repo(), ctx.json()
    tag = str(body["tag_name"])
    if ctx.state.release_by_tag(repo, tag) is not None:
        raise conflict(f"release tag already exist [tag_name: {tag}]")
    draft = bool(body.get("draft", False))
    target = str(body.get("target_commitish") or repo.default_branch)
    if not bare_repos.tag_exists(repo.git_dir, tag) and not draft:
        sha = bare_repos.resolve_commit(repo.git_dir, target)
        if sha is None:
            raise not_found(f"object does not exist [id: {target}, rel_path: ]")
        bare_repos.set_ref(repo.git_dir, f"refs/tags/{tag}", sha)
    rel = Release(
        id=ctx.state.next_id("release"),
        tag_name=tag,
        target=target,
        author=ctx.the_doer(),
        created=ctx.state.now(),
        title=str(body.get("name") or ""),
        note=str(body.get("body") or ""),
        draft=draft,
        prerelease=bool(body.get("prerelease", False)),
        hide_archive_links=bool(body.get("hide_archive_links", False)),
    )
    repo.releases[rel.id] = rel
    if not draft:
        webhooks.release_event(ctx, rel, "published")
    return Reply(201, _json(ctx, rel))


def edit_release(ctx: Ctx) -> Reply:
    repo, rel, body = ctx.the_repo(), _release(ctx), ctx.json()
    was_draft = rel.draft
    if body.get("tag_name") and body["tag_name"] != rel.tag_name:
        if ctx.state.release_by_tag(repo, str(body["tag_name"])) is not None:
            raise conflict(f"release tag already exist [tag_name: {body['tag_name']}]")
        rel.tag_name = str(body["tag_name"])
    for key, attr in (("target_commitish", "target"), ("name", "title"), ("body", "note")):
        if body.get(key) is not None:
            setattr(rel, attr, str(body[key]))
    for key in ("draft", "prerelease", "hide_archive_links"):
        if body.get(key) is not None:
            setattr(rel, key, bool(body[key]))
    if was_draft and not rel.draft and not bare_repos.tag_exists(repo.git_dir, rel.tag_name):
        sha = bare_repos.resolve_commit(repo.git_dir, rel.target or repo.default_branch)
        if sha is not None:
            bare_repos.set_ref(repo.git_dir, f"refs/tags/{rel.tag_name}", sha)
    webhooks.release_event(ctx, rel, "published" if was_draft and not rel.draft else "updated")
    return Reply(200, _json(ctx, rel))


def _delete(ctx: Ctx, rel: Release) -> Reply:
    repo = ctx.the_repo()
    webhooks.release_event(ctx, rel, "deleted")
    for attachment_id in rel.attachments:
        repo.attachments.pop(attachment_id, None)
    del repo.releases[rel.id]
    return Reply(204)


def delete_release(ctx: Ctx) -> Reply:
    return _delete(ctx, _release(ctx))


def delete_release_by_tag(ctx: Ctx) -> Reply:
    return _delete(ctx, _by_tag(ctx))


# -- attachments -------------------------------------------------------------------------


def _attachment(ctx: Ctx) -> tuple[Release, Attachment]:
    rel = _release(ctx)
    found = ctx.the_repo().attachments.get(ctx.int_param("attachment_id"))
    if found is None or found.release_id != rel.id:
        raise not_found()
    return rel, found


def list_attachments(ctx: Ctx) -> Reply:
    rel = _release(ctx)
    repo = ctx.the_repo()
    return Reply(200, [render.attachment(ctx.urls, repo.attachments[i]) for i in rel.attachments])


def get_attachment(ctx: Ctx) -> Reply:
    return Reply(200, render.attachment(ctx.urls, _attachment(ctx)[1]))


def upload_attachment(ctx: Ctx) -> Reply:
    repo, rel, request = ctx.the_repo(), _release(ctx), ctx.request
    name = ctx.arg("name") or ""
    if (request.mimetype or "").startswith("multipart/form-data"):
        upload = request.files.get("attachment")
        if upload is None:
            if request.form.get("external_url"):
                raise unprocessable("external attachments are not modelled by the test server")
            raise ApiError(400, "Could not get attachment: http: no such file")
        data = upload.read()
        name = name or upload.filename or ""
    else:
        data = request.get_data(cache=False)
    if not name:
        raise ApiError(400, "Could not get attachment name")
    attachment_uuid = str(uuid.uuid4())
    path = ctx.state.root / "attachments" / attachment_uuid
    path.write_bytes(data)
    attachment = Attachment(
        id=ctx.state.next_id("attachment"),
        uuid=attachment_uuid,
        name=name,
        size=len(data),
        path=path,
        uploader=ctx.the_doer(),
        created=ctx.state.now(),
        release_id=rel.id,
    )
    repo.attachments[attachment.id] = attachment
    rel.attachments.append(attachment.id)
    return Reply(201, render.attachment(ctx.urls, attachment))


def edit_attachment(ctx: Ctx) -> Reply:
    _, attachment = _attachment(ctx)
    name = ctx.json().get("name")
    if name:
        attachment.name = str(name)
    return Reply(201, render.attachment(ctx.urls, attachment))


def delete_attachment(ctx: Ctx) -> Reply:
    rel, attachment = _attachment(ctx)
    rel.attachments.remove(attachment.id)
    del ctx.the_repo().attachments[attachment.id]
    return Reply(204)


_rel = under_repo("/releases")


A = "/{id}/assets/{attachment_id}"
ROUTES = [
    _rel("GET", "", list_releases),
    _rel("POST", "", create_release, "write"),
    _rel("GET", "/latest", latest_release),
    _rel("GET", "/tags/{tag}", release_by_tag),
    _rel("DELETE", "/tags/{tag}", delete_release_by_tag, "write"),
    _rel("GET", "/{id}", get_release),
    _rel("PATCH", "/{id}", edit_release, "write"),
    _rel("DELETE", "/{id}", delete_release, "write"),
    _rel("GET", "/{id}/assets", list_attachments),
    _rel("POST", "/{id}/assets", upload_attachment, "write"),
    _rel("GET", A, get_attachment),
    _rel("PATCH", A, edit_attachment, "write"),
    _rel("DELETE", A, delete_attachment, "write"),
]
