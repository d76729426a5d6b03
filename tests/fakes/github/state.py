"""Everything the fake GitHub knows, with a Python API for tests to set it up and read it.

Tests act "as in the web UI": they may set numbers, authors and timestamps that the REST
API can never set. Repositories are named ``"owner/name"`` (or passed as a Repo).
Every method takes the state's lock, so tests may call them while the server runs.

Why one class of ~800 lines: it is the one object model and the one lock that every route,
the Git server and every test share; split into files, each family (users, repositories,
labels, issues, pull requests, releases, credentials: the sections below) would still
reach into the others' records under the same lock. Grow it by family; a family that
outgrows its section is the place to cut a mixin.
"""

from __future__ import annotations

import hashlib
import secrets
import string
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

from tests.fakes.forge_server.clock import Clock
from tests.fakes.forge_server.state import StateBase
from tests.fakes.github.models import (
    App,
    Asset,
    Installation,
    Issue,
    IssueComment,
    Label,
    Milestone,
    PullInfo,
    Release,
    Repo,
    Review,
    ReviewComment,
    Token,
    User,
)
from tests.fakes.gitserver import bare_repos

DEFAULT_APP_PERMISSIONS = {
    "metadata": "read",
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
}
INSTALLATION_TOKEN_LIFETIME = timedelta(hours=1)
RepoRef = str | Repo
UserRef = str | User


def _random_token(prefix: str) -> str:
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(36))


#: Kinds of record and the first id of each, of the magnitude of GitHub's ids.
FIRST_IDS = {
    "user": 1_000_001,
    "repo": 700_000_001,
    "issue": 2_000_000_001,
    "pull": 1_500_000_001,
    "comment": 3_000_000_001,
    "label": 4_000_000_001,
    "milestone": 5_000_001,
    "review": 2_500_000_001,
    "review_comment": 1_800_000_001,
    "release": 150_000_001,
    "asset": 250_000_001,
    "app": 900_001,
    "installation": 40_000_001,
}


