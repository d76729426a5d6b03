"""Git references through the REST API: get one, create, move, delete.

Answers as GitHub gives them (docs.github.com/rest/git/refs): ``{ref}`` in the path is
the name without ``refs/`` (``heads/main``; slashes may be percent-encoded) and must
match exactly; a missing ref is 404 on GET but 422 "Reference does not exist" on PATCH
and DELETE; an existing one is 422 "Reference already exists" on create; a move that is
no fast-forward needs ``force``; an empty repository is 409 "Git Repository is empty.".
Every change is a push as far as the rest of the fake is concerned (pull request heads
follow, ``pushed_at`` moves).
"""

from __future__ import annotations

from typing import Any

import pygit2

from tests.fakes.github import render
from tests.fakes.github.errors import ApiError, not_found
from tests.fakes.github.models import Repo
from tests.fakes.github.routing import Ctx, Reply, Route
from tests.fakes.gitserver import bare_repos

EMPTY = "Git Repository is empty."


def _repo(ctx: Ctx) -> Repo:
    repo = ctx.the_repo()
    if bare_repos.is_empty(repo.git_dir):
        raise ApiError(409, EMPTY)
    return repo


def _rendered(ctx: Ctx, repo: Repo, name: str) -> dict[str, Any] | None:
    found = bare_repos.matching_refs(repo.git_dir, name)
    for ref_name, sha, kind in found:
        if ref_name == name:
            return render.git_ref(ctx.urls, repo, ref_name, sha, kind)
    return None


def _pushed(ctx: Ctx, repo: Repo) -> None:
    repo.pushed_at = ctx.state.now()
    ctx.state.sync_pull_heads(repo)


def _sha(ctx: Ctx, body: dict[str, Any]) -> str:
    sha = body.get("sha")
    if not isinstance(sha, str) or not bare_repos.object_exists(ctx.the_repo().git_dir, sha):
        raise ApiError(422, "Object does not exist")
    return sha


def get_ref(ctx: Ctx) -> Reply:
    repo = _repo(ctx)
    out = _rendered(ctx, repo, "refs/" + ctx.params["ref"])
    if out is None:
        raise not_found()
    return Reply(200, out)


def create_ref(ctx: Ctx) -> Reply:
    repo = _repo(ctx)
    body = ctx.json()
    name = body.get("ref")
    if not isinstance(name, str) or not name.startswith("refs/") or name.count("/") < 2:
        raise ApiError(422, "Reference name must start with 'refs/' and have at least two slashes.")
    if not pygit2.reference_is_valid_name(name):
        raise ApiError(422, f"{name} is not a valid ref name.")
    sha = _sha(ctx, body)
    if _rendered(ctx, repo, name) is not None:
        raise ApiError(422, "Reference already exists")
    bare_repos.set_ref(repo.git_dir, name, sha)
    _pushed(ctx, repo)
    out = _rendered(ctx, repo, name)
    assert out is not None
    return Reply(201, out, {"location": out["url"]})


def update_ref(ctx: Ctx) -> Reply:
    repo = _repo(ctx)
    name = "refs/" + ctx.params["ref"]
    current = _rendered(ctx, repo, name)
    if current is None:
        raise ApiError(422, "Reference does not exist")
    body = ctx.json()
    sha = _sha(ctx, body)
    old = current["object"]["sha"]
    if not body.get("force") and not bare_repos.is_fast_forward(repo.git_dir, old, sha):
        raise ApiError(422, "Update is not a fast forward")
    bare_repos.set_ref(repo.git_dir, name, sha)
    _pushed(ctx, repo)
    out = _rendered(ctx, repo, name)
    assert out is not None
    return Reply(200, out)


def delete_ref(ctx: Ctx) -> Reply:
    repo = _repo(ctx)
    name = "refs/" + ctx.params["ref"]
    if _rendered(ctx, repo, name) is None:
        raise ApiError(422, "Reference does not exist")
    bare_repos.delete_ref(repo.git_dir, name)
    _pushed(ctx, repo)
    return Reply(204)


ROUTES = [
    Route("GET", "/repos/{owner}/{repo}/git/ref/{ref}", get_ref, permissions=("contents",)),
    Route(
        "POST",
        "/repos/{owner}/{repo}/git/refs",
        create_ref,
        permissions=("contents",),
        write=True,
        resource="Reference",
    ),
    Route(
        "PATCH",
        "/repos/{owner}/{repo}/git/refs/{ref}",
        update_ref,
        permissions=("contents",),
        write=True,
        resource="Reference",
    ),
    Route(
        "DELETE",
        "/repos/{owner}/{repo}/git/refs/{ref}",
        delete_ref,
        permissions=("contents",),
        write=True,
        resource="Reference",
    ),
]
