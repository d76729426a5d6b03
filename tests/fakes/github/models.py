"""The records the fake stores: users, repositories and everything GitHub keeps in them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tests.fakes.forge_server.models import GitRepo


@dataclass
class User:
    login: str
    id: int
    type: str = "User"  # "User", "Organization" or "Bot"
    name: str | None = None
    app_slug: str | None = None  # set for an app's bot account
    #: An organization's members (logins): they may create its repositories.
    members: set[str] = field(default_factory=set)

    @property
    def node_prefix(self) -> str:
        return {"Bot": "BOT_kgDO", "Organization": "O_kgDO"}.get(self.type, "U_kgDO")


@dataclass
class Label:
    id: int
    name: str
    color: str
    description: str | None = None
    default: bool = False


@dataclass
class Milestone:
    id: int
    number: int
    title: str
    creator: User | None
    created_at: datetime
    updated_at: datetime
    state: str = "open"
    description: str | None = None
    due_on: datetime | None = None
    closed_at: datetime | None = None


@dataclass
class PullInfo:
    id: int
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    draft: bool = False
    maintainer_can_modify: bool = False
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: User | None = None
    merge_commit_sha: str | None = None
    #: Users asked for a review and not yet reviewed (a submitted review removes its
    #: author, as on GitHub).
    requested_reviewers: list[User] = field(default_factory=list)


@dataclass
class Issue:
    """An issue, or the issue half of a pull request (``pull`` is then set)."""

    id: int
    number: int
    title: str
    user: User
    created_at: datetime
    updated_at: datetime
    body: str | None = None
    state: str = "open"
    state_reason: str | None = None
    closed_at: datetime | None = None
    closed_by: User | None = None
    labels: list[int] = field(default_factory=list)  # label ids
    assignees: list[User] = field(default_factory=list)
    milestone: int | None = None  # milestone number
    locked: bool = False
    #: "off-topic", "too heated", "resolved" or "spam"; ``None`` when locked without one.
    active_lock_reason: str | None = None
    via_app: str | None = None  # slug of the app whose installation created it
    pull: PullInfo | None = None

    @property
    def is_pull(self) -> bool:
        return self.pull is not None


@dataclass
class IssueComment:
    id: int
    issue_number: int
    body: str
    user: User
    created_at: datetime
    updated_at: datetime
    via_app: str | None = None


@dataclass
class Review:
    id: int
    pull_number: int
    user: User
    body: str
    state: str  # PENDING, APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
    commit_id: str
    submitted_at: datetime | None = None


@dataclass
class ReviewComment:
    id: int
    pull_number: int
    review_id: int | None
    body: str
    user: User
    path: str
    commit_id: str
    original_commit_id: str
    diff_hunk: str
    created_at: datetime
    updated_at: datetime
    line: int | None = None
    side: str = "RIGHT"
    start_line: int | None = None
    start_side: str | None = None
    position: int | None = None
    in_reply_to_id: int | None = None
    subject_type: str = "line"


@dataclass
class Asset:
    id: int
    release_id: int
    name: str
    content_type: str
    size: int
    digest: str
    path: Path
    uploader: User
    created_at: datetime
    updated_at: datetime
    label: str | None = None
    state: str = "uploaded"
    download_count: int = 0


@dataclass
class Release:
    id: int
    tag_name: str
    target_commitish: str
    author: User
    created_at: datetime
    updated_at: datetime
    name: str | None = None
    body: str | None = None
    draft: bool = False
    prerelease: bool = False
    published_at: datetime | None = None
    assets: list[int] = field(default_factory=list)


@dataclass
class Repo(GitRepo):
    id: int
    owner: User
    name: str
    private: bool
    git_dir: Path
    created_at: datetime
    updated_at: datetime
    pushed_at: datetime | None = None
    description: str | None = None
    #: GitHub Enterprise's "internal" (visible to the enterprise); empty: from ``private``.
    internal: bool = False
    #: The "Wikis" feature: while it is on, the wiki repository (``<name>.wiki.git``) is
    #: created by its first push; while it is off, the wiki is not served at all.
    has_wiki: bool = True
    collaborators: set[str] = field(default_factory=set)
    old_names: list[str] = field(default_factory=list)
    next_number: int = 1
    next_milestone: int = 1
    labels: dict[int, Label] = field(default_factory=dict)
    milestones: dict[int, Milestone] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    comments: dict[int, IssueComment] = field(default_factory=dict)
    reviews: dict[int, Review] = field(default_factory=dict)
    review_comments: dict[int, ReviewComment] = field(default_factory=dict)
    releases: dict[int, Release] = field(default_factory=dict)
    assets: dict[int, Asset] = field(default_factory=dict)

    def label_named(self, name: str) -> Label | None:
        wanted = name.casefold()
        return next((lb for lb in self.labels.values() if lb.name.casefold() == wanted), None)


@dataclass
class App:
    id: int
    slug: str
    client_id: str
    name: str
    owner: User
    public_key_pem: bytes
    bot: User
    created_at: datetime
    permissions: dict[str, str] = field(default_factory=dict)
    #: The OAuth web flow (oauth.py): the client secret, the registered callback URLs
    #: (the first is the default and where an install comes back), and whether an
    #: install asks for user authorization too (then it comes back with a code).
    client_secret: str = ""
    callback_urls: list[str] = field(default_factory=list)
    request_oauth_on_install: bool = True


@dataclass
class Installation:
    id: int
    app: App
    account: User
    repository_selection: str  # "all" or "selected"
    repository_ids: set[int]
    permissions: dict[str, str]
    created_at: datetime
    #: GitHub's lag after an organization install: ``GET /user/installations`` leaves
    #: the installation out until this time, and for this many more listings of it.
    listed_from: datetime | None = None
    unlisted_for: int = 0


#: What a personal access token (classic) may do, by scope (docs.github.com, "Scopes for
#: OAuth apps"): ``repo`` reaches private repositories and writes to any; ``public_repo``
#: writes to public ones only; without either a token only reads public repositories.
REPO_SCOPES = ("repo", "public_repo")


@dataclass
class Token:
    """A credential: a personal access token (classic or fine-grained), an installation
    token or a GitHub App's user access token.

    ``kind`` is ``"classic"`` (``ghp_``: OAuth ``scopes``, answered with
    ``X-OAuth-Scopes``), ``"fine_grained"`` (``github_pat_``: chosen repositories,
    read or write, answered with ``X-Accepted-GitHub-Permissions``), ``"installation"``
    (``ghs_``) or ``"user"`` (``ghu_``).
    """

    value: str
    kind: str
    user: User  # the actor: a person, or the app's bot account
    created_at: datetime
    expires_at: datetime | None = None
    repository_ids: set[int] | None = None  # None: everything the owner can reach
    write: bool = True  # fine-grained tokens: may write
    installation: Installation | None = None
    permissions: dict[str, str] = field(default_factory=dict)  # installation tokens
    #: A user access token (``ghu_``, kind "user") is bound to the App that issued it:
    #: it reaches what both the user and the App's installations reach.
    app: App | None = None
    #: A classic token's OAuth scopes (``None`` for every other kind).
    scopes: tuple[str, ...] | None = None

    @property
    def classic(self) -> bool:
        return self.scopes is not None

    @property
    def rate_key(self) -> str:
        """Whose primary quota the token spends (a user's is shared by all their tokens)."""
        if self.installation is not None:
            return f"installation:{self.installation.id}"
        return f"user:{self.user.login}"
