"""reposync's own forge on disk: a bare Git repository per repository.

The repository's immutable id lives in its Git config (``reposync.repositoryid``), so
moving or renaming the directory refreshes the locator but keeps the Binding. It is
stored by the first write access only: a source is never written, and until then its id
is derived from its path (``owners.repository_id``).

Git refs are Git's; the wiki is a sibling bare repository (``/srv/app.git`` has its wiki
in ``/srv/app.wiki.git``, as GitHub keeps ``app.wiki.git`` beside ``app.git``), created
on the first wiki write; every other object type (labels, issues, pull requests, reviews,
releases and their assets, ...) lives in a ``LocalForge`` beside the Git data
(``<git_dir>/reposync/``), created only once something is written there.

A directory of bare repositories is an owner (``owners.py``): listed and added to by a
whole-owner binding. Why ~650 lines: the provider class is the one place each
capability's local answer is found; what is more than a few lines lives in the sibling
modules it calls.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import pygit2

from reposync.errors import (
    InvalidLocator,
    NotARepository,
    PermissionDenied,
    RepositoryMismatch,
    RepositoryNotCreatable,
    RepositoryNotFound,
    WriteRefused,
)
from reposync.git.locks import remove_stale_locks
from reposync.providers.base import (
    AbsenceProver,
    AncestryChecker,
    ApplyResult,
    AssetSource,
    ChangeHooks,
    DefaultBranchWriter,
    EmptyChecker,
    EndpointInfo,
    EndpointSpec,
    GitRemote,
    GitRemoteSource,
    IndexReader,
    InventoryListing,
    LfsStore,
    LfsThroughBackend,
    LockRecoverer,
    ObjectWriter,
    OwnedRepository,
    OwnerLister,
    OwnerSpec,
    Provider,
    ProviderEnvironment,
    RepositoryCreator,
    ShadowMaterializer,
    StandbyMarker,
    TargetWrite,
    VisibilityReporter,
    WikiRemoteSource,
)
from reposync.providers.lfs_files import LocalLfsStore
from reposync.providers.local import hooks, owners, standby
from reposync.providers.local.forge import LocalForge
from reposync.providers.local.objects import FORGE_TYPES
from reposync.providers.refs import split_refs
from reposync.sync.canonical import (
    BRANCH_PREFIX,
    DEFAULT_BRANCH_IDENTITY,
    CanonicalObject,
    IndexEntry,
    default_branch,
    git_ref,
    git_ref_hash,
    is_shadow_ref,
    is_supported_ref,
    ref_name_problem,
    ref_object_key,
    shadow_refs,
    wiki_ref,
)
from reposync.sync.vocabulary import ObjectType

#: What Git itself keeps beside the forge objects: refs, and HEAD as the default branch.
_GIT_TYPES = frozenset({ObjectType.GIT_REF, ObjectType.WIKI_REF, ObjectType.DEFAULT_BRANCH})


class LocalProvider(
    Provider,
    # Every capability of providers.base.CAPABILITIES except NestedCreator (the forge
    # creates each child on its own without changing its shape) and WebhookSource (its
    # hooks report changes, ChangeHooks: nothing sends it webhooks).
    IndexReader,
    ObjectWriter,
    AbsenceProver,
    AssetSource,
    EmptyChecker,
    VisibilityReporter,
    StandbyMarker,
    ShadowMaterializer,
    LockRecoverer,
    GitRemoteSource,
    WikiRemoteSource,
    DefaultBranchWriter,
    AncestryChecker,
    LfsThroughBackend,
    LfsStore,
    ChangeHooks,
    # A directory of bare repositories is an owner (providers/local/owners.py).
    OwnerLister,
    RepositoryCreator,
):
    name = "local"
    #: A push into a repository on this machine has no limit of its own.
    max_ref_updates_per_push = None
    #: Nor a pack-size limit.
    max_push_pack_bytes = None

    def __init__(
        self,
        repo: pygit2.Repository,
        locator: str,
        *,
        busy_timeout: float = 10.0,
        run_hooks: bool = False,
    ) -> None:
        super().__init__()
        self._run_hooks = run_hooks
        self._repo = repo
        self._locator = locator
        self._git_dir = str(_common_dir(Path(repo.path)))
        self._repository_id = owners.repository_id(repo)  # read, never written here
        self._forge = LocalForge(
            self._git_dir, busy_timeout=busy_timeout, standby_of=self.standby_of
        )
        self._lfs = LocalLfsStore(Path(self._git_dir))
        self._wiki_repo: pygit2.Repository | None = None
        self._closed = False

    # -- locators ---------------------------------------------------------------------

    @classmethod
    def normalize_locator(cls, location: str) -> str:
        location = location.strip()
        if not location:
            raise InvalidLocator("local: needs a path, for example local:/srv/forge/app.git")
        return os.path.abspath(os.path.expanduser(location))

    @classmethod
    def exists(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> bool:
        path = Path(spec.locator)
        if not path.exists():
            return False
        if path.is_dir() and not any(path.iterdir()):
            return False  # an empty directory is where a new standby goes
        if _discover(path) is None:
            kind = "directory" if path.is_dir() else "file"
            raise NotARepository(f"{spec.locator} is a {kind} but not a Git repository")
        return True

    @classmethod
    def create(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> None:
        try:
            repo = pygit2.init_repository(spec.locator, bare=True)
        except (pygit2.GitError, OSError) as exc:
            raise RepositoryNotCreatable(
                f"cannot create a repository at {spec.locator}: {_why_not_created(spec, exc)}"
            ) from exc
        owners.store_repository_id(repo, str(uuid.uuid4()))

    # -- owners (a directory of bare repositories) ---------------------------------------

    @classmethod
    def normalize_owner(cls, location: str) -> str:
        location = location.strip()
        if not location:
            raise InvalidLocator("a local owner is a directory, for example local:/srv/forge")
        return os.path.abspath(os.path.expanduser(location))

    @classmethod
    def repository_locator(cls, owner: str, name: str) -> str:
        return owners.repository_path(owner, name)

    @classmethod
    def list_repositories(
        cls, owner: OwnerSpec, env: ProviderEnvironment | None = None
    ) -> list[OwnedRepository]:
        return owners.list_repositories(owner)

    @classmethod
    def create_repository(
        cls,
        owner: OwnerSpec,
        name: str,
        visibility: str,
        description: str | None,
        env: ProviderEnvironment | None = None,
    ) -> OwnedRepository:
        """Every local repository is private, whatever ``visibility`` allows."""
        path = owners.new_repository_path(owner, name)
        cls.create(EndpointSpec(cls.name, path), env)
        return owners.created(path, name, description)

    @classmethod
    def open(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> LocalProvider:
        path = Path(spec.locator)
        if not path.exists():
            raise RepositoryNotFound(f"{spec.locator} does not exist")
        git_dir = _discover(path)
        if git_dir is None:
            raise NotARepository(f"{spec.locator} is not a Git repository")
        try:
            repo = pygit2.Repository(git_dir)
        except pygit2.GitError as exc:
            raise NotARepository(f"{spec.locator} is not a readable Git repository: {exc}") from exc
        busy_timeout = env.settings.local_busy_timeout if env is not None else 10.0
        hooks = env.settings.local_target_hooks if env is not None else False
        provider = cls(repo, spec.locator, busy_timeout=busy_timeout, run_hooks=hooks)
        if spec.repository_id is not None and spec.repository_id != provider._repository_id:
            raise RepositoryMismatch(
                f"{spec.locator} holds repository {provider._repository_id}, but this Binding "
                f"was made for {spec.repository_id}"
            )
        return provider

    # -- base contract ----------------------------------------------------------------

    def endpoint(self) -> EndpointInfo:
        return EndpointInfo(self.name, self._locator, self._repository_id)

    def check_access(self, *, write: bool) -> None:
        if not os.access(self._git_dir, os.R_OK | os.X_OK):
            raise PermissionDenied(f"cannot read {self._git_dir}")
        if write:
            if not self._repo.is_bare:
                raise NotARepository(
                    f"{self._locator} is a non-bare repository; a local target must be bare "
                    "(it is accepted as a source only)"
                )
            if not os.access(self._git_dir, os.W_OK):
                raise PermissionDenied(f"cannot write to {self._git_dir}")
            forge_root = self._forge.root
            if forge_root.exists() and not os.access(forge_root, os.W_OK):
                raise PermissionDenied(f"cannot write to {forge_root}")
            # A side reposync writes keeps its id where a move of the directory keeps it.
            owners.store_repository_id(self._repo, self._repository_id)

    def inventory_index(self, object_types: Sequence[ObjectType]) -> InventoryListing:
        """Git refs and forge objects of the requested types, in one listing.

        Sorted by (object type, identity) across both stores: Git refs are listed (and
        their unsupported namespaces counted) right away, forge objects stream from the
        forge's covering index as the listing is consumed.
        """
        wanted = sorted(set(object_types) & (FORGE_TYPES | _GIT_TYPES), key=str)
        listing = InventoryListing(entries=[])
        if not wanted:
            return listing
        self.stats.index_reads += 1
        refs = self._ref_entries(listing) if ObjectType.GIT_REF in wanted else []
        wiki = self._wiki_entries(listing) if ObjectType.WIKI_REF in wanted else []
        listing.entries = self._merged(wanted, refs, wiki)
        return listing

    def _merged(
        self, wanted: Sequence[ObjectType], refs: list[IndexEntry], wiki: list[IndexEntry]
    ) -> Iterator[IndexEntry]:
        for object_type in wanted:  # already in str order, as the listing promises
            if object_type is ObjectType.GIT_REF:
                yield from refs
            elif object_type is ObjectType.WIKI_REF:
                yield from wiki
            elif object_type is ObjectType.DEFAULT_BRANCH:
                head = self._default_branch()
                if head is not None:
                    yield head.index_entry()
            else:
                yield from self._forge.reader.index([object_type])

    def _ref_entries(self, listing: InventoryListing) -> list[IndexEntry]:
        supported, _ = split_refs(self._refs(), listing)
        supported.update(self._shadows(supported))
        entries = [
            IndexEntry(ObjectType.GIT_REF, name, ref_object_key(name), name, oid, git_ref_hash(oid))
            for name, oid in supported.items()
        ]
        entries.sort(key=lambda e: e.identity)
        return entries

    def _wiki_entries(self, listing: InventoryListing) -> list[IndexEntry]:
        """The wiki's branches and tags (none while it has no repository). Other refs of
        the wiki are counted under ``wiki:<namespace>``, bad names rejected as the main
        repository's are."""
        wiki = self._wiki()
        if wiki is None:
            return []
        refs, _ = split_refs(_refs_of(wiki), listing, wiki=True)
        entries = [wiki_ref(name, object_id).index_entry() for name, object_id in refs.items()]
        entries.sort(key=lambda e: e.identity)
        return entries

    @property
    def wiki_path(self) -> Path:
        """Where this repository's wiki lives: ``<name>.wiki.git`` beside it."""
        path = Path(self._locator)
        return path.with_name(path.name.removesuffix(".git") + ".wiki.git")

    def _wiki(self) -> pygit2.Repository | None:
        """The wiki's repository, when it exists (opened once, then kept)."""
        if self._wiki_repo is None and (self.wiki_path / "HEAD").exists():
            try:
                self._wiki_repo = pygit2.Repository(str(self.wiki_path))
            except pygit2.GitError as exc:
                raise NotARepository(f"{self.wiki_path} is not a readable wiki: {exc}") from exc
        return self._wiki_repo

    def _shadows(self, refs: dict[str, str]) -> dict[str, str]:
        """Shadow branches of open pull requests whose head is no branch here (a fork's).

        Not on a Binding's standby (``derive_shadows`` off): its pull request rows are
        copies, and its shadow branches are real branches the sync pushed; deriving them
        from the rows would read back a shadow whose push failed as present.
        """
        if not self.derive_shadows:
            return {}
        return shadow_refs(self._forge.reader.open_pull_heads(), refs, self._has_commit)

    def materialize_shadows(self) -> dict[str, str]:
        """The derived shadow branches, created as branches (``ShadowMaterializer``;
        ``standby.create_branches``)."""
        real = {name: oid for name, oid in self._refs() if is_supported_ref(name)}
        derived = shadow_refs(self._forge.reader.open_pull_heads(), real, self._has_commit)
        created, refused = standby.create_branches(self._repo, derived)
        self.stats.writes += len(created)
        if refused:
            raise WriteRefused(
                f"{self._locator} cannot hold the shadow branch(es) {', '.join(refused)}",
                refusal="invalid",
            )
        return created

    def _has_commit(self, sha: str) -> bool:
        try:
            return isinstance(self._repo.get(sha), pygit2.Commit)
        except (ValueError, pygit2.GitError):
            return False

    def _ref_targets(self, identities: Sequence[str]) -> dict[str, str | None]:
        """Refs' object ids, shadow branches' included (the refs the index lists).

        Shadows are derived once per call, and only when a missing ref could be one.
        """
        found: dict[str, str | None] = {}
        for identity in identities:
            found[identity] = self._ref_target(identity)
        if any(target is None and is_shadow_ref(name) for name, target in found.items()):
            shadows = self._shadows({n: o for n, o in self._refs() if is_supported_ref(n)})
            for name, target in found.items():
                if target is None:
                    found[name] = shadows.get(name)
        return found

    def _default_branch(self) -> CanonicalObject | None:
        """HEAD as a default branch: only a symbolic HEAD naming an existing branch (a
        new repository's HEAD names a branch nobody created; a checkout may be detached)."""
        try:
            head = self._repo.references.get("HEAD")
        except (ValueError, pygit2.GitError):
            return None
        if head is None or head.type != pygit2.enums.ReferenceType.SYMBOLIC:
            return None
        name = str(head.target)
        if not name.startswith(BRANCH_PREFIX) or self._ref_target(name) is None:
            return None
        return default_branch(name.removeprefix(BRANCH_PREFIX))

    def set_default_branch(self, branch: str) -> None:
        """Point HEAD at an existing branch (``DefaultBranchWriter``), as a forge would:
        a missing branch is refused, never left dangling."""
        name = BRANCH_PREFIX + branch
        if ref_name_problem(name) is not None or self._ref_target(name) is None:
            raise WriteRefused(
                f"{self._locator} has no branch {branch!r} to make the default",
                refusal="not_found",
            )
        current = self._repo.references.get("HEAD")
        if current is not None and str(current.target) == name:
            return
        self._repo.references.create("HEAD", name, force=True)
        self.stats.writes += 1

    def _ref_target(self, name: str) -> str | None:
        """A ref's object id; ``None`` when missing, or a name reposync never syncs."""
        if ref_name_problem(name) is not None:
            return None
        try:
            ref = self._repo.references.get(name)
            return None if ref is None else str(ref.resolve().target)
        except (ValueError, pygit2.GitError):  # a broken ref file: not there for us
            return None

    def read(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        return self.read_batch(object_type, [identity])[identity]

    def read_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        """Forge objects in one query per chunk; Git refs from the repository."""
        self.stats.object_reads += len(identities)
        if object_type in FORGE_TYPES:
            return self._forge.reader.read_batch(object_type, identities)
        if object_type is ObjectType.DEFAULT_BRANCH:
            head = self._default_branch()
            return {i: head if i == DEFAULT_BRANCH_IDENTITY else None for i in identities}
        if object_type is ObjectType.WIKI_REF:
            wiki = self._wiki()
            found: dict[str, CanonicalObject | None] = dict.fromkeys(identities)
            for name in identities:
                target = _ref_target_in(wiki, name) if wiki is not None else None
                found[name] = None if target is None else wiki_ref(name, target)
            return found
        if object_type is not ObjectType.GIT_REF:
            return dict.fromkeys(identities)
        return {
            name: None if target is None else git_ref(name, target)
            for name, target in self._ref_targets(identities).items()
        }

    def read_index_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, IndexEntry | None]:
        """Hashes without payloads (``IndexReader``): forge rows, or refs' object ids."""
        if object_type in FORGE_TYPES:
            self.stats.object_reads += len(identities)
            return self._forge.reader.read_index_batch(object_type, identities)
        return {
            name: None if obj is None else obj.index_entry()
            for name, obj in self.read_batch(object_type, identities).items()
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._forge.close()
        self._repo.free()
        if self._wiki_repo is not None:
            self._wiki_repo.free()

    # -- capabilities -----------------------------------------------------------------

    def is_empty(self) -> bool:
        """No ref at all, in the repository or its wiki, and no forge object (a missing
        forge store or wiki is empty)."""
        self.stats.index_reads += 1
        wiki = self._wiki()
        return (
            next(iter(self._refs()), None) is None
            and (wiki is None or not _refs_of(wiki))
            and self._forge.reader.is_empty()
        )

    def standby_of(self) -> str | None:
        """The authority this forge is a standby of, when it is one."""
        return standby.standby_of(self._repo)

    def mark_standby(self, authority: str | None) -> None:
        """Record (or clear) that edits belong to ``authority``: this copy is its standby.

        The authoring API reads the mark; pushes meet the standby lock, in the repository
        and in its wiki (``standby.mark``). Raises ``PermissionDenied`` when the hooks
        directory cannot be written and ``UsageError`` when a user's pre-receive hook
        cannot be moved aside.
        """
        repositories = [(self._repo, Path(self._git_dir))]
        wiki = self._wiki()
        if wiki is not None:
            repositories.append((wiki, self.wiki_path))
        standby.mark(repositories, authority)

    @property
    def forge(self) -> LocalForge:
        """The forge objects of this repository (tests, benchmarks and the demo edit them
        through ``authoring.ForgeAuthoring`` over it; the sync only reads and writes)."""
        return self._forge

    def apply_batch(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        """Forge object writes, one transaction per batch (``ObjectWriter``).

        Git refs are written by Git transport, never here. ``stats.writes`` counts the
        writes that changed something, even when a fault after the commit interrupts.
        """
        before = self._forge.store.writes_performed
        try:
            return self._forge.writer.apply_batch(writes)
        finally:
            self.stats.writes += self._forge.store.writes_performed - before

    def find_by_markers(self, object_type: ObjectType, markers: Sequence[str]) -> dict[str, str]:
        return self._forge.reader.find_by_markers(object_type, markers)

    def markers_absent(self, object_type: ObjectType, markers: Sequence[str]) -> set[str]:
        return set(markers) - set(self.find_by_markers(object_type, markers))

    def open_asset(self, identity: str) -> BinaryIO:
        return self._forge.assets.open_asset(identity)

    def visibility(self) -> str:
        return "private"

    def lfs_backend(self) -> LocalLfsStore:
        return self._lfs

    def remove_stale_locks(self, older_than: float, *, wait: bool = False) -> list[str]:
        """Ref locks a killed ``receive-pack`` left in this repository or its wiki
        (``LockRecoverer``); a retryable ``GitTransportError`` while a live process may
        still commit them."""
        removed = remove_stale_locks(Path(self._git_dir), older_than, wait=wait)
        if self._wiki() is not None:
            wiki = remove_stale_locks(self.wiki_path, older_than, wait=wait)
            removed += [f"wiki {name}" for name in wiki]
        return removed

    def git_remote(self, *, write: bool) -> GitRemote:
        return self._remote(self._git_dir, write=write)

    def wiki_remote(self, *, write: bool) -> GitRemote:
        """The sibling wiki repository (``WikiRemoteSource``), created bare on the first
        write: a local forge's wiki is always enabled."""
        path = self.wiki_path
        if write and not (path / "HEAD").exists():
            pygit2.init_repository(str(path), bare=True)
            authority = self.standby_of()
            if authority:  # a standby's new wiki is locked as the repository is
                self.mark_standby(authority)
        return self._remote(str(path), write=write)

    def _remote(self, git_dir: str, *, write: bool) -> GitRemote:
        return GitRemote(
            url=git_dir,
            objects_dir=str(Path(git_dir) / "objects"),
            # The standby lock lets reposync's own pushes through (when hooks run at all).
            env={hooks.SYNC_PUSH_ENV: "1"} if write else {},
            # No hook of this repository runs for a sync (REPOSYNC_LOCAL_TARGET_HOOKS
            # opts in). Git drops environment-given configuration (GIT_CONFIG_*) when it
            # starts receive-pack in another repository, so the command says it.
            receive_pack=None
            if self._run_hooks or not write
            else f"git -c core.hooksPath={os.devnull} receive-pack",
        )

    def install_change_hooks(
        self, command: Sequence[str], environment: Mapping[str, str]
    ) -> list[str]:
        """A post-receive hook, the wiki's too, and the notify script the authoring API
        runs after an edit (``providers/local/hooks.py``)."""
        return hooks.install(Path(self._git_dir), self.wiki_path, command, environment)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Git's proof in the repository, else in its wiki (object ids name one commit
        wherever it is stored, so a wiki branch's fast-forward is proven there)."""
        for repo in (self._repo, self._wiki()):
            try:
                if repo is not None and repo.descendant_of(descendant, ancestor):
                    return True
            except (KeyError, ValueError, pygit2.GitError):
                continue
        return False

    # -- internals --------------------------------------------------------------------

    def _refs(self) -> list[tuple[str, str]]:
        refs = _refs_of(self._repo)
        if self._repo.is_bare:
            return refs
        # A working clone's remote-tracking refs are its last look at another repository
        # (what it fetched from origin), not content of its own: neither synced nor a
        # problem to report. A bare repository holding refs/remotes is reported as ever.
        return [(name, oid) for name, oid in refs if not name.startswith(REMOTE_TRACKING)]


def _common_dir(git_dir: Path) -> Path:
    """Where a repository's objects and refs are: a linked worktree's git directory
    names it in ``commondir`` (its objects, LFS store and forge are the main one's)."""
    common = git_dir / "commondir"
    if common.is_file():
        return (git_dir / common.read_text().strip()).resolve()
    return git_dir.resolve()


#: Where a working clone keeps its remote-tracking refs.
REMOTE_TRACKING = "refs/remotes/"


def _refs_of(repo: pygit2.Repository) -> list[tuple[str, str]]:
    refs: list[tuple[str, str]] = []
    for ref in repo.references.iterator():
        if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
            # Symbolic refs (refs/remotes/origin/HEAD) are aliases; count their namespace.
            refs.append((ref.name, ""))
            continue
        refs.append((ref.name, str(ref.target)))
    return refs


def _ref_target_in(repo: pygit2.Repository, name: str) -> str | None:
    """A ref's object id in ``repo``; ``None`` when missing, or a name reposync never syncs."""
    if ref_name_problem(name) is not None or not is_supported_ref(name):
        return None
    try:
        ref = repo.references.get(name)
        return None if ref is None else str(ref.resolve().target)
    except (ValueError, pygit2.GitError):  # a broken ref file: not there for us
        return None


def _why_not_created(spec: EndpointSpec, exc: Exception) -> str:
    """libgit2 says "directory exists" of a file on the way; name the file instead."""
    for parent in Path(spec.locator).parents:
        if parent.exists():
            return str(exc) if parent.is_dir() else f"{parent} is a file, not a directory"
    return str(exc)


def _discover(path: Path) -> str | None:
    try:
        found = pygit2.discover_repository(str(path))
    except pygit2.GitError:
        return None
    if found is None:
        return None
    # discover walks up to parents; the locator must be the repository itself.
    found_path = Path(found).resolve()
    resolved = path.resolve()
    if found_path in (resolved, resolved / ".git"):
        return str(found_path)
    if (resolved / ".git").is_file():  # a linked worktree or a submodule names its gitdir
        workdir = pygit2.Repository(str(found_path)).workdir
        if workdir is not None and Path(workdir).resolve() == resolved:
            return str(found_path)
    return None
