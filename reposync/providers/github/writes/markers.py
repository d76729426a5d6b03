"""Where on GitHub a create is found again: the listings ``forge.markers`` searches for
markers (newest first), and labels, milestones and assets by their natural keys.

Issues and pull requests share one listing; comments carrying a review, a review
request or a review comment are issue comments (``comment-<id>``); native reviews exist
only per pull request, so they are searched pull request by pull request.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forge import markers as forge_markers
from reposync.providers.forge.carriers import comment_identity
from reposync.providers.forge.markers import Marked, MarkerFinder
from reposync.providers.forge.reviews import native_review_identity
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.writes.context import WriteContext
from reposync.providers.github.writes.labels import label_by_name
from reposync.providers.github.writes.releases import asset_named
from reposync.sync.vocabulary import ObjectType

#: Newest first, where GitHub's listing can sort.
_NEWEST = {"sort": "created", "direction": "desc"}


class GitHubMarkerSearch:
    """GitHub's listings of bodies for ``forge.markers.MarkerFinder``."""

    def __init__(self, client: GitHubClient, repo: str) -> None:
        self.client = client
        self.repo = repo  # "owner/name"

    def _marked(
        self, suffix: str, params: Mapping[str, Any], identity: Callable[[dict[str, Any]], str]
    ) -> Iterator[Marked]:
        items = self.client.paginate(f"/repos/{self.repo}{suffix}", params)
        return ((identity(item), item.get("body")) for item in items)

    def bodies(self, object_type: ObjectType) -> Iterable[Marked] | None:
        if object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
            return self._marked("/issues", {"state": "all", **_NEWEST}, _number)
        if object_type is ObjectType.ISSUE_COMMENT:
            return self._marked("/issues/comments", _NEWEST, _id)
        if object_type in (ObjectType.REVIEW, ObjectType.REVIEW_REQUEST):
            # Carried in issue comments (a native review is per pull request).
            return self._marked("/issues/comments", _NEWEST, lambda c: comment_identity(c["id"]))
        if object_type is ObjectType.REVIEW_COMMENT:
            # Native ones, then those an issue comment carries (on a carrier issue, or
            # where the diff cannot place them): both read whole before a marker is
            # absent. Before, only the native listing: a carried review comment whose
            # answer was lost was "proven absent" and posted again.
            return itertools.chain(
                self._marked("/pulls/comments", _NEWEST, _id),
                self._marked("/issues/comments", _NEWEST, lambda c: comment_identity(c["id"])),
            )
        if object_type is ObjectType.RELEASE:
            return self._marked("/releases", {}, _id)
        return None

    def bodies_per_parent(self, object_type: ObjectType) -> Iterable[Iterable[Marked]] | None:
        if object_type is not ObjectType.REVIEW:
            return None
        pulls = self.client.paginate(f"/repos/{self.repo}/pulls", {"state": "all", **_NEWEST})
        return (self._reviews(pull["number"]) for pull in pulls)

    def bodies_under(self, object_type: ObjectType, parent: str) -> Iterable[Marked] | None:
        return self._reviews(parent) if object_type is ObjectType.REVIEW else None

    def _reviews(self, pull: object) -> Iterator[Marked]:
        reviews = self.client.paginate(f"/repos/{self.repo}/pulls/{pull}/reviews")
        return ((native_review_identity(pull, r["id"]), r.get("body")) for r in reviews)


class GitHubNaturalKeys:
    """Labels by name, milestones by title, assets by source name, for
    ``forge.markers.find_created``."""

    def __init__(self, ctx: WriteContext) -> None:
        self.ctx = ctx

    def label_named(self, name: str) -> str | None:
        found = label_by_name(self.ctx, name)
        return str(found["id"]) if found else None

    def milestone_titled(self, title: str) -> str | None:
        for existing in self.ctx.client.paginate(self.ctx.path("/milestones"), {"state": "all"}):
            if existing["title"] == title:
                return str(existing["number"])
        return None

    def asset_named(self, release: str, name: str) -> str | None:
        asset = asset_named(self.ctx, release, name)
        return str(asset["id"]) if asset else None


def marker_finder(client: GitHubClient, repo: str) -> MarkerFinder:
    """A finder of markers among one repository's newest objects."""
    return MarkerFinder(GitHubMarkerSearch(client, repo))


def find_created(ctx: WriteContext, write: TargetWrite) -> str | None:
    """The identity of what ``write`` (a create) made, or ``None`` when none was found."""
    return forge_markers.find_created(
        write, ctx.parent(write), GitHubNaturalKeys(ctx), marker_finder(ctx.client, ctx.repo)
    )


def _number(item: dict[str, Any]) -> str:
    return str(item["number"])


def _id(item: dict[str, Any]) -> str:
    return str(item["id"])
