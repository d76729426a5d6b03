"""Per-provider harnesses of the conformance suite (``test_conformance.py``).

rclone's fstests idea: the suite is written once against the provider contract; each
provider contributes a small harness that says how to make an empty repository, how to
open it as a target with writes allowed, how to seed objects (through the provider's own
``apply_batch``, never behind its back), how to look at its backing store directly, and
what the provider **declares it cannot do**. The suite checks each declaration both ways:
what is declared unsupported must be refused with a clear error code, what is not
declared must work. So with capabilities (``providers.base.CAPABILITIES``): the provider
class must declare exactly the ones its harness lists, and implement exactly those.

Declarations come from each provider's documented behaviour, not from trial and error:

* local (``reposync/providers/local``): reposync's own store; every forge type can be
  created, updated and deleted; creates are idempotent by marker; no rate limits; the
  repository is a directory, so it is private; its wiki is a sibling repository that is
  always enabled (created by the first write).
* github (``reposync/providers/github``): GitHub's REST API cannot delete issues or pull
  requests and cannot delete a submitted review (``writes/`` has no handler for them: the
  write comes back ``REFUSED``/``unsupported``); authorship and timestamps travel in an
  attributed header (``bodies.py``); labels, milestones and assets have no body to carry a
  marker and are recovered by natural key; primary and secondary rate limits apply; a
  body holds at most 65,536 characters (GitHub's documented limit, counted on what is
  stored: reposync's header and marker included); repositories are public or private
  ("internal" exists only in enterprise organizations, which the test server does not
  model); a wiki can be disabled (``has_wiki``), and then its refs cannot be written.

* forgejo (``reposync/providers/forgejo``): Forgejo's REST API cannot delete issues or pull
  requests without the repository's administrator and frees no number, so reposync does
  not (``writes/`` has no handler: ``unsupported``); a submitted review can be deleted by
  its author. Authorship and timestamps travel in an attributed header; labels,
  milestones and attachments have no body for a marker and are recovered by natural
  key. Forgejo has no rate limit of its own and no limit on a body's length (a text
  column); a milestone's due date cannot be cleared through its API
  (``EditMilestoneOption``'s ``due_on`` is only applied when given). Repositories are
  public or private; a wiki can be turned off (``has_wiki``).
* git (``reposync/providers/gitremote``): a plain Git remote holds refs, its ``HEAD`` and
  LFS objects only (no ``ObjectWriter``, ``WikiRemoteSource``, ``DefaultBranchWriter``,
  ``VisibilityReporter``, ...): the forge-object tests of ``test_conformance.py`` and the
  wiki's do not apply to it, and ``test_conformance_git.py`` checks that declaration the
  other way (nothing of those types is listed or read) beside the Git part every
  provider runs. Its harness serves ``git http-backend`` with an LFS server, behind
  HTTP Basic auth answered by git's credential helper (``tests/fakes/gitserver/plain.py``).

A new provider is added by writing one more harness and naming it in ``HARNESSES``
(``REFS_ONLY`` for one that holds Git data only).
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from reposync.config import Settings
from reposync.git.process import run_git
from reposync.providers.base import (
    CAPABILITIES,
    AbsenceProver,
    AncestryChecker,
    ApplyResult,
    AssetSource,
    ChangeHooks,
    DefaultBranchWriter,
    EmptyChecker,
    EndpointSpec,
    GitRemoteSource,
    IndexReader,
    LfsStore,
    LockRecoverer,
    NestedCreator,
    ObjectWriter,
    OwnerLister,
    OwnerSpec,
    Provider,
    ProviderEnvironment,
    RepositoryCreator,
    ShadowMaterializer,
    StandbyMarker,
    TargetWrite,
    VisibilityReporter,
    WebhookSource,
    WikiRemoteSource,
    WriteStatus,
)
from reposync.providers.forgejo import ForgejoProvider
from reposync.providers.github.provider import GitHubProvider
from reposync.providers.gitremote import GitRemoteProvider
from reposync.providers.local import LocalForge, LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.sync.vocabulary import ObjectType
from tests.fakes.contract import RecordingValidator
from tests.fakes.gitserver import lfs_store
from tests.forgejo_env import forgejo_environment, forgejo_settings, locator
from tests.github_env import checked_sessions, github_settings
from tests.gitrepo import commit_on, delete_refs, generate, init_bare, refs, set_ref
from tests.lfsrepo import stored

T = ObjectType

#: Every harness the suite runs against, by provider name.
HARNESSES = ("local", "github", "forgejo")
#: Harnesses of providers that hold Git data only (no ``ObjectWriter``): they run the
#: Git part of the suite (``test_conformance_git.py``) and its provider-neutral tests.
REFS_ONLY = ("git",)
#: Every provider with Git data: the Git part of the suite runs against all of them.
GIT_HARNESSES = (*HARNESSES, *REFS_ONLY)


@dataclass(frozen=True)
class Limitations:
    """What a provider declares it cannot do (or does differently)."""

    #: Types whose delete is refused with ``error_code="unsupported"``.
    cannot_delete: frozenset[ObjectType]
    #: Whether the forge has request quotas (reads raise ``RateLimited``, writes defer).
    rate_limited: bool
    #: Whether authorship and times are written as an attributed header instead of
    #: natively (create results then say ``Representation.ATTRIBUTED``).
    attributes_authorship: bool
    #: The visibilities a repository of this provider can have (the first is the default).
    visibilities: tuple[str, ...]
    #: Whether applying a create whose marker already exists returns the existing object.
    idempotent_creates: bool
    #: Types that carry no marker (``find_by_markers`` cannot find them; a lost create
    #: is recovered by its natural key instead).
    unmarked_types: frozenset[ObjectType]
    #: Most characters a stored body may have (``None``: no limit).
    max_body_chars: int | None
    #: Comments the "many comments on one issue" fixture writes (enough to paginate).
    many_comments: int
    #: Whether a milestone's due date can be removed once set (GitHub's API cannot: its
    #: ``due_on`` is a non-nullable string, so the provider refuses ``unsupported``).
    clears_due_dates: bool
    #: The optional capabilities (``providers.base.CAPABILITIES``) the provider has; it
    #: must declare exactly these as base classes, and implement none of the others.
    capabilities: frozenset[type]


class Harness(ABC):
    """How the conformance suite drives one provider."""

    name: str
    limits: Limitations

    def __init__(self) -> None:
        self._opened: list[Provider] = []
        self._numbers = itertools.count(1)

    # -- repositories ---------------------------------------------------------------------

    @abstractmethod
    def make_repository(self, *, empty: bool = True, visibility: str | None = None) -> EndpointSpec:
        """A new repository: without any Git data when ``empty``, else with one commit on
        ``main`` (releases need something to tag on some forges)."""

    @abstractmethod
    def _open(self, spec: EndpointSpec) -> Provider: ...

    def open_target(self, spec: EndpointSpec) -> Provider:
        """The repository opened as a sync target, write access checked."""
        provider = self._open(spec)
        self._opened.append(provider)
        provider.check_access(write=True)
        return provider

    def target(self, *, empty: bool = False, visibility: str | None = None) -> Provider:
        """A new repository opened as a target (the common first line of a test)."""
        return self.open_target(self.make_repository(empty=empty, visibility=visibility))

    # -- owners (OwnerLister, RepositoryCreator) -------------------------------------------

    #: What opens providers of this harness (credentials, contract-checked sessions).
    env: ProviderEnvironment | None = None

    def make_owner(self) -> OwnerSpec:
        """A new owner without repositories, in which the credentials may create some (a
        harness whose provider declares ``OwnerLister`` says how)."""
        raise NotImplementedError(f"{self.name} declares no OwnerLister")

    def add_to_owner(self, owner: OwnerSpec, name: str, *, visibility: str | None = None) -> None:
        """A repository ``name`` of ``owner`` with one commit, made outside the provider."""
        raise NotImplementedError(f"{self.name} declares no OwnerLister")

    # -- seeding --------------------------------------------------------------------------

    def seed(self, provider: Provider, writes: Sequence[TargetWrite]) -> list[str]:
        """Write through the provider's own ``apply_batch``; every write must succeed."""
        assert isinstance(provider, ObjectWriter)
        results: list[ApplyResult] = provider.apply_batch(writes)
        assert [r.status for r in results] == [WriteStatus.OK] * len(writes), results
        identities = [r.target_identity for r in results]
        assert all(identities), results
        return [str(i) for i in identities]

    @abstractmethod
    def open_pull_on_no_branch(self, spec: EndpointSpec) -> tuple[int, str]:
        """An open pull request whose head commit is in the repository but on none of its
        branches (its branch deleted; on GitHub kept in ``refs/pull/N/head``), seeded
        outside the provider; returns its number and head commit."""

    # -- the backing store, read directly -------------------------------------------------

    @abstractmethod
    def stored_count(self, spec: EndpointSpec, object_type: ObjectType) -> int:
        """How many objects of a type the backing store holds (not through the provider)."""

    @abstractmethod
    def lfs_objects(self, spec: EndpointSpec) -> dict[str, bytes]:
        """The repository's LFS store, read directly: OID -> bytes."""

    # -- faults and limits ----------------------------------------------------------------

    #: Whether LFS uploads travel over HTTP (a Batch API's transfers), where a stopped
    #: upload is a request left unfinished; a local store copies on this machine.
    lfs_over_http = True

    def lose_next_lfs_upload_response(self) -> bool:
        """Make the next LFS upload land but lose its answer (False: it cannot be lost)."""
        return False

    def expire_lfs_actions(self) -> bool:
        """End the LFS actions handed out so far before their announced expiry (False:
        this store's actions carry no credentials of their own that could end)."""
        return False

    def lose_next_create_response(self, object_type: ObjectType) -> bool:
        """Make the next create of this type happen but lose its response.

        False when the provider cannot lose a response (an in-process store).
        """
        return False

    def exhaust_primary_quota(self) -> datetime | None:
        """Use up the request quota; returns when it resets (``None``: no quota exists)."""
        return None

    def point_head(self, spec: EndpointSpec, branch: str) -> None:
        """Point the repository's ``HEAD`` at ``branch`` behind the provider's back (what
        a provider without ``DefaultBranchWriter`` needs to test its reads of it)."""
        raise NotImplementedError(f"the {self.name} harness cannot point HEAD behind its back")

    def disable_wiki(self, spec: EndpointSpec) -> bool:
        """Turn the repository's wiki off. False: the forge has no such switch (its wiki
        is always there to be written)."""
        return False

    def limit_content_creation(self, allowance: int) -> bool:
        """Let the forge create only ``allowance`` more objects for a while, then refuse
        (its secondary limit). False: the provider has no such limit."""
        return False

    # -- life cycle -----------------------------------------------------------------------

    def assert_clean(self) -> None:  # noqa: B027  (a local store has no wire contract)
        """Nothing the provider sent or received broke the forge's contract."""

    def close(self) -> None:
        for provider in self._opened:
            provider.close()
        self._opened.clear()