class State(StateBase[Repo, User, Token]):
    def __init__(self, root: Path, clock: Clock) -> None:
        super().__init__(root, clock, folders=("assets",), ids=FIRST_IDS)
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        #: Signs the asset download URLs the API redirects to (signed_urls.py).
        self.signing_key = secrets.token_bytes(32)
        #: Seconds after its creation that a repository is not yet served by the Git host
        #: (it answers "Repository not found" while the API shows it): github.com's own
        #: lag, which a push right after creating a repository through the API meets.
        #: Real seconds, whatever the clock; 0 (the default): served at once.
        self.git_lag = 0.0
        self._git_ready: dict[int, float] = {}

    # -- users --------------------------------------------------------------------------

    def user(self, login: UserRef, *, type: str = "User", name: str | None = None) -> User:
        """The user ``login``, created on first use."""
        if isinstance(login, User):
            return login
        return self._account(login, lambda id: User(login=login, id=id, type=type, name=name))

    def add_member(self, org: str, login: str) -> User:
        """Make ``login`` a member of the organization ``org`` (both created on first use):
        a member may create the organization's repositories."""
        with self.lock:
            organization = self.user(org, type="Organization")
            organization.members.add(self.user(login).login)
            return organization

    # -- repositories -------------------------------------------------------------------

    def create_repo(
        self,
        full_name: str,
        *,
        private: bool = False,
        default_branch: str = "main",
        description: str | None = None,
        auto_init: bool = False,
        collaborators: Iterable[str] = (),
        has_wiki: bool = True,
    ) -> Repo:
        """A repository with an empty bare Git repository (one commit if ``auto_init``)."""
        owner_login, name = full_name.split("/", 1)
        with self.lock:
            repo_id, git_dir, now = self._init_repo(full_name, default_branch, auto_init)
            repo = Repo(
                id=repo_id,
                owner=self.user(owner_login),
                name=name,
                private=private,
                git_dir=git_dir,
                created_at=now,
                updated_at=now,
                pushed_at=now if auto_init else None,
                description=description,
                collaborators=set(collaborators),
                has_wiki=has_wiki,
            )
            self.repos[repo_id] = repo
            if self.git_lag:
                self._git_ready[repo_id] = time.monotonic() + self.git_lag
            return repo

    def served_to_git(self, repo: Repo) -> bool:
        """Whether the Git host serves ``repo`` yet (``git_lag``)."""
        return time.monotonic() >= self._git_ready.get(repo.id, 0.0)

    def find_repo(self, owner: str, name: str) -> tuple[Repo | None, bool]:
        """The repository by its name, or by a former name (then ``moved`` is True)."""
        with self.lock:
            repo = self._lookup(owner, name)
            if repo is not None:
                return repo, False
            for candidate in self.repos.values():
                if candidate.owner.login.casefold() == owner.casefold() and any(
                    old.casefold() == name.casefold() for old in candidate.old_names
                ):
                    return candidate, True
            return None, False

    def rename_repo(self, ref: RepoRef, new_name: str) -> Repo:
        """Rename (as in Settings): the id stays, the old name redirects."""
        with self.lock:
            repo = self.repo(ref)
            repo.old_names.append(repo.name)
            repo.name = new_name
            repo.updated_at = self.now()
            return repo

    def add_collaborator(self, ref: RepoRef, login: str) -> None:
        with self.lock:
            self.user(login)
            self.repo(ref).collaborators.add(login)

    def git_dir(self, ref: RepoRef) -> Path:
        return self.repo(ref).git_dir

    def wiki_dir(self, ref: RepoRef) -> Path:
        """Where the repository's wiki is (or will be, once a push creates it)."""
        return self.repo(ref).wiki_dir

    def create_wiki_page(self, ref: RepoRef, title: str = "Home", body: str = "Welcome") -> str:
        """A human saves the wiki's first page in the browser: the wiki's repository
        exists from then on. The commit's id."""
        with self.lock:
            repo = self.repo(ref)
            return bare_repos.first_wiki_page(repo.wiki_dir, title, body, self.now())

    # -- labels and milestones ----------------------------------------------------------

    def add_label(
        self,
        ref: RepoRef,
        name: str,
        *,
        color: str = "ededed",
        description: str | None = None,
        default: bool = False,
    ) -> Label:
        with self.lock:
            repo = self.repo(ref)
            if repo.label_named(name) is not None:
                raise ValueError(f"label {name!r} exists")
            label = Label(self.next_id("label"), name, color.lower(), description, default)
            repo.labels[label.id] = label
            return label

    def add_milestone(
        self,
        ref: RepoRef,
        title: str,
        *,
        state: str = "open",
        description: str | None = None,
        due_on: datetime | None = None,
        creator: UserRef | None = None,
        number: int | None = None,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        closed_at: datetime | None = None,
    ) -> Milestone:
        with self.lock:
            repo = self.repo(ref)
            number = self._claim(repo, number, milestone=True)
            created = created_at or self.now()
            closed = closed_at or (created if state == "closed" else None)
            ms = Milestone(
                id=self.next_id("milestone"),
                number=number,
                title=title,
                creator=self.user(creator) if creator else repo.owner,
                created_at=created,
                updated_at=updated_at or created,
                state=state,
                description=description,
                due_on=due_on,
                closed_at=closed,
            )
            repo.milestones[number] = ms
            return ms

    def _claim(self, repo: Repo, number: int | None, *, milestone: bool = False) -> int:
        taken = repo.milestones if milestone else repo.issues
        if number is None:
            number = repo.next_milestone if milestone else repo.next_number
        if number in taken or number < 1:
            raise ValueError(f"number {number} is taken in {repo.full_name}")
        if milestone:
            repo.next_milestone = max(repo.next_milestone, number + 1)
        else:
            repo.next_number = max(repo.next_number, number + 1)
        return number

    # -- issues and comments ------------------------------------------------------------

    def add_issue(
        self,
        ref: RepoRef,
        title: str,
        *,
        author: UserRef | None = None,
        body: str | None = None,
        number: int | None = None,
        state: str = "open",
        state_reason: str | None = None,
        labels: Iterable[str] = (),
        milestone: int | None = None,
        assignees: Iterable[str] = (),
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        closed_at: datetime | None = None,
        via_app: str | None = None,
    ) -> Issue:
        """An issue as if made in the UI; unknown label names are created."""
        with self.lock:
            repo = self.repo(ref)
            number = self._claim(repo, number)
            created = created_at or self.now()
            closed = closed_at or (created if state == "closed" else None)
            issue = Issue(
                id=self.next_id("issue"),
                number=number,
                title=title,
                user=self.user(author) if author else repo.owner,
                created_at=created,
                updated_at=updated_at or closed or created,
                body=body,
                state=state,
                state_reason=state_reason or ("completed" if state == "closed" else None),
                closed_at=closed,
                closed_by=(self.user(author) if author else repo.owner) if closed else None,
                labels=[self.label_for(repo, name).id for name in labels],
                assignees=[self.user(a) for a in assignees],
                milestone=milestone,
                via_app=via_app,
            )
            repo.issues[number] = issue
            return issue

    def label_for(self, repo: Repo, name: str) -> Label:
        """The label ``name``, created with GitHub's default colour when missing."""
        found = repo.label_named(name)
        return found if found is not None else self.add_label(repo, name)

    def add_comment(
        self,
        ref: RepoRef,
        number: int,
        body: str,
        *,
        author: UserRef | None = None,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        via_app: str | None = None,
        touch_issue: bool = False,
    ) -> IssueComment:
        with self.lock:
            repo = self.repo(ref)
            if number not in repo.issues:
                raise KeyError(f"{repo.full_name}#{number}")
            created = created_at or self.now()
            comment = IssueComment(
                id=self.next_id("comment"),
                issue_number=number,
                body=body,
                user=self.user(author) if author else repo.owner,
                created_at=created,
                updated_at=updated_at or created,
                via_app=via_app,
            )
            repo.comments[comment.id] = comment
            if touch_issue:
                repo.issues[number].updated_at = max(repo.issues[number].updated_at, created)
            return comment

    # -- pull requests ------------------------------------------------------------------

    def add_pull(
        self,
        ref: RepoRef,
        title: str,
        *,
        head: str,
        base: str | None = None,
        author: UserRef | None = None,
        body: str | None = None,
        number: int | None = None,
        draft: bool = False,
        state: str = "open",
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        via_app: str | None = None,
    ) -> Issue:
        """A pull request from branch ``head`` into ``base``; writes ``refs/pull/N/head``."""
        with self.lock:
            repo = self.repo(ref)
            base = base or repo.default_branch
            head_sha = bare_repos.branch_sha(repo.git_dir, head)
            base_sha = bare_repos.branch_sha(repo.git_dir, base)
            if head_sha is None or base_sha is None:
                raise ValueError(f"{repo.full_name}: branch {head!r} or {base!r} is missing")
            issue = self.add_issue(
                repo,
                title,
                author=author,
                body=body,
                number=number,
                state=state,
                created_at=created_at,
                updated_at=updated_at,
                via_app=via_app,
            )
            issue.state_reason = None
            issue.pull = PullInfo(
                id=self.next_id("pull"),
                head_ref=head,
                head_sha=head_sha,
                base_ref=base,
                base_sha=base_sha,
                draft=draft,
            )
            bare_repos.set_ref(repo.git_dir, f"refs/pull/{issue.number}/head", head_sha)
            return issue

    def merge_pull(
        self,
        ref: RepoRef,
        number: int,
        *,
        merged_by: UserRef | None = None,
        at: datetime | None = None,
        message: str | None = None,
    ) -> Issue:
        """Merge as the merge button does: a merge commit on the base branch; PR closed."""
        with self.lock:
            repo = self.repo(ref)
            issue = repo.issues[number]
            pr = issue.pull
            if pr is None or pr.merged:
                raise ValueError(f"{repo.full_name}#{number} is not an unmerged pull request")
            when = at or self.now()
            who = self.user(merged_by) if merged_by else repo.owner
            sha = bare_repos.merge(
                repo.git_dir,
                pr.base_ref,
                pr.head_sha,
                message or f"Merge pull request #{number} from {repo.owner.login}/{pr.head_ref}",
                (who.login, f"{who.id}+{who.login}@users.noreply.github.com"),
                when,
            )
            pr.merged, pr.merged_at, pr.merged_by, pr.merge_commit_sha = True, when, who, sha
            issue.state, issue.closed_at, issue.closed_by = "closed", when, who
            issue.updated_at = when
            repo.pushed_at = when
            return issue

    def sync_pull_heads(self, repo: Repo) -> None:
        """After a push: open pull requests follow their branches (and refs/pull/N/head)."""
        with self.lock:
            for issue in repo.issues.values():
                pr = issue.pull
                if pr is None or issue.state != "open":
                    continue
                head = bare_repos.branch_sha(repo.git_dir, pr.head_ref)
                base = bare_repos.branch_sha(repo.git_dir, pr.base_ref)
                if head is not None and head != pr.head_sha:
                    pr.head_sha = head
                    bare_repos.set_ref(repo.git_dir, f"refs/pull/{issue.number}/head", head)
                    issue.updated_at = self.now()
                if base is not None:
                    pr.base_sha = base

    def add_review(
        self,
        ref: RepoRef,
        number: int,
        *,
        author: UserRef | None = None,
        state: str = "COMMENTED",
        body: str = "",
        commit_id: str | None = None,
        submitted_at: datetime | None = None,
    ) -> Review:
        with self.lock:
            repo = self.repo(ref)
            pr = repo.issues[number].pull
            assert pr is not None, f"#{number} is not a pull request"
            review = Review(
                id=self.next_id("review"),
                pull_number=number,
                user=self.user(author) if author else repo.owner,
                body=body,
                state=state,
                commit_id=commit_id or pr.head_sha,
                submitted_at=None if state == "PENDING" else (submitted_at or self.now()),
            )
            repo.reviews[review.id] = review
            return review

    def add_review_comment(
        self,
        ref: RepoRef,
        number: int,
        *,
        body: str,
        path: str,
        line: int | None = None,
        side: str = "RIGHT",
        author: UserRef | None = None,
        commit_id: str | None = None,
        review_id: int | None = None,
        in_reply_to: int | None = None,
        diff_hunk: str = "",
        position: int | None = None,
        start_line: int | None = None,
        start_side: str | None = None,
        subject_type: str = "line",
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
    ) -> ReviewComment:
        """A review comment; without ``review_id`` a COMMENTED review is made for it."""
        with self.lock:
            repo = self.repo(ref)
            pr = repo.issues[number].pull
            assert pr is not None, f"#{number} is not a pull request"
            who = self.user(author) if author else repo.owner
            created = created_at or self.now()
            if review_id is None:
                review_id = self.add_review(
                    repo, number, author=who, commit_id=commit_id, submitted_at=created
                ).id
            comment = ReviewComment(
                id=self.next_id("review_comment"),
                pull_number=number,
                review_id=review_id,
                body=body,
                user=who,
                path=path,
                commit_id=commit_id or pr.head_sha,
                original_commit_id=commit_id or pr.head_sha,
                diff_hunk=diff_hunk,
                created_at=created,
                updated_at=updated_at or created,
                line=line,
                side=side,
                start_line=start_line,
                start_side=start_side,
                position=position,
                in_reply_to_id=in_reply_to,
                subject_type=subject_type,
            )
            repo.review_comments[comment.id] = comment
            return comment

    # -- releases and assets ------------------------------------------------------------

    def add_release(
        self,
        ref: RepoRef,
        tag_name: str,
        *,
        title: str | None = None,
        body: str | None = None,
        draft: bool = False,
        prerelease: bool = False,
        target_commitish: str | None = None,
        author: UserRef | None = None,
        created_at: datetime | None = None,
    ) -> Release:
        """A release; publishing one whose tag is missing tags ``target_commitish``."""
        with self.lock:
            repo = self.repo(ref)
            target = target_commitish or repo.default_branch
            if not draft and not bare_repos.tag_exists(repo.git_dir, tag_name):
                sha = bare_repos.resolve_commit(repo.git_dir, target)
                if sha is None:
                    raise ValueError(f"{repo.full_name}: cannot tag {target!r}")
                bare_repos.set_ref(repo.git_dir, f"refs/tags/{tag_name}", sha)
            created = created_at or self.now()
            release = Release(
                id=self.next_id("release"),
                tag_name=tag_name,
                target_commitish=target,
                author=self.user(author) if author else repo.owner,
                created_at=created,
                updated_at=created,
                name=title,
                body=body,
                draft=draft,
                prerelease=prerelease,
                published_at=None if draft else created,
            )
            repo.releases[release.id] = release
            return release

    def add_asset(
        self,
        ref: RepoRef,
        release_id: int,
        name: str,
        data: bytes,
        *,
        content_type: str = "application/octet-stream",
        label: str | None = None,
        uploader: UserRef | None = None,
    ) -> Asset:
        with self.lock:
            repo = self.repo(ref)
            asset_id = self.next_id("asset")
            path = self.root / "assets" / str(asset_id)
            path.write_bytes(data)
            return self.store_asset(
                repo,
                repo.releases[release_id],
                asset_id,
                name,
                path,
                content_type=content_type,
                label=label,
                uploader=self.user(uploader) if uploader else repo.owner,
                digest="sha256:" + hashlib.sha256(data).hexdigest(),
            )

    def store_asset(
        self,
        repo: Repo,
        release: Release,
        asset_id: int,
        name: str,
        path: Path,
        *,
        content_type: str,
        label: str | None,
        uploader: User,
        digest: str,
    ) -> Asset:
        now = self.now()
        asset = Asset(
            id=asset_id,
            release_id=release.id,
            name=name,
            content_type=content_type,
            size=path.stat().st_size,
            digest=digest,
            path=path,
            uploader=uploader,
            created_at=now,
            updated_at=now,
            label=label,
        )
        repo.assets[asset.id] = asset
        release.assets.append(asset.id)
        return asset

    # -- reading ------------------------------------------------------------------------

    def issues(self, ref: RepoRef, *, pulls: bool = False) -> list[Issue]:
        """Issues by number (only pull requests if ``pulls``)."""
        with self.lock:
            repo = self.repo(ref)
            return [i for _, i in sorted(repo.issues.items()) if i.is_pull == pulls]

    def pulls(self, ref: RepoRef) -> list[Issue]:
        return self.issues(ref, pulls=True)

    def issue(self, ref: RepoRef, number: int) -> Issue:
        with self.lock:
            return self.repo(ref).issues[number]

    def comments(self, ref: RepoRef, number: int | None = None) -> list[IssueComment]:
        with self.lock:
            repo = self.repo(ref)
            found = sorted(repo.comments.values(), key=lambda c: c.id)
            return [c for c in found if number is None or c.issue_number == number]

    def labels(self, ref: RepoRef) -> list[Label]:
        with self.lock:
            return sorted(self.repo(ref).labels.values(), key=lambda lb: lb.id)

    def milestones(self, ref: RepoRef) -> list[Milestone]:
        with self.lock:
            return [m for _, m in sorted(self.repo(ref).milestones.items())]

    def reviews(self, ref: RepoRef, number: int | None = None) -> list[Review]:
        with self.lock:
            found = sorted(self.repo(ref).reviews.values(), key=lambda r: r.id)
            return [r for r in found if number is None or r.pull_number == number]

    def review_comments(self, ref: RepoRef, number: int | None = None) -> list[ReviewComment]:
        with self.lock:
            found = sorted(self.repo(ref).review_comments.values(), key=lambda c: c.id)
            return [c for c in found if number is None or c.pull_number == number]

    def releases(self, ref: RepoRef) -> list[Release]:
        with self.lock:
            return sorted(self.repo(ref).releases.values(), key=lambda r: r.id)

    def assets(self, ref: RepoRef, release_id: int) -> list[Asset]:
        with self.lock:
            repo = self.repo(ref)
            return [repo.assets[i] for i in repo.releases[release_id].assets]

    # -- credentials --------------------------------------------------------------------

    def add_token(
        self,
        login: str,
        *,
        repositories: Iterable[str] | None = None,
        write: bool = True,
        token: str | None = None,
        expires_at: datetime | None = None,
        scopes: Iterable[str] | None = None,
    ) -> str:
        """A personal access token of ``login``.

        By default a classic token (``ghp_``) with the ``repo`` scope: it reaches every
        repository ``login`` owns or collaborates on; ``scopes`` gives it others (``()``:
        none, public reads only; ``("public_repo",)``: writes to public repositories).
        ``repositories`` (full names) or ``write=False`` make it a fine-grained token
        (``github_pat_``) instead, narrowed to those repositories and/or read-only.
        """
        fine_grained = repositories is not None or not write
        if fine_grained and scopes is not None:
            raise ValueError("a fine-grained token has permissions, not scopes")
        with self.lock:
            value = token or _random_token("github_pat_" if fine_grained else "ghp_")
            ids = None if repositories is None else {self.repo(r).id for r in repositories}
            self.tokens[value] = Token(
                value=value,
                kind="fine_grained" if fine_grained else "classic",
                user=self.user(login),
                created_at=self.now(),
                expires_at=expires_at,
                repository_ids=ids,
                write=write,
                scopes=None if fine_grained else tuple(scopes if scopes is not None else ("repo",)),
            )
            return value

    def revoke_token(self, value: str) -> None:
        with self.lock:
            self.tokens.pop(value, None)

    def register_app(
        self,
        public_key_pem: bytes,
        *,
        slug: str = "reposync-test",
        name: str = "reposync test",
        owner: str = "reposync-dev",
        client_id: str | None = None,
        permissions: dict[str, str] | None = None,
    ) -> App:
        """A GitHub App; its bot account is ``<slug>[bot]`` (type Bot)."""
        with self.lock:
            app_id = self.next_id("app")
            bot = self.user(f"{slug}[bot]", type="Bot")
            bot.app_slug = slug
            app = App(
                id=app_id,
                slug=slug,
                client_id=client_id or f"Iv23li{secrets.token_hex(7)}",
                name=name,
                owner=self.user(owner),
                public_key_pem=public_key_pem,
                bot=bot,
                created_at=self.now(),
                permissions=dict(permissions or DEFAULT_APP_PERMISSIONS),
            )
            self.apps[app_id] = app
            return app

    def install_app(
        self,
        app: App | int,
        account: str,
        *,
        repositories: Iterable[str] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> Installation:
        """Install ``app`` on ``account``: all its repositories, or only ``repositories``."""
        with self.lock:
            app = self.apps[app] if isinstance(app, int) else app
            ids = {self.repo(r).id for r in repositories} if repositories is not None else set()
            inst = Installation(
                id=self.next_id("installation"),
                app=app,
                account=self.user(account),
                repository_selection="all" if repositories is None else "selected",
                repository_ids=ids,
                permissions=dict(permissions or app.permissions),
                created_at=self.now(),
            )
            self.installations[inst.id] = inst
            return inst

    def installation_repo_ids(self, inst: Installation) -> set[int]:
        with self.lock:
            if inst.repository_selection == "selected":
                return set(inst.repository_ids)
            return {r.id for r in self.repos.values() if r.owner.login == inst.account.login}

    def issue_installation_token(
        self,
        inst: Installation | int,
        *,
        repository_ids: set[int] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> Token:
        """An installation token (as the access-token exchange makes), valid for an hour."""
        with self.lock:
            inst = self.installations[inst] if isinstance(inst, int) else inst
            now = self.now()
            token = Token(
                value=_random_token("ghs_"),
                kind="installation",
                user=inst.app.bot,
                created_at=now,
                expires_at=now + INSTALLATION_TOKEN_LIFETIME,
                repository_ids=repository_ids,
                installation=inst,
                permissions=dict(permissions or inst.permissions),
            )
            self.tokens[token.value] = token
            return token
