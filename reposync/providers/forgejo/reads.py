"""Reading a Forgejo repository as canonical objects: whole inventories and single ones.

An inventory reads what changed since the last one and keeps the rest from its
``listings.Snapshot``: issues and pull requests by ``since`` and a count, the pull
requests and reviews of the changed numbers only, comments by ``since`` and a count;
labels, milestones and releases whole (Forgejo filters none of them). Single reads
(``read_one``) always ask Forgejo: they are the read-back that proves a write, and the
source's latest word before one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from reposync.errors import ObjectNotFound
from reposync.providers.forge.carriers import comment_id, is_carried
from reposync.providers.forge.numbers import is_placeholder
from reposync.providers.forgejo import objects as fj
from reposync.providers.forgejo.accounts import People
from reposync.providers.forgejo.client import ForgejoClient
from reposync.providers.forgejo.listings import (
    SINCE_MARGIN,
    Json,
    Snapshot,
    SnapshotStore,
    trim_comment,
    trim_issue,
    trim_review,
)
from reposync.sync.canonical import CanonicalObject, PullHead
from reposync.sync.vocabulary import ObjectType

T = ObjectType


def since_param(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class Inventory:
    """Lists a repository once per Run (reading only what changed since the last
    snapshot) and answers every type from that listing."""

    def __init__(
        self,
        client: ForgejoClient,
        repo: str,
        people: People,
        store: SnapshotStore,
        now: datetime,
    ) -> None:
        self.client = client
        self.repo = repo
        self.people = people
        self.store = store
        self.now = now
        self.snapshot = store.load(now)
        self._conversations_read = False
        self._comments_read = False
        self._releases: list[Json] | None = None

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    # -- what changed -------------------------------------------------------------------

    def conversations(self) -> Snapshot:
        """Issues and pull requests with their reviews, as of now."""
        if not self._conversations_read:
            self._refresh_conversations()
            self._conversations_read = True
            self.store.save(self.snapshot)
        return self.snapshot

    def _refresh_conversations(self) -> None:
        snap = self.snapshot
        since = snap.issues_since
        params: dict[str, Any] = {"state": "all"}
        if since is not None:
            params["since"] = since_param(since)
        listing = self.client.listing(self._path("/issues"), params)
        fresh = {str(i["number"]): trim_issue(i) for i in listing}
        first = listing.first
        if since is not None:
            issues = {**snap.issues, **fresh}
            total = self.client.total(self._path("/issues"), {"state": "all"})
            if total != len(issues):  # something was deleted: list it all afresh
                snap.issues_since = None
                snap.issues, snap.pulls, snap.reviews = {}, {}, {}
                self._refresh_conversations()
                return
        else:
            issues = fresh
            snap.pulls, snap.reviews = {}, {}
            snap.taken = self.now
        changed = [n for n in fresh if fj.is_pull(issues[n])]
        snap.issues = issues
        snap.pulls = {n: p for n, p in snap.pulls.items() if n in issues and fj.is_pull(issues[n])}
        snap.reviews = {n: r for n, r in snap.reviews.items() if n in snap.pulls}
        snap.pulls.update(self._pulls(changed, since))
        for number in changed:
            snap.reviews[number] = self._reviews(number)
        if first is not None and first.date is not None:
            snap.issues_since = first.date - SINCE_MARGIN
        else:
            snap.issues_since = None  # no clock to count from: list whole next time

    def _pulls(self, numbers: Sequence[str], since: datetime | None) -> dict[str, Json]:
        """The pull requests ``numbers``: one by one when few, else from the listing of
        every pull request, newest update first, read only down to ``since``."""
        if not numbers:
            return {}
        if len(numbers) <= self.client.limit:
            return {n: trim_issue(self.client.get(self._path(f"/pulls/{n}"))) for n in numbers}
        wanted, found = set(numbers), {}
        params = {"state": "all", "sort": "recentupdate"}
        for pull in self.client.paginate(self._path("/pulls"), params):
            number = str(pull["number"])
            if number in wanted:
                found[number] = trim_issue(pull)
            if len(found) == len(wanted):
                break
            updated = _time(pull.get("updated_at"))
            if since is not None and updated is not None and updated < since:
                break
        for number in wanted - set(found):  # not in the listing's order after all
            found[number] = trim_issue(self.client.get(self._path(f"/pulls/{number}")))
        return found

    def _reviews(self, number: str) -> list[Json]:
        """A pull request's reviews, each with its line comments."""
        reviews = []
        for review in self.client.paginate(self._path(f"/pulls/{number}/reviews")):
            comments: list[Json] = []
            if review.get("comments_count"):
                comments = [
                    trim_comment(c)
                    for c in self.client.get(
                        self._path(f"/pulls/{number}/reviews/{review['id']}/comments")
                    )
                ]
            reviews.append(trim_review(review, comments))
        return reviews

    def comments(self) -> dict[str, Json]:
        """Every comment of the repository's issues and pull requests, as of now."""
        if not self._comments_read:
            self._refresh_comments()
            self._comments_read = True
            self.store.save(self.snapshot)
        return self.snapshot.comments

    def _refresh_comments(self) -> None:
        snap = self.snapshot
        since = snap.comments_since if snap.taken is not None else None
        params = {} if since is None else {"since": since_param(since)}
        listing = self.client.listing(self._path("/issues/comments"), params)
        fresh = {str(c["id"]): trim_comment(c) for c in listing}
        if since is not None:
            comments = {**snap.comments, **fresh}
            if self.client.total(self._path("/issues/comments")) != len(comments):
                snap.comments_since = None
                snap.comments = {}
                self._refresh_comments()
                return
        else:
            comments = fresh
            snap.taken = snap.taken or self.now
        snap.comments = comments
        first = listing.first
        snap.comments_since = (
            first.date - SINCE_MARGIN if first is not None and first.date is not None else None
        )

    def releases(self) -> list[Json]:
        if self._releases is None:
            self._releases = list(self.client.paginate(self._path("/releases")))
        return self._releases

    # -- as canonical objects ---------------------------------------------------------

    def kinds(self) -> dict[int, ObjectType]:
        return {
            int(n): T.PULL_REQUEST if fj.is_pull(i) or fj.is_carrier(i) else T.ISSUE
            for n, i in self.conversations().issues.items()
        }

    def open_pull_heads(self) -> list[PullHead]:
        heads = []
        for data in self.conversations().pulls.values():
            if data.get("state") == "open":
                payload = fj.pull_request(data, self.people).payload
                heads.append(
                    PullHead(int(data["number"]), payload["head_ref"], payload["head_sha"])
                )
        return heads

    def _carried(self, object_type: ObjectType) -> Iterator[CanonicalObject]:
        """What reposync carried in comments, of one type."""
        kinds = self.kinds()
        for comment in self.comments().values():
            kind = kinds.get(fj.parent_number(comment), T.ISSUE)
            obj = fj.issue_comment(comment, kind, self.people)
            if obj.object_type is object_type:
                yield obj

    def objects(self, object_type: ObjectType) -> Iterator[CanonicalObject]:
        """Every object of a type (placeholders are reposync's own: never listed)."""
        people = self.people
        if object_type is T.LABEL:
            yield from map(fj.label, self.client.paginate(self._path("/labels")))
        elif object_type is T.MILESTONE:
            milestones = self.client.paginate(self._path("/milestones"), {"state": "all"})
            yield from map(fj.milestone, milestones)
        elif object_type is T.ISSUE:
            for data in self.conversations().issues.values():
                if not (
                    fj.is_pull(data) or fj.is_carrier(data) or is_placeholder(data.get("body"))
                ):
                    yield fj.issue(data, people)
        elif object_type is T.PULL_REQUEST:
            snap = self.conversations()
            for number, data in snap.issues.items():
                if fj.is_pull(data) and number in snap.pulls:
                    yield fj.pull_request(snap.pulls[number], people)
                elif fj.is_carrier(data):
                    yield fj.pull_request(data, people, carrier=True)
        elif object_type is T.ISSUE_COMMENT:
            yield from self._carried(T.ISSUE_COMMENT)
        elif object_type is T.REVIEW:
            yield from self.reviews().values()
            yield from self._carried(T.REVIEW)
        elif object_type is T.REVIEW_COMMENT:
            yield from self._review_comments()
            yield from self._carried(T.REVIEW_COMMENT)
        elif object_type is T.REVIEW_REQUEST:
            for number, pull in self.conversations().pulls.items():
                for user in pull.get("requested_reviewers") or []:
                    yield fj.review_request(int(number), people.login(user))
            yield from self._carried(T.REVIEW_REQUEST)
        elif object_type is T.RELEASE:
            yield from (fj.release(r, people) for r in self.releases())
        elif object_type is T.RELEASE_ASSET:
            for release in self.releases():
                yield from release_assets(self.client, release, self.snapshot.digests)
            self.store.save(self.snapshot)

    def reviews(self) -> dict[str, CanonicalObject]:
        """Native reviews by identity (requests and vessels left out)."""
        found: dict[str, CanonicalObject] = {}
        for number, reviews in self.conversations().reviews.items():
            for data in reviews:
                if data.get("state") == fj.REQUESTED:
                    continue
                if fj.is_vessel(data, int(number), data.get("comments") or []):
                    continue
                obj = fj.review(data, int(number), self.people)
                found[obj.identity] = obj
        return found

    def _review_comments(self) -> Iterator[CanonicalObject]:
        reviews = self.reviews()
        for number, listed in self.conversations().reviews.items():
            for data in listed:
                for comment in data.get("comments") or []:
                    identity = fj.review_identity(comment, int(number))
                    review = reviews.get(identity)
                    if review is None:
                        continue  # someone's pending review, or a request
                    yield fj.review_comment(
                        comment,
                        identity,
                        review.unique_key,
                        self.people,
                        identity=review_comment_identity(number, data["id"], comment["id"]),
                    )


