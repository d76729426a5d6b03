"""What a repository's listings held at the last Run, kept so the next reads only changes.

Forgejo answers its JSON API without ETags, so an unchanged listing costs as much as a
changed one. What it offers instead is ``since`` (issues and comments updated since a
time) and counts (``X-Total-Count``). A ``Snapshot`` keeps the last listing of a
repository's conversations (issues and pull requests with their reviews) and comments,
each with the time, on the instance's own clock, it was taken; the next Run asks only
for what changed since (less a margin for writes in flight) and counts the rest:

* a changed issue or pull request is listed by ``since`` (Forgejo moves an issue's
  update time with every comment of its timeline: a review, a label, an assignee, a
  closing), and only its pull request and reviews are read again;
* a deleted one is noticed by the count: the listing's total no longer equals what the
  snapshot holds with the changes, and everything is listed afresh;
* comments alike, by their own update times and count.

Labels, milestones and releases have neither, and are listed whole every Run (a page
each, as a rule). A snapshot is no truth: one older than ``MAX_AGE``, of another
version, or unreadable is ignored and the repository listed whole, so what Forgejo does
not signal (a review comment's edit, which moves no update time) is seen within a day.

Snapshots live in the data directory, one file per repository and token (what a token
sees differs), readable by the service's user only (``reposync.files``): they hold the
repository's content, as GitHub's ETag cache does.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reposync.files import private_dir, write_private

log = logging.getLogger(__name__)

VERSION = 1
#: A snapshot older than this is not trusted: the repository is listed whole again.
MAX_AGE = timedelta(hours=24)
#: ``since`` starts this long before the last listing: a write in flight then (its update
#: time before the listing, its commit after) is read again rather than missed.
SINCE_MARGIN = timedelta(seconds=10)

Json = dict[str, Any]


def _user(user: Any) -> Json | None:
    return {"login": user.get("login")} if isinstance(user, Mapping) else None


def _keep(data: Mapping[str, Any], keys: tuple[str, ...]) -> Json:
    return {key: data.get(key) for key in keys if key in data}


_CONVERSATION = (
    "id",
    "number",
    "title",
    "body",
    "state",
    "created_at",
    "updated_at",
    "closed_at",
    "is_locked",
    "merged",
    "merged_at",
    "draft",
)


def trim_issue(data: Mapping[str, Any]) -> Json:
    """An issue's or pull request's JSON with only what the mappers read."""
    kept = _keep(data, _CONVERSATION)
    kept["user"] = _user(data.get("user"))
    kept["assignees"] = [_user(a) for a in data.get("assignees") or []] or None
    kept["labels"] = [{"name": lb.get("name")} for lb in data.get("labels") or []]
    milestone = data.get("milestone")
    kept["milestone"] = (
        {"title": milestone.get("title")} if isinstance(milestone, Mapping) else None
    )
    pull = data.get("pull_request")
    if isinstance(pull, Mapping):
        kept["pull_request"] = _keep(pull, ("merged", "merged_at", "draft"))
    for side in ("head", "base"):
        branch = data.get(side)
        if isinstance(branch, Mapping):
            kept[side] = _keep(branch, ("ref", "sha"))
    if "requested_reviewers" in data:
        kept["requested_reviewers"] = [_user(u) for u in data.get("requested_reviewers") or []]
    return kept


def trim_comment(data: Mapping[str, Any]) -> Json:
    kept = _keep(
        data,
        (
            "id",
            "body",
            "created_at",
            "updated_at",
            "issue_url",
            "pull_request_url",
            "path",
            "commit_id",
            "position",
            "original_position",
            "pull_request_review_id",
        ),
    )
    kept["user"] = _user(data.get("user"))
    return kept


def trim_review(data: Mapping[str, Any], comments: list[Json]) -> Json:
    kept = _keep(
        data,
        (
            "id",
            "state",
            "body",
            "commit_id",
            "submitted_at",
            "updated_at",
            "dismissed",
            "comments_count",
        ),
    )
    kept["user"] = _user(data.get("user"))
    kept["comments"] = comments
    return kept


@dataclass(slots=True)
class Snapshot:
    """One repository's conversations and comments as last listed."""

    #: When each part was listed (the instance's clock, less ``SINCE_MARGIN``); ``None``:
    #: never, or not to be trusted.
    issues_since: datetime | None = None
    comments_since: datetime | None = None
    #: When the snapshot was first filled whole (this machine's clock): ``MAX_AGE``.
    taken: datetime | None = None
    issues: dict[str, Json] = field(default_factory=dict)  # number -> issue JSON
    pulls: dict[str, Json] = field(default_factory=dict)  # number -> pull JSON
    reviews: dict[str, list[Json]] = field(default_factory=dict)  # number -> reviews
    comments: dict[str, Json] = field(default_factory=dict)  # id -> comment JSON
    #: Attachment uuid -> sha256 of its bytes (an attachment's bytes never change).
    digests: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> Json:
        return {
            "version": VERSION,
            "issues_since": _time(self.issues_since),
            "comments_since": _time(self.comments_since),
            "taken": _time(self.taken),
            "issues": self.issues,
            "pulls": self.pulls,
            "reviews": self.reviews,
            "comments": self.comments,
            "digests": self.digests,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        return cls(
            issues_since=_parse(data.get("issues_since")),
            comments_since=_parse(data.get("comments_since")),
            taken=_parse(data.get("taken")),
            issues=dict(data.get("issues") or {}),
            pulls=dict(data.get("pulls") or {}),
            reviews=dict(data.get("reviews") or {}),
            comments=dict(data.get("comments") or {}),
            digests=dict(data.get("digests") or {}),
        )


class SnapshotStore:
    """Where one repository's snapshot is kept (``None`` directory: nowhere)."""

    def __init__(self, directory: Path | None, key: str) -> None:
        digest = hashlib.sha256(key.encode()).hexdigest()
        self.path = None if directory is None else directory / f"{digest}.json"

    def load(self, now: datetime) -> Snapshot:
        """The kept snapshot, or an empty one when there is none to trust."""
        if self.path is None:
            return Snapshot()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Snapshot()
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return Snapshot()
        snapshot = Snapshot.from_json(data)
        if snapshot.taken is None or now - snapshot.taken > MAX_AGE:
            return Snapshot(digests=snapshot.digests)
        return snapshot

    def save(self, snapshot: Snapshot) -> None:
        if self.path is None:
            return
        try:
            private_dir(self.path.parent)
            write_private(self.path, json.dumps(snapshot.to_json(), separators=(",", ":")))
        except OSError as exc:  # a cache that cannot be written costs reads, nothing else
            log.warning("cannot keep the Forgejo listing snapshot %s: %s", self.path, exc)


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
