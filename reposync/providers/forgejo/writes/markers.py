"""Where on Forgejo a create is found again: the listings ``forge.markers`` searches for
markers (newest first), and labels, milestones and attachments by their natural keys.

Issues and pull requests share one listing, newest first. Forgejo lists a repository's
comments oldest first without a sort: their newest are read from the last page back
(``X-Total-Count`` says which it is). Reviews are listed per pull request (the most
recently updated first: a review moves its pull request's update time), and a review's
line comments per review.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forge import markers as forge_markers
from reposync.providers.forge.carriers import comment_identity, is_carried
from reposync.providers.forge.markers import Marked, MarkerFinder
from reposync.providers.forge.reviews import native_review_identity
from reposync.providers.forgejo.client import ForgejoClient
from reposync.providers.forgejo.reads import review_comment_identity
from reposync.providers.forgejo.writes.context import WriteContext
from reposync.providers.forgejo.writes.releases import asset_named
from reposync.sync.vocabulary import ObjectType


class ForgejoMarkerSearch:
    """Forgejo's listings of bodies for ``forge.markers.MarkerFinder``."""

    def __init__(self, client: ForgejoClient, repo: str) -> None:
        self.client = client
        self.repo = repo  # "owner/name"

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def _marked(
        self, suffix: str, params: Mapping[str, Any], identity: Callable[[dict[str, Any]], str]
    ) -> Iterator[Marked]:
        items = self.client.paginate(self._path(suffix), params)
        return ((identity(item), item.get("body")) for item in items)

    def _newest_comments(self, identity: Callable[[dict[str, Any]], str]) -> Iterator[Marked]:
        """The repository's comments, newest first: its listing's pages last to first."""
        path, limit = self._path("/issues/comments"), self.client.limit
        total = self.client.total(path)
        for page in range((total + limit - 1) // limit, 0, -1):
            items = self.client.get(path, {"page": page, "limit": limit}) or []
            for item in reversed(items):
                yield identity(item), item.get("body")

    def bodies(self, object_type: ObjectType) -> Iterable[Marked] | None:
        if object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
            return self._marked("/issues", {"state": "all"}, lambda i: str(i["number"]))
        if object_type is ObjectType.ISSUE_COMMENT:
            return self._newest_comments(lambda c: str(c["id"]))
        if object_type in (ObjectType.REVIEW, ObjectType.REVIEW_REQUEST, ObjectType.REVIEW_COMMENT):
            # What an issue comment carries (a native one is listed per parent).
            return self._newest_comments(lambda c: comment_identity(c["id"]))
        if object_type is ObjectType.RELEASE:
            return self._marked("/releases", {}, lambda r: str(r["id"]))
        return None

    def bodies_per_parent(self, object_type: ObjectType) -> Iterable[Iterable[Marked]] | None:
        if object_type not in (ObjectType.REVIEW, ObjectType.REVIEW_COMMENT):
            return None
        pulls = self.client.paginate(self._path("/pulls"), {"state": "all", "sort": "recentupdate"})
        if object_type is ObjectType.REVIEW:
            return (self._reviews(pull["number"]) for pull in pulls)
        return (self._pull_review_comments(pull["number"]) for pull in pulls)

    def bodies_under(self, object_type: ObjectType, parent: str) -> Iterable[Marked] | None:
        if object_type is ObjectType.REVIEW and parent.isdigit():
            return self._reviews(parent)
        if object_type is ObjectType.REVIEW_COMMENT and not is_carried(parent) and "/" in parent:
            pull, _, review = parent.partition("/")
            return self._review_comments(pull, review)
        return None

    def _reviews(self, pull: object) -> Iterator[Marked]:
        reviews = self.client.paginate(self._path(f"/pulls/{pull}/reviews"))
        return ((native_review_identity(pull, r["id"]), r.get("body")) for r in reviews)

    def _review_comments(self, pull: object, review: object) -> Iterator[Marked]:
        comments = self.client.get(self._path(f"/pulls/{pull}/reviews/{review}/comments")) or []
        return ((review_comment_identity(pull, review, c["id"]), c.get("body")) for c in comments)

    def _pull_review_comments(self, pull: object) -> Iterator[Marked]:
        for review in self.client.paginate(self._path(f"/pulls/{pull}/reviews")):
            if review.get("comments_count"):
                yield from self._review_comments(pull, review["id"])


class ForgejoNaturalKeys:
    """Labels by name, milestones by title, attachments by name, for
    ``forge.markers.find_created``."""

    def __init__(self, ctx: WriteContext) -> None:
        self.ctx = ctx

    def label_named(self, name: str) -> str | None:
        for label in self.ctx.client.paginate(self.ctx.path("/labels")):
            if label["name"] == name:
                return str(label["id"])
        return None

    def milestone_titled(self, title: str) -> str | None:
        params = {"state": "all", "name": title}
        for milestone in self.ctx.client.paginate(self.ctx.path("/milestones"), params):
            if milestone["title"] == title:
                return str(milestone["id"])
        return None

    def asset_named(self, release: str, name: str) -> str | None:
        asset = asset_named(self.ctx, release, name)
        return str(asset["id"]) if asset else None


def marker_finder(client: ForgejoClient, repo: str) -> MarkerFinder:
    """A finder of markers among one repository's newest objects."""
    return MarkerFinder(ForgejoMarkerSearch(client, repo))


def find_created(ctx: WriteContext, write: TargetWrite) -> str | None:
    """The identity of what ``write`` (a create) made, or ``None`` when none was found."""
    return forge_markers.find_created(
        write, ctx.parent(write), ForgejoNaturalKeys(ctx), marker_finder(ctx.client, ctx.repo)
    )