def review_comment_identity(pull: object, review_id: object, comment: object) -> str:
    """A native review comment's identity: ``<pull>/<review>/<comment>``. Forgejo reads a
    review's line comment only through its review (``/issues/comments/{id}`` serves
    plain comments alone), so the identity says where it is."""
    return f"{pull}/{review_id}/{comment}"


def release_assets(
    client: ForgejoClient,
    release: Mapping[str, Any],
    digests: dict[str, str],
    only: str | None = None,
) -> Iterator[CanonicalObject]:
    """A release's attachments (``only``: just that one); their types and digests as
    ``objects`` says."""
    kept = fj.asset_facts(release.get("body"))
    for asset in release.get("assets") or []:
        if only is not None and str(asset["id"]) != only:
            continue
        facts = kept.get(str(asset["id"]), {})
        digest = facts.get("sha256") or asset_digest(client, asset, digests)
        yield fj.release_asset(
            asset,
            str(release["id"]),
            release["tag_name"],
            content_type=str(facts.get("content_type") or fj.guessed_type(asset["name"])),
            sha256=str(digest),
        )


def asset_digest(client: ForgejoClient, asset: Mapping[str, Any], digests: dict[str, str]) -> str:
    """The sha256 of an attachment's bytes (read once: they never change)."""
    key = str(asset.get("uuid") or asset["id"])
    if key not in digests:
        digest = hashlib.sha256()
        with client.download(str(asset["browser_download_url"])) as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                digest.update(chunk)
        digests[key] = digest.hexdigest()
    return digests[key]


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


