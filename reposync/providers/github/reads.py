"""Reading a GitHub repository as canonical objects: whole inventories and single ones.

Every request is conditional, so a no-change Run is answered by 304s that cost no
primary quota. Lists are repository-wide where GitHub offers it (issues with pull
requests, issue comments, review comments, releases with their assets); reviews only
exist per pull request.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from reposync.errors import ObjectNotFound
from reposync.providers.forge.numbers import is_placeholder
from reposync.providers.github import objects as gh
from reposync.providers.github.client import GitHubClient
from reposync.sync.canonical import CanonicalObject, PullHead
from reposync.sync.vocabulary import ObjectType


class Inventory:
    """Lists a repository once per Run and answers every type from that listing."""

    def __init__(self, client: GitHubClient, repo: str) -> None:
        self.client = client
        self.repo = repo
        self._issues: list[dict[str, Any]] | None = None
        self._pulls: dict[int, dict[str, Any]] | None = None
        self._reviews: dict[str, CanonicalObject] = {}
        self._issue_comments: list[dict[str, Any]] | None = None
        self._pull_comments: list[dict[str, Any]] | None = None

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def issues(self) -> list[dict[str, Any]]:
        if self._issues is None:
            self._issues = list(self.client.paginate(self._path("/issues"), {"state": "all"}))
        return self._issues

    def pulls(self) -> dict[int, dict[str, Any]]:
        if self._pulls is None:
            self._pulls = {
                p["number"]: p for p in self.client.paginate(self._path("/pulls"), {"state": "all"})
            }
        return self._pulls

    def open_pull_heads(self) -> list[PullHead]:
        """Open pull requests' heads as the source knows them (a header keeps a fork's).

        From the listing of every pull request when this Inventory has it; otherwise (a
        re-read) only the open ones are listed.
        """
        pulls = (
            self._pulls.values()
            if self._pulls is not None
            else self.client.paginate(self._path("/pulls"), {"state": "open"})
        )
        heads = []
        for data in pulls:
            if data["state"] == "open":
                payload = gh.pull_request(data).payload
                heads.append(PullHead(data["number"], payload["head_ref"], payload["head_sha"]))
        return heads

    def kinds(self) -> dict[int, ObjectType]:
        return {
            issue["number"]: ObjectType.PULL_REQUEST
            if "pull_request" in issue or gh.is_carrier(issue)
            else ObjectType.ISSUE
            for issue in self.issues()
        }

    def objects(self, object_type: ObjectType) -> Iterator[CanonicalObject]:
        """Every object of a type (placeholders are reposync's own: never listed)."""
        if object_type is ObjectType.LABEL:
            yield from map(gh.label, self.client.paginate(self._path("/labels")))
        elif object_type is ObjectType.MILESTONE:
            yield from map(
                gh.milestone, self.client.paginate(self._path("/milestones"), {"state": "all"})
            )
        elif object_type is ObjectType.ISSUE:
            for issue in self.issues():
                if (
                    "pull_request" not in issue
                    and not gh.is_carrier(issue)
                    and not _placeholder(issue)
                ):
                    yield gh.issue(issue)
        elif object_type is ObjectType.PULL_REQUEST:
            pulls = self.pulls()
            for issue in self.issues():
                if "pull_request" in issue and issue["number"] in pulls:
                    yield gh.pull_request(pulls[issue["number"]])
                elif gh.is_carrier(issue):
                    yield gh.pull_request(issue, carrier=True)
        elif object_type is ObjectType.ISSUE_COMMENT:
            kinds = self.kinds()
            for comment in self.client.paginate(self._path("/issues/comments")):
                kind = kinds.get(gh.parent_number(comment), ObjectType.ISSUE)
                obj = gh.issue_comment(comment, kind)
                if obj.object_type is ObjectType.ISSUE_COMMENT:
                    yield obj
        elif object_type is ObjectType.REVIEW:
            yield from self.reviews().values()
        elif object_type is ObjectType.REVIEW_COMMENT:
            yield from self._review_comments()
        elif object_type is ObjectType.REVIEW_REQUEST:
            for number, pull in self.pulls().items():
                for user in pull.get("requested_reviewers") or []:
                    yield gh.review_request(number, user["login"])
            # The review requests reposync projected: comments that read back as them.
            kinds = self.kinds()
            for comment in self.issue_comments():
                obj = gh.issue_comment(
                    comment, kinds.get(gh.parent_number(comment), ObjectType.ISSUE)
                )
                if obj.object_type is ObjectType.REVIEW_REQUEST:
                    yield obj
        elif object_type is ObjectType.RELEASE:
            yield from map(gh.release, self.client.paginate(self._path("/releases")))
        elif object_type is ObjectType.RELEASE_ASSET:
            for release in self.client.paginate(self._path("/releases")):
                for asset in release.get("assets") or []:
                    yield gh.release_asset(asset, str(release["id"]), release["tag_name"])

    def issue_comments(self) -> list[dict[str, Any]]:
        """Every issue comment of the repository, listed once (several types hide in them)."""
        if self._issue_comments is None:
            self._issue_comments = list(self.client.paginate(self._path("/issues/comments")))
        return self._issue_comments

    def pull_comments(self) -> list[dict[str, Any]]:
        """Every review comment of the repository, listed once."""
        if self._pull_comments is None:
            self._pull_comments = list(self.client.paginate(self._path("/pulls/comments")))
        return self._pull_comments

    def reviews(self) -> dict[str, CanonicalObject]:
        if not self._reviews:
            by_review: dict[int, list[dict[str, Any]]] = {}
            for comment in self.pull_comments():
                by_review.setdefault(comment.get("pull_request_review_id") or 0, []).append(comment)
            for number in self.pulls():
                for data in self.client.paginate(self._path(f"/pulls/{number}/reviews")):
                    if gh.is_vessel(data, number, by_review.get(data["id"], [])):
                        continue  # opened by GitHub for a comment of another review
                    obj = gh.review(data, number)
                    self._reviews[obj.identity] = obj
            kinds = self.kinds()
            for comment in self.client.paginate(self._path("/issues/comments")):
                obj = gh.issue_comment(
                    comment, kinds.get(gh.parent_number(comment), ObjectType.ISSUE)
                )
                if obj.object_type is ObjectType.REVIEW:
                    self._reviews[obj.identity] = obj
        return self._reviews

    def _review_comments(self) -> Iterator[CanonicalObject]:
        reviews = self.reviews()
        for data in self.pull_comments():
            number = int(str(data["pull_request_url"]).rstrip("/").rsplit("/", 1)[1])
            identity = gh.review_identity(data, number)
            review = reviews.get(identity)
            if review is None:
                continue  # a pending review of someone else's, or one not listed
            yield gh.review_comment(data, identity, review.unique_key)
        kinds = self.kinds()
        for comment in self.client.paginate(self._path("/issues/comments")):
            obj = gh.issue_comment(comment, kinds.get(gh.parent_number(comment), ObjectType.ISSUE))
            if obj.object_type is ObjectType.REVIEW_COMMENT:
                yield obj


def _placeholder(issue: dict[str, Any]) -> bool:
    """A closed issue reposync made only to keep a number free."""
    return is_placeholder(issue.get("body"))


def read_one(
    client: GitHubClient, repo: str, object_type: ObjectType, identity: str
) -> CanonicalObject | None:
    """One object by identity (conditional GET), ``None`` when it does not exist."""
    base = f"/repos/{repo}"
    try:
        if object_type is ObjectType.LABEL:
            for data in client.paginate(f"{base}/labels"):
                if str(data["id"]) == identity:
                    return gh.label(data)
            return None
        if object_type is ObjectType.MILESTONE:
            return gh.milestone(client.get(f"{base}/milestones/{identity}"))
        if object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
            data = client.get(f"{base}/issues/{identity}")
            if _placeholder(data):
                return None
            if "pull_request" in data:
                obj = gh.pull_request(client.get(f"{base}/pulls/{identity}"))
            elif gh.is_carrier(data):
                obj = gh.pull_request(data, carrier=True)
            else:
                obj = gh.issue(data)
            return obj if obj.object_type is object_type else None
        if object_type in (
            ObjectType.ISSUE_COMMENT,
            ObjectType.REVIEW,
            ObjectType.REVIEW_COMMENT,
            ObjectType.REVIEW_REQUEST,
        ) and identity.startswith("comment-"):
            data = client.get(f"{base}/issues/comments/{identity.removeprefix('comment-')}")
            obj = gh.issue_comment(data, ObjectType.PULL_REQUEST)
            return obj if obj.object_type is object_type else None
        if object_type is ObjectType.ISSUE_COMMENT:
            data = client.get(f"{base}/issues/comments/{identity}")
            parent = client.get(f"{base}/issues/{gh.parent_number(data)}")
            kind = (
                ObjectType.PULL_REQUEST
                if "pull_request" in parent or gh.is_carrier(parent)
                else ObjectType.ISSUE
            )
            obj = gh.issue_comment(data, kind)
            # A comment carrying another type (a projected review request) is not one.
            return obj if obj.object_type is object_type else None
        if object_type is ObjectType.REVIEW:
            number, review_id = identity.split("/", 1)
            data = client.get(f"{base}/pulls/{number}/reviews/{review_id}")
            if not (data.get("body") or "").strip():  # may be a vessel: look inside
                own = list(client.paginate(f"{base}/pulls/{number}/reviews/{review_id}/comments"))
                if gh.is_vessel(data, int(number), own):
                    return None
            return gh.review(data, int(number))
        if object_type is ObjectType.REVIEW_COMMENT:
            if not identity.isdigit():  # a deleted comment a reply still answers
                return None
            data = client.get(f"{base}/pulls/comments/{identity}")
            pull = int(str(data["pull_request_url"]).rstrip("/").rsplit("/", 1)[1])
            parent = gh.review_identity(data, pull)
            review = read_one(client, repo, ObjectType.REVIEW, parent)
            return gh.review_comment(data, parent, review.unique_key if review else None)
        if object_type is ObjectType.REVIEW_REQUEST:  # a native one: "<number>:<login>"
            number_text, _, login = identity.partition(":")
            if not number_text.isdigit() or not login:
                return None
            requested = client.get(f"{base}/pulls/{number_text}/requested_reviewers")
            users = {u.get("login") for u in requested.get("users") or []}
            return gh.review_request(int(number_text), login) if login in users else None
        if object_type is ObjectType.RELEASE:
            return gh.release(client.get(f"{base}/releases/{identity}"))
        if object_type is ObjectType.RELEASE_ASSET:
            return _asset(client, repo, identity)  # assets come with their release
    except ObjectNotFound:
        return None
    return None


def _asset(client: GitHubClient, repo: str, identity: str) -> CanonicalObject | None:
    for release in client.paginate(f"/repos/{repo}/releases"):
        for asset in release.get("assets") or []:
            if str(asset["id"]) == identity:
                return gh.release_asset(asset, str(release["id"]), release["tag_name"])
    return None


def read_many(
    client: GitHubClient, repo: str, object_type: ObjectType, identities: Sequence[str]
) -> dict[str, CanonicalObject | None]:
    return {identity: read_one(client, repo, object_type, identity) for identity in identities}