class LocalHarness(Harness):
    name = "local"
    lfs_over_http = False
    limits = Limitations(
        cannot_delete=frozenset(),
        rate_limited=False,
        attributes_authorship=False,
        visibilities=("private",),
        idempotent_creates=True,
        unmarked_types=frozenset(),
        max_body_chars=None,
        many_comments=2000,
        clears_due_dates=True,
        # All but NestedCreator (each child is created on its own, in its own shape) and
        # WebhookSource (its hooks report changes: ChangeHooks).
        capabilities=frozenset(CAPABILITIES) - {NestedCreator, WebhookSource},
    )

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def make_repository(self, *, empty: bool = True, visibility: str | None = None) -> EndpointSpec:
        assert visibility in (None, *self.limits.visibilities), visibility
        path = self.root / f"repo-{next(self._numbers)}.git"
        spec = EndpointSpec("local", str(path))
        if empty:
            LocalProvider.create(spec)
        else:
            generate(path, commits=1, branches=0, tags=0)
        return spec

    def _open(self, spec: EndpointSpec) -> Provider:
        return LocalProvider.open(spec)

    def make_owner(self) -> OwnerSpec:
        path = self.root / f"owner-{next(self._numbers)}"
        path.mkdir()
        return OwnerSpec("local", str(path))

    def add_to_owner(self, owner: OwnerSpec, name: str, *, visibility: str | None = None) -> None:
        assert visibility in (None, *self.limits.visibilities), visibility
        generate(Path(owner.locator) / f"{name}.git", commits=1, branches=0, tags=0)

    def open_pull_on_no_branch(self, spec: EndpointSpec) -> tuple[int, str]:
        path = Path(spec.locator)
        set_ref(path, "refs/heads/topic", refs(path)["refs/heads/main"])
        head = commit_on(path, "refs/heads/topic", "reviewed work")
        delete_refs(path, ["refs/heads/topic"])
        forge = LocalForge(spec.locator)
        try:
            identity = ForgeAuthoring(forge).create_pull_request(
                "Head on no branch",
                author="bob",
                base_ref="main",
                base_sha=refs(path)["refs/heads/main"],
                head_ref="topic",
                head_sha=head,
            )
            [pull] = forge.reader.read_batch(ObjectType.PULL_REQUEST, [identity]).values()
        finally:
            forge.close()
        assert pull is not None
        assert pull.number is not None
        return pull.number, head

    def lfs_objects(self, spec: EndpointSpec) -> dict[str, bytes]:
        return stored(Path(spec.locator))

    def stored_count(self, spec: EndpointSpec, object_type: ObjectType) -> int:
        forge = LocalForge(spec.locator)
        try:
            return forge.reader.count(object_type)
        finally:
            forge.close()