# -- single reads ---------------------------------------------------------------------------


class Reader:
    """Reads objects one by one, always from Forgejo (a batch's parents read once)."""

    def __init__(self, client: ForgejoClient, repo: str, people: People) -> None:
        self.client = client
        self.repo = repo
        self.people = people
        #: JSON read by this reader, by API path (a batch reads an object once: the
        #: check of its expected hash, then its write).
        self._raw: dict[str, Json] = {}

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def raw(self, suffix: str) -> Json:
        path = self._path(suffix)
        if path not in self._raw:
            self._raw[path] = self.client.get(path)
        return self._raw[path]

    def issue_json(self, number: int | str) -> Json:
        return self.raw(f"/issues/{number}")

    def comment_json(self, identity: str) -> Json:
        return self.raw(f"/issues/comments/{identity}")

    def kind(self, number: int) -> ObjectType:
        data = self.issue_json(number)
        return T.PULL_REQUEST if fj.is_pull(data) or fj.is_carrier(data) else T.ISSUE

    def many(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        return {identity: self.one(object_type, identity) for identity in identities}

    def one(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        """One object, ``None`` when it does not exist (or is no such object)."""
        try:
            return self._one(object_type, identity)
        except ObjectNotFound:
            return None

    def _one(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        client, people = self.client, self.people
        if object_type is T.LABEL:
            if not identity.isdigit():
                return None
            return fj.label(client.get(self._path(f"/labels/{identity}")))
        if object_type is T.MILESTONE:
            if not identity.isdigit():
                return None
            return fj.milestone(client.get(self._path(f"/milestones/{identity}")))
        if object_type in (T.ISSUE, T.PULL_REQUEST):
            if not identity.isdigit():
                return None
            data = self.issue_json(identity)
            if is_placeholder(data.get("body")):
                return None
            if fj.is_pull(data):
                obj = fj.pull_request(client.get(self._path(f"/pulls/{identity}")), people)
            elif fj.is_carrier(data):
                obj = fj.pull_request(data, people, carrier=True)
            else:
                obj = fj.issue(data, people)
            return obj if obj.object_type is object_type else None
        if is_carried(identity) and object_type in (
            T.ISSUE_COMMENT,
            T.REVIEW,
            T.REVIEW_COMMENT,
            T.REVIEW_REQUEST,
        ):
            data = self.comment_json(comment_id(identity))
            obj = fj.issue_comment(data, T.PULL_REQUEST, people)
            return obj if obj.object_type is object_type else None
        if object_type is T.ISSUE_COMMENT:
            if not identity.isdigit():
                return None
            data = self.comment_json(identity)
            obj = fj.issue_comment(data, self.kind(fj.parent_number(data)), people)
            return obj if obj.object_type is object_type else None
        if object_type is T.REVIEW:
            return self._review(identity)
        if object_type is T.REVIEW_COMMENT:
            return self._review_comment(identity)
        if object_type is T.REVIEW_REQUEST:  # a native one: "<number>:<login>"
            number, _, login = identity.partition(":")
            if not number.isdigit() or not login:
                return None
            pull = client.get(self._path(f"/pulls/{number}"))
            users = {people.login(u) for u in pull.get("requested_reviewers") or []}
            return fj.review_request(int(number), login) if login in users else None
        if object_type is T.RELEASE:
            if not identity.isdigit():
                return None
            return fj.release(self.raw(f"/releases/{identity}"), people)
        if object_type is T.RELEASE_ASSET:
            return self._asset(identity)
        return None

    def _review(self, identity: str) -> CanonicalObject | None:
        number, _, review_id = identity.partition("/")
        if not (number.isdigit() and review_id.isdigit()):
            return None
        data = self.client.get(self._path(f"/pulls/{number}/reviews/{review_id}"))
        if data.get("state") == fj.REQUESTED:
            return None
        if not (data.get("body") or "").strip() and data.get("comments_count"):
            own = self.client.get(self._path(f"/pulls/{number}/reviews/{review_id}/comments"))
            if fj.is_vessel(data, int(number), own):
                return None
        return fj.review(data, int(number), self.people)

    def _review_comment(self, identity: str) -> CanonicalObject | None:
        parts = identity.split("/")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            return None  # a deleted comment a reply still answers, or no such identity
        number, review_id, comment = parts
        data = self.client.get(
            self._path(f"/pulls/{number}/reviews/{review_id}/comments/{comment}")
        )
        parent = fj.review_identity(data, int(number))
        review = self._review(parent)
        return fj.review_comment(
            data,
            parent,
            review.unique_key if review else None,
            self.people,
            identity=identity,
        )

    def _asset(self, identity: str) -> CanonicalObject | None:
        """An attachment, found through its release (assets come with their release)."""
        for release in self.client.paginate(self._path("/releases")):
            for found in release_assets(self.client, release, {}, only=identity):
                return found
        return None
