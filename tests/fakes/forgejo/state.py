"""Everything the Forgejo test server knows, with a Python API to set it up "as in the web
UI": tests may set authors and times the REST API never lets a client set (the API
stamps its writes with the caller and the clock). Every method takes the state's lock,
so tests may call them while the server runs.

Repositories are named ``"owner/name"`` (or passed as a Repo); users by login.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from tests.fakes.forge_server.clock import Clock, whole_seconds
from tests.fakes.forge_server.state import StateBase
from tests.fakes.forgejo.models import (
    Comment,
    Issue,
    Label,
    Milestone,
    PullInfo,
    Release,
    Repo,
    Token,
    User,
)
from tests.fakes.gitserver import bare_repos

RepoRef = str | Repo
UserRef = str | User
#: Who commits a repository's first commit ("Initialize repository" in the web UI).
BOT = ("Forgejo", "noreply@forgejo.test")


#: Kinds of record, each a table whose ids start at 1.
KINDS = (
    "user",
    "repo",
    "issue",
    "comment",
    "label",
    "milestone",
    "review",
    "reaction",
    "release",
    "attachment",
    "hook",
)


class State(StateBase[Repo, User, Token]):
    """Accounts, tokens and repositories of one Forgejo instance."""

    def __init__(self, root: Path, clock: Clock) -> None:
        super().__init__(root, clock, folders=("attachments",), ids=dict.fromkeys(KINDS, 1))
        #: An organization's members (lower-cased logins), by the organization's id.
        self.members: dict[int, set[str]] = {}

    # -- accounts -----------------------------------------------------------------------

    def user(
        self,
        login: UserRef,
        *,
        full_name: str = "",
        email: str | None = None,
        is_admin: bool | None = None,
    ) -> User:
        """The user ``login``, created on first use."""
        if isinstance(login, User):
            return login
        with self.lock:
            found = self._account(
                login,
                lambda id: User(
                    id=id,
                    login=login,
                    created=self.now(),
                    full_name=full_name,
                    email=email if email is not None else f"{login}@noreply.forgejo.test",
                ),
            )
            if is_admin is not None:
                found.is_admin = is_admin
            return found

    def find_user(self, login: str) -> User | None:
        with self.lock:
            return self.users.get(login.casefold())

    def create_org(self, login: str, *, members: Iterable[str] = ()) -> User:
        """An organization; ``members`` may write to its repositories."""
        with self.lock:
            org = self.user(login)
            org.type = "organization"
            org.email = ""
            self.members.setdefault(org.id, set()).update(m.casefold() for m in members)
            for member in members:
                self.user(member)
            return org

    def is_member(self, org: User, login: str) -> bool:
        return login.casefold() in self.members.get(org.id, set())

    def add_token(
        self, login: UserRef, *, scopes: Iterable[str] = ("all",), admin: bool | None = None
    ) -> Token:
        """A personal access token of ``login`` (created if new); ``admin`` makes the
        user a site administrator (what ``Sudo`` needs)."""
        with self.lock:
            user = self.user(login, is_admin=admin)
            value = secrets.token_hex(20)  # Forgejo's tokens are 40 hex digits
            token = Token(value=value, user=user, scopes=frozenset(scopes), created=self.now())
            self.tokens[value] = token
            return token

    # -- repositories -------------------------------------------------------------------

    def create_repo(
        self,
        full_name: str,
        *,
        private: bool = False,
        default_branch: str = "main",
        description: str = "",
        auto_init: bool = False,
        collaborators: Iterable[str] = (),
        has_wiki: bool = True,
    ) -> Repo:
        """A repository with a bare Git repository (one commit if ``auto_init``)."""
        owner_login, name = full_name.split("/", 1)
        with self.lock:
            repo_id, git_dir, now = self._init_repo(full_name, default_branch, auto_init, BOT)
            repo = Repo(
                id=repo_id,
                owner=self.user(owner_login),
                name=name,
                private=private,
                git_dir=git_dir,
                created=now,
                updated=now,
                description=description,
                has_wiki=has_wiki,
                collaborators={c.casefold() for c in collaborators},
            )
            for login in collaborators:
                self.user(login)
            self.repos[repo_id] = repo
            return repo

    def find_repo(self, owner: str, name: str) -> Repo | None:
        return self._lookup(owner, name)

    def add_collaborator(self, ref: RepoRef, login: str) -> None:
        with self.lock:
            self.user(login)
            self.repo(ref).collaborators.add(login.casefold())

    def can_read(self, user: User | None, repo: Repo) -> bool:
        return not repo.private or (user is not None and self.can_write(user, repo))

    def can_write(self, user: User, repo: Repo) -> bool:
        """Owner, collaborator, member of the owning organization, or site admin."""
        if user.is_admin or user.id == repo.owner.id:
            return True
        if user.login.casefold() in repo.collaborators:
            return True
        return repo.owner.is_org and self.is_member(repo.owner, user.login)

    def visible_repos(self, viewer: User | None, owner: User | None = None) -> list[Repo]:
        with self.lock:
            return sorted(
                (
                    r
                    for r in self.repos.values()
                    if (owner is None or r.owner.id == owner.id) and self.can_read(viewer, r)
                ),
                key=lambda r: r.id,
            )

    # -- content, as the web UI (or a migration) would leave it -------------------------

    def create_label(
        self, ref: RepoRef, name: str, color: str = "ededed", description: str = ""
    ) -> Label:
        with self.lock:
            repo = self.repo(ref)
            label = Label(self.next_id("label"), name, color.lstrip("#"), description)
            repo.labels[label.id] = label
            return label

    def create_milestone(
        self, ref: RepoRef, title: str, *, due_on: datetime | None = None, state: str = "open"
    ) -> Milestone:
        with self.lock:
            repo = self.repo(ref)
            now = self.now()
            ms = Milestone(self.next_id("milestone"), title, now, now, due_on=due_on, state=state)
            if state == "closed":
                ms.closed_at = now
            repo.milestones[ms.id] = ms
            return ms

    def next_index(self, repo: Repo) -> int:
        """The repository's next issue-or-pull-request number (one index for both)."""
        with self.lock:
            index = repo.next_index
            repo.next_index += 1
            return index

    def create_issue(
        self,
        ref: RepoRef,
        title: str,
        *,
        author: UserRef,
        body: str = "",
        created: datetime | None = None,
        state: str = "open",
        labels: Iterable[int] = (),
    ) -> Issue:
        """An issue by ``author`` at ``created`` (what the API stamps itself)."""
        with self.lock:
            repo = self.repo(ref)
            when = whole_seconds(created) if created is not None else self.now()
            issue = Issue(
                id=self.next_id("issue"),
                index=self.next_index(repo),
                title=title,
                poster=self.user(author),
                created=when,
                updated=when,
                body=body,
                state=state,
                closed_at=when if state == "closed" else None,
                labels=list(labels),
            )
            repo.issues[issue.index] = issue
            return issue

    def create_pull(
        self,
        ref: RepoRef,
        title: str,
        head: str,
        base: str,
        *,
        author: UserRef,
        body: str = "",
        created: datetime | None = None,
    ) -> Issue:
        """A pull request of branch ``head`` into ``base``, by ``author`` at ``created``."""
        with self.lock:
            repo = self.repo(ref)
            issue = self.create_issue(repo, title, author=author, body=body, created=created)
            issue.pull = self.pull_info(repo, head, base)
            bare_repos.set_ref(repo.git_dir, f"refs/pull/{issue.index}/head", issue.pull.head_sha)
            return issue

    def pull_info(self, repo: Repo, head: str, base: str) -> PullInfo:
        head_sha = bare_repos.branch_sha(repo.git_dir, head)
        base_sha = bare_repos.branch_sha(repo.git_dir, base)
        if head_sha is None or base_sha is None:
            raise ValueError(f"{repo.full_name} has no branch {head if head_sha is None else base}")
        merge_base = bare_repos.merge_base(repo.git_dir, base_sha, head_sha) or base_sha
        return PullInfo(head_ref=head, head_sha=head_sha, base_ref=base, merge_base=merge_base)

    def create_comment(
        self,
        ref: RepoRef,
        index: int,
        body: str,
        *,
        author: UserRef,
        created: datetime | None = None,
    ) -> Comment:
        with self.lock:
            repo = self.repo(ref)
            when = whole_seconds(created) if created is not None else self.now()
            comment = Comment(self.next_id("comment"), index, body, self.user(author), when, when)
            repo.comments[comment.id] = comment
            return comment

    def sync_pull_heads(self, repo: Repo) -> list[Issue]:
        """After a push: open pull requests follow their head branches; the ones that
        moved (Forgejo's ``synchronized``)."""
        moved = []
        with self.lock:
            for issue in repo.issues.values():
                pull = issue.pull
                if pull is None or pull.merged or issue.state != "open":
                    continue
                sha = bare_repos.branch_sha(repo.git_dir, pull.head_ref)
                if sha is not None and sha != pull.head_sha:
                    pull.head_sha = sha
                    bare_repos.set_ref(repo.git_dir, f"refs/pull/{issue.index}/head", sha)
                    issue.updated = self.now()
                    moved.append(issue)
        return moved

    def release_by_tag(self, repo: Repo, tag: str) -> Release | None:
        return next((r for r in repo.releases.values() if r.tag_name == tag), None)
