"""The records the Forgejo test server keeps: accounts, tokens, repositories and what is in
them, shaped after Forgejo's own tables (models/ in Forgejo's source) where it matters.

Ids are sequences per table, as Forgejo's database keeps them; issues and pull requests
share one ``index`` per repository (a pull request is an issue with ``pull`` set), and a
review's line comments are rows of the same table as issue comments, so they take ids
from one sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tests.fakes.forge_server.models import GitRepo


@dataclass
class User:
    """A person (``type`` "user") or an organization ("organization")."""

    id: int
    login: str
    created: datetime
    full_name: str = ""
    email: str = ""
    is_admin: bool = False
    type: str = "user"
    description: str = ""

    @property
    def is_org(self) -> bool:
        return self.type == "organization"


@dataclass
class Token:
    """An access token: ``scopes`` as Forgejo names them (``read:repository``,
    ``write:issue``, ... or ``all``); write implies read of the same category."""

    value: str
    user: User
    scopes: frozenset[str]
    created: datetime

    def allows(self, category: str, write: bool) -> bool:
        if "all" in self.scopes or f"write:{category}" in self.scopes:
            return True
        return not write and f"read:{category}" in self.scopes


@dataclass
class Label:
    id: int
    name: str
    color: str
    description: str = ""
    exclusive: bool = False
    is_archived: bool = False


@dataclass
class Milestone:
    id: int
    title: str
    created: datetime
    updated: datetime
    description: str = ""
    state: str = "open"
    due_on: datetime | None = None
    closed_at: datetime | None = None


@dataclass
class PullInfo:
    head_ref: str
    head_sha: str
    base_ref: str
    merge_base: str
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: User | None = None
    merge_commit_sha: str | None = None
    allow_maintainer_edit: bool = False
    draft: bool = False
    requested_reviewers: list[User] = field(default_factory=list)


@dataclass
class Issue:
    """An issue, or the issue half of a pull request (``pull`` set)."""

    id: int
    index: int
    title: str
    poster: User
    created: datetime
    updated: datetime
    body: str = ""
    state: str = "open"
    closed_at: datetime | None = None
    labels: list[int] = field(default_factory=list)
    milestone: int | None = None
    assignees: list[User] = field(default_factory=list)
    is_locked: bool = False
    due_date: datetime | None = None
    ref: str = ""
    pull: PullInfo | None = None


@dataclass
class Comment:
    """A comment on an issue or pull request, or a review's line comment (``review_id``)."""

    id: int
    index: int  # the issue's or pull request's
    body: str
    poster: User
    created: datetime
    updated: datetime
    review_id: int | None = None
    path: str = ""
    line: int = 0  # > 0: a line of the new file; < 0: of the old one (Forgejo's sign)
    commit_id: str = ""
    diff_hunk: str = ""


@dataclass
class Review:
    id: int
    index: int
    reviewer: User
    state: str  # PENDING, APPROVED, REQUEST_CHANGES, COMMENT, REQUEST_REVIEW
    body: str
    commit_id: str
    created: datetime
    updated: datetime
    submitted: datetime | None = None
    dismissed: bool = False
    official: bool = False
    stale: bool = False


@dataclass
class Reaction:
    id: int
    user: User
    content: str
    created: datetime
    index: int  # the issue's
    comment_id: int | None = None


@dataclass
class Attachment:
    id: int
    uuid: str
    name: str
    size: int
    path: Path
    uploader: User
    created: datetime
    release_id: int
    download_count: int = 0


@dataclass
class Release:
    id: int
    tag_name: str
    target: str
    author: User
    created: datetime
    title: str = ""
    note: str = ""
    draft: bool = False
    prerelease: bool = False
    hide_archive_links: bool = False
    attachments: list[int] = field(default_factory=list)


@dataclass
class Repo(GitRepo):
    id: int
    owner: User
    name: str
    private: bool
    git_dir: Path
    created: datetime
    updated: datetime
    description: str = ""
    website: str = ""
    has_wiki: bool = True
    archived: bool = False
    collaborators: set[str] = field(default_factory=set)
    next_index: int = 1
    labels: dict[int, Label] = field(default_factory=dict)
    milestones: dict[int, Milestone] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)  # by index
    comments: dict[int, Comment] = field(default_factory=dict)
    reviews: dict[int, Review] = field(default_factory=dict)
    reactions: list[Reaction] = field(default_factory=list)
    releases: dict[int, Release] = field(default_factory=dict)
    attachments: dict[int, Attachment] = field(default_factory=dict)