class GitHubHarness(Harness):
    """GitHub through the test server; every request and response is contract-checked."""

    name = "github"
    limits = Limitations(
        cannot_delete=frozenset({T.ISSUE, T.PULL_REQUEST, T.REVIEW}),
        rate_limited=True,
        attributes_authorship=True,
        visibilities=("public", "private"),
        idempotent_creates=False,
        unmarked_types=frozenset({T.LABEL, T.MILESTONE, T.RELEASE_ASSET}),
        max_body_chars=65536,
        # Smaller than the local count to keep the suite fast, still three pages of 100.
        many_comments=250,
        clears_due_dates=False,
        # A review is created whole with its comments (NestedCreator). No stored hashes
        # (IndexReader), standby guard, ref locks or ancestry proof on GitHub's side; it
        # reports changes through webhooks, not hooks reposync installs (ChangeHooks).
        capabilities=frozenset(CAPABILITIES)
        - {IndexReader, StandbyMarker, LockRecoverer, AncestryChecker, ChangeHooks},
    )
    OWNER = "acme"
    #: The create endpoint of each type (fault injection matches on it).
    CREATE_PATHS: ClassVar[dict[ObjectType, str]] = {
        T.LABEL: r"/labels$",
        T.MILESTONE: r"/milestones$",
        T.ISSUE: r"/issues$",
        T.ISSUE_COMMENT: r"/issues/\d+/comments$",
        T.RELEASE: r"/releases$",
    }

    def __init__(self, fake: Any, root: Path) -> None:
        super().__init__()
        self.fake = fake
        self.token = fake.add_token(self.OWNER)
        self.rate_key = f"user:{self.OWNER}"
        self.recorder = RecordingValidator(fake.contract)
        self.settings = github_settings(fake, root / "data", self.token)
        self.env = ProviderEnvironment(
            settings=self.settings, http_session=checked_sessions(self.recorder)
        )
        # The suite creates content far faster than GitHub's secondary limit allows (80 a
        # minute); the limit itself is exercised through ``limit_content_creation``.
        fake.limiter.secondary.per_minute = fake.limiter.secondary.per_hour = 1_000_000

    def make_repository(self, *, empty: bool = True, visibility: str | None = None) -> EndpointSpec:
        visibility = visibility or self.limits.visibilities[0]
        assert visibility in self.limits.visibilities, visibility
        name = f"{self.OWNER}/conformance-{next(self._numbers)}"
        self.fake.state.create_repo(name, private=visibility == "private", auto_init=not empty)
        return EndpointSpec("github", name)

    def _open(self, spec: EndpointSpec) -> Provider:
        return GitHubProvider.open(spec, self.env)

    def make_owner(self) -> OwnerSpec:
        login = f"org-{next(self._numbers)}"
        self.fake.state.add_member(login, self.OWNER)  # a member creates its repositories
        return OwnerSpec("github", login)

    def add_to_owner(self, owner: OwnerSpec, name: str, *, visibility: str | None = None) -> None:
        visibility = visibility or self.limits.visibilities[0]
        private = visibility == "private"
        full_name = f"{owner.locator}/{name}"
        self.fake.state.create_repo(
            full_name, private=private, auto_init=True, collaborators=[self.OWNER]
        )

    def open_pull_on_no_branch(self, spec: EndpointSpec) -> tuple[int, str]:
        git_dir = Path(self.fake.state.git_dir(spec.locator))
        head = commit_on(git_dir, "refs/heads/topic", "reviewed work")
        number = self.fake.state.add_pull(spec.locator, "Head on no branch", head="topic").number
        delete_refs(git_dir, ["refs/heads/topic"])
        return number, head

    def lfs_objects(self, spec: EndpointSpec) -> dict[str, bytes]:
        return dict(self.fake.lfs.objects(spec.locator))

    def lose_next_lfs_upload_response(self) -> bool:
        self.fake.faults.commit_then_drop("PUT", r"^/_lfs/", drop="close", host="git")
        return True

    def expire_lfs_actions(self) -> bool:
        self.fake.lfs.expire_actions()
        return True

    def stored_count(self, spec: EndpointSpec, object_type: ObjectType) -> int:
        state, name = self.fake.state, spec.locator
        if object_type is T.LABEL:
            return len(state.labels(name))
        if object_type is T.MILESTONE:
            return len(state.milestones(name))
        if object_type is T.ISSUE:
            return len(state.issues(name))
        if object_type is T.PULL_REQUEST:
            return len(state.pulls(name))
        if object_type is T.ISSUE_COMMENT:
            return len(state.comments(name))
        if object_type is T.RELEASE:
            return len(state.releases(name))
        raise NotImplementedError(object_type)

    def lose_next_create_response(self, object_type: ObjectType) -> bool:
        # The server commits the create, then closes the connection without an answer.
        self.fake.faults.commit_then_drop("POST", self.CREATE_PATHS[object_type], drop="close")
        return True

    def point_head(self, spec: EndpointSpec, branch: str) -> None:
        """Point the repository's ``HEAD`` at ``branch`` behind the provider's back (what
        a provider without ``DefaultBranchWriter`` needs to test its reads of it)."""
        raise NotImplementedError(f"the {self.name} harness cannot point HEAD behind its back")

    def disable_wiki(self, spec: EndpointSpec) -> bool:
        self.fake.state.repo(spec.locator).has_wiki = False
        return True

    def exhaust_primary_quota(self) -> datetime | None:
        self.fake.limiter.set_limit(self.rate_key, 0)
        reset = self.fake.limiter.snapshot(self.rate_key).reset
        return datetime.fromtimestamp(reset, tz=UTC)

    def limit_content_creation(self, allowance: int) -> bool:
        limiter = self.fake.limiter
        minute_ago = self.fake.state.now() - timedelta(minutes=1)
        recent = sum(1 for r in self.fake.requests_log if r.content_creating and r.at > minute_ago)
        # The fake needs one creation in its window to compute a retry-after from.
        limiter.record_creation(self.rate_key)
        limiter.secondary.per_minute = recent + 1 + allowance
        return True

    def assert_clean(self) -> None:
        self.recorder.assert_clean()
        self.fake.assert_clean(requests_too=True)


