"""Finding on GitHub what a create made, by the marker in its body or a natural key.

After a lost response the writer looks for the object at once (``find_created``); the
provider answers ``find_by_markers`` and proves absence (``markers_absent``) with
``find_markers``. Labels, milestones and assets have no body to carry a marker: they
are found by name, title and source name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import parse
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.writes.context import WriteContext
from reposync.providers.github.writes.labels import label_by_name
from reposync.providers.github.writes.releases import asset_named
from reposync.sync.vocabulary import ObjectType

#: Newest objects scanned when looking for a marker after a lost response.
MARKER_SCAN_PAGES = 5


def find_created(ctx: WriteContext, write: TargetWrite) -> str | None:
    """The identity of what ``write`` (a create) made, or ``None`` when none was found."""
    payload = write.payload or {}
    if write.object_type is ObjectType.LABEL:
        found = label_by_name(ctx, payload.get("name", ""))
        return str(found["id"]) if found else None
    if write.object_type is ObjectType.MILESTONE:
        for existing in ctx.client.paginate(ctx.path("/milestones"), {"state": "all"}):
            if existing["title"] == payload.get("title"):
                return str(existing["number"])
        return None
    if write.object_type is ObjectType.REVIEW and ctx.parent(write):
        number = ctx.parent(write)
        for review in ctx.client.paginate(ctx.path(f"/pulls/{number}/reviews")):
            if parse(review.get("body")).marker == write.marker:
                return f"{number}/{review['id']}"
    if write.object_type is ObjectType.RELEASE_ASSET and ctx.parent(write):
        asset = asset_named(ctx, ctx.parent(write) or "", payload.get("name", ""))
        return str(asset["id"]) if asset else None
    return find_markers(ctx.client, ctx.repo, write.object_type, [write.marker]).get(write.marker)


def find_markers(
    client: GitHubClient,
    repo: str,
    object_type: ObjectType,
    markers: Sequence[str],
    *,
    complete: list[bool] | None = None,
) -> dict[str, str]:
    """{marker: identity} among the newest objects of a type (after a lost response).

    ``complete`` (when given) receives whether the whole listing was read: only then does
    "not found" prove that no object carries a marker.
    """
    if complete is not None:
        complete[:] = [False]
    wanted = set(markers)
    found: dict[str, str] = {}
    listing: tuple[str, dict[str, Any], Callable[[dict[str, Any]], str]] | None = None
    newest = {"sort": "created", "direction": "desc"}
    if object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
        listing = (
            f"/repos/{repo}/issues",
            {"state": "all", **newest},
            lambda item: str(item["number"]),
        )
    elif object_type in (ObjectType.ISSUE_COMMENT, ObjectType.REVIEW, ObjectType.REVIEW_REQUEST):
        listing = (
            f"/repos/{repo}/issues/comments",
            newest,
            lambda item: (
                str(item["id"])
                if object_type is ObjectType.ISSUE_COMMENT
                else f"comment-{item['id']}"
            ),
        )
    elif object_type is ObjectType.REVIEW_COMMENT:
        listing = (f"/repos/{repo}/pulls/comments", newest, lambda item: str(item["id"]))
    elif object_type is ObjectType.RELEASE:
        listing = (f"/repos/{repo}/releases", {}, lambda item: str(item["id"]))
    if listing is None:
        return found
    path, params, identity = listing
    for count, item in enumerate(client.paginate(path, params)):
        marker = parse(item.get("body")).marker
        if marker in wanted:
            found[marker] = identity(item)
            if len(found) == len(wanted):
                break
        if count >= MARKER_SCAN_PAGES * 100:
            break
    else:
        if complete is not None:
            complete[:] = [True]
    if object_type is ObjectType.REVIEW and len(found) < len(wanted):
        # Native reviews live per pull request: the newest pull requests' reviews.
        scanned_all = _find_native_reviews(client, repo, wanted, found)
        if complete is not None and not scanned_all:
            complete[:] = [False]
    return found


def _find_native_reviews(
    client: GitHubClient, repo: str, wanted: set[str], found: dict[str, str]
) -> bool:
    """Markers of native reviews into ``found``; whether every pull request was read."""
    pulls = client.paginate(
        f"/repos/{repo}/pulls", {"state": "all", "sort": "created", "direction": "desc"}
    )
    for count, pull in enumerate(pulls):
        if count >= MARKER_SCAN_PAGES * 100:
            return False
        number = pull["number"]
        for review in client.paginate(f"/repos/{repo}/pulls/{number}/reviews"):
            marker = parse(review.get("body")).marker
            if marker in wanted:
                found[marker] = f"{number}/{review['id']}"
                if len(found) == len(wanted):
                    return False  # stopped early: not a proof of absence for the rest
    return True