class GitHarness(Harness):
    """A plain Git remote over HTTP: ``git http-backend`` and an LFS server behind Basic
    auth (``tests/fakes/gitserver/plain.py``), git's credential helper answering for the provider
    (the fixture gives the process a ``HOME`` whose ``.gitconfig`` names it)."""

    name = "git"
    limits = Limitations(
        # The forge-object fields do not apply: the provider holds no such object, so
        # those tests do not run against it (``REFS_ONLY``); they say "nothing" throughout.
        cannot_delete=frozenset(),
        rate_limited=False,
        attributes_authorship=False,
        visibilities=(),
        idempotent_creates=False,
        unmarked_types=frozenset(),
        max_body_chars=None,
        many_comments=0,
        clears_due_dates=False,
        capabilities=frozenset({GitRemoteSource, EmptyChecker, LfsStore}),
    )

    def __init__(self, server: Any, root: Path) -> None:
        super().__init__()
        self.server = server
        self.env = ProviderEnvironment(settings=Settings(data_dir=root / "data"))

    def make_repository(self, *, empty: bool = True, visibility: str | None = None) -> EndpointSpec:
        assert visibility is None, "a plain Git remote says nothing of its visibility"
        name = f"acme/conformance-{next(self._numbers)}.git"
        path = self.server.repository(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if empty:
            init_bare(path)
        else:
            generate(path, commits=1, branches=0, tags=0)
        run_git(["git", "--git-dir", str(path), "symbolic-ref", "HEAD", "refs/heads/main"])
        return EndpointSpec("git", GitRemoteProvider.normalize_locator(self.server.url(name)))

    def _open(self, spec: EndpointSpec) -> Provider:
        return GitRemoteProvider.open(spec, self.env)

    def _path(self, spec: EndpointSpec) -> Path:
        return self.server.repository(spec.locator.split(f":{self.server.port}/", 1)[1])

    def open_pull_on_no_branch(self, spec: EndpointSpec) -> tuple[int, str]:
        raise AssertionError("a plain Git remote has no pull requests")

    def stored_count(self, spec: EndpointSpec, object_type: ObjectType) -> int:
        raise AssertionError(f"a plain Git remote stores no {object_type}")

    def lfs_objects(self, spec: EndpointSpec) -> dict[str, bytes]:
        return stored(self._path(spec))

    def lose_next_lfs_upload_response(self) -> bool:
        self.server.lfs.drop_next_upload_answer = True
        return True

    def point_head(self, spec: EndpointSpec, branch: str) -> None:
        path = self._path(spec)
        run_git(["git", "--git-dir", str(path), "symbolic-ref", "HEAD", f"refs/heads/{branch}"])


class ForgejoHarness(Harness):
    """Forgejo through its test server; every exchange is checked against its description."""

    name = "forgejo"
    limits = Limitations(
        cannot_delete=frozenset({T.ISSUE, T.PULL_REQUEST}),
        rate_limited=False,
        attributes_authorship=True,
        visibilities=("public", "private"),
        idempotent_creates=False,
        unmarked_types=frozenset({T.LABEL, T.MILESTONE, T.RELEASE_ASSET}),
        max_body_chars=None,
        # Three pages and a part at Forgejo's 50 a page, kept small for the suite's time.
        many_comments=160,
        clears_due_dates=False,
        # Reviews take their comments one by one (no NestedCreator); no stored hashes,
        # standby guard, ref locks, ancestry proof or hooks: its webhooks report changes.
        capabilities=frozenset(
            {
                ObjectWriter,
                AbsenceProver,
                AssetSource,
                EmptyChecker,
                VisibilityReporter,
                GitRemoteSource,
                WikiRemoteSource,
                DefaultBranchWriter,
                LfsStore,
                ShadowMaterializer,
                OwnerLister,
                RepositoryCreator,
                WebhookSource,
            }
        ),
    )
    OWNER = "acme"
    #: The create endpoint of each type, under /api/v1 (fault injection matches on it).
    CREATE_PATHS: ClassVar[dict[ObjectType, str]] = {
        T.LABEL: r"/labels$",
        T.MILESTONE: r"/milestones$",
        T.ISSUE: r"/issues$",
        T.ISSUE_COMMENT: r"/issues/\d+/comments$",
        T.RELEASE: r"/releases$",
    }

    def __init__(self, fake: Any, root: Path) -> None:
        super().__init__()
        self.fake = fake
        self.token = fake.add_token(self.OWNER)
        self.env = forgejo_environment(forgejo_settings(fake, root / "data", self.token), fake)

    def make_repository(self, *, empty: bool = True, visibility: str | None = None) -> EndpointSpec:
        visibility = visibility or self.limits.visibilities[0]
        assert visibility in self.limits.visibilities, visibility
        name = f"{self.OWNER}/conformance-{next(self._numbers)}"
        self.fake.state.create_repo(name, private=visibility == "private", auto_init=not empty)
        return EndpointSpec("forgejo", locator(self.fake, name))

    def _full_name(self, spec: EndpointSpec) -> str:
        return "/".join(spec.locator.split("/")[-2:])

    def _open(self, spec: EndpointSpec) -> Provider:
        return ForgejoProvider.open(spec, self.env)

    def make_owner(self) -> OwnerSpec:
        login = f"org-{next(self._numbers)}"
        self.fake.state.create_org(login, members=[self.OWNER])  # a member creates in it
        return OwnerSpec("forgejo", locator(self.fake, login))

    def add_to_owner(self, owner: OwnerSpec, name: str, *, visibility: str | None = None) -> None:
        visibility = visibility or self.limits.visibilities[0]
        login = owner.locator.rsplit("/", 1)[1]
        self.fake.state.create_repo(
            f"{login}/{name}", private=visibility == "private", auto_init=True
        )

    def open_pull_on_no_branch(self, spec: EndpointSpec) -> tuple[int, str]:
        repo = self.fake.state.repo(self._full_name(spec))
        head = commit_on(repo.git_dir, "refs/heads/topic", "reviewed work")
        pull = self.fake.state.create_pull(repo, "Head on no branch", "topic", "main", author="bob")
        delete_refs(repo.git_dir, ["refs/heads/topic"])  # Forgejo keeps refs/pull/N/head
        return pull.index, head

    def lfs_objects(self, spec: EndpointSpec) -> dict[str, bytes]:
        return lfs_store.stored_objects(self.fake.state.repo(self._full_name(spec)).git_dir)

    def lose_next_lfs_upload_response(self) -> bool:
        self.fake.faults.commit_then_drop("PUT", r"/info/lfs/objects/", drop="close", host="git")
        return True

    def stored_count(self, spec: EndpointSpec, object_type: ObjectType) -> int:
        repo = self.fake.state.repo(self._full_name(spec))
        if object_type is T.LABEL:
            return len(repo.labels)
        if object_type is T.MILESTONE:
            return len(repo.milestones)
        if object_type is T.ISSUE:
            return sum(1 for i in repo.issues.values() if i.pull is None)
        if object_type is T.PULL_REQUEST:
            return sum(1 for i in repo.issues.values() if i.pull is not None)
        if object_type is T.ISSUE_COMMENT:
            return sum(1 for c in repo.comments.values() if c.review_id is None)
        if object_type is T.RELEASE:
            return len(repo.releases)
        raise NotImplementedError(object_type)

    def lose_next_create_response(self, object_type: ObjectType) -> bool:
        # The server commits the create, then closes the connection without an answer.
        self.fake.faults.commit_then_drop("POST", self.CREATE_PATHS[object_type], drop="close")
        return True

    def disable_wiki(self, spec: EndpointSpec) -> bool:
        self.fake.state.repo(self._full_name(spec)).has_wiki = False
        return True

    def assert_clean(self) -> None:
        self.fake.assert_clean(requests_too=True)


def make_harness(
    name: str,
    root: Path,
    github_fake: Any = None,
    *,
    git_server: Any = None,
    forgejo_fake: Any = None,
) -> Harness:
    if name == "local":
        return LocalHarness(root)
    if name == "github":
        return GitHubHarness(github_fake, root)
    if name == "forgejo":
        return ForgejoHarness(forgejo_fake, root)
    if name == "git":
        return GitHarness(git_server, root)
    raise ValueError(f"no conformance harness for provider {name!r}")
