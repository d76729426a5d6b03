"""``git:URL``: any Git remote (a bare server, Bitbucket, Azure DevOps, sourcehut, ...).

What a plain remote holds is Git's: branches and tags (``git_ref``), its ``HEAD`` as the
default branch when it names a branch that exists, and LFS objects where its server
serves them (``lfs.py``). It is a source and a target: refs move with native git
(``git/transport.py``: leased, in atomic groups), listed with ``git ls-remote --symref``.

What it cannot hold it declares by the capabilities it lacks (``providers/base.py``), so a
Run counts the source's objects of those types as unsupported rather than failing them
(``service/pipeline/stages/inventory.py: held_types``):

* no ``ObjectWriter``: labels, milestones, issues, pull requests, reviews, releases and
  their assets, reactions;
* no ``WikiRemoteSource``: a plain remote has no wiki beside it;
* no ``DefaultBranchWriter``: Git's protocol cannot point a server's ``HEAD`` anywhere
  (it is read, so a remote is a source of its default branch, never a target of one);
* no ``VisibilityReporter``, ``StandbyMarker``, ``AncestryChecker``, ``LockRecoverer``,
  ``ChangeHooks``: nothing a Git remote answers says who can see it, guards it, proves a
  fast-forward without fetching, or reports its changes.

Credentials are never part of the locator (``urls.py`` refuses a password): git's own
credential helpers and the SSH agent (or the service user's ``~/.ssh``) authenticate, for
git's transport and for the LFS requests made here alike. A remote has no identity other
than its URL, so the URL is its repository id: a moved remote is another repository.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from reposync.config import Settings
from reposync.errors import (
    GitRateLimited,
    GitTransportError,
    NotARepository,
    PermissionDenied,
    ProviderUnavailable,
    RepositoryMismatch,
    RepositoryNotFound,
    ReposyncError,
    UsageError,
)
from reposync.git.environment import ssh_stall_guard, stall_guard
from reposync.git.process import last_line, rate_limited, run_git
from reposync.providers.base import (
    EmptyChecker,
    EndpointInfo,
    EndpointSpec,
    GitRemote,
    GitRemoteSource,
    InventoryListing,
    LfsStore,
    LfsThroughBackend,
    Provider,
    ProviderEnvironment,
)
from reposync.providers.gitremote import urls
from reposync.providers.gitremote.lfs import HelperAccess, SshAccess, configured_ssh
from reposync.providers.lfs_batch import LfsBatchStore
from reposync.providers.lfs_files import LocalLfsStore
from reposync.providers.refs import split_refs
from reposync.sync.canonical import (
    BRANCH_PREFIX,
    DEFAULT_BRANCH_IDENTITY,
    CanonicalObject,
    IndexEntry,
    default_branch,
    git_ref,
    ref_name_problem,
)
from reposync.sync.vocabulary import ObjectType

#: The process's own SSH configuration, handed to git for this provider's remotes only:
#: the agent's socket and the SSH command an operator chose (git's environment drops
#: everything else of the worker's, ``git/environment.py``).
SSH_ENVIRONMENT = ("SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_SSH_VARIANT")
#: The ref a write-access check asks the server to delete in a dry run (nothing is sent).
ACCESS_PROBE_REF = "refs/reposync/access-check"
_GIT_TYPES = frozenset({ObjectType.GIT_REF, ObjectType.DEFAULT_BRANCH})

_DENIED = (
    "authentication failed",
    "could not read username",
    "could not read password",
    "returned error: 401",
    "returned error: 403",
    "permission denied",
    "host key verification failed",
    "access denied",
)
_MISSING = (
    "not found",
    "does not appear to be a git repository",
    "returned error: 404",
    "no such repository",
)
_UNREACHABLE = (
    "could not resolve host",
    "couldn't connect",
    "failed to connect",
    "connection refused",
    "connection timed out",
    "operation timed out",
    "no route to host",
    "network is unreachable",
    "returned error: 50",
    "connection closed by remote host",
    "connection reset",
)


@dataclass(slots=True)
class Listing:
    """One ``git ls-remote --symref``: every ref, and what ``HEAD`` names."""

    refs: list[tuple[str, str]] = field(default_factory=list)
    head: str | None = None


class GitRemoteProvider(Provider, GitRemoteSource, EmptyChecker, LfsThroughBackend, LfsStore):
    name = "git"
    #: A plain server states no limit of its own (``GIT_BATCH_MAX_ITEMS`` still applies).
    max_ref_updates_per_push = None
    #: Nor a pack size one can read (``GIT_MAX_PUSH_PACK_BYTES`` may set one).
    max_push_pack_bytes = None

    def __init__(
        self, remote: urls.RemoteUrl, settings: Settings, env: ProviderEnvironment
    ) -> None:
        super().__init__()
        self.remote = remote
        self._settings = settings
        self._environment = env
        ssh = {name: os.environ[name] for name in SSH_ENVIRONMENT if name in os.environ}
        self._env = {**stall_guard(settings.git_stall_seconds), **ssh}
        if remote.kind == "ssh":
            self._env.update(
                ssh_stall_guard(settings.git_stall_seconds, ssh, lambda: configured_ssh(ssh))
            )
        self._session: requests.Session | None = None
        self._lfs_store: LfsBatchStore | LocalLfsStore | None = None

    # -- locators ---------------------------------------------------------------------

    @classmethod
    def normalize_locator(cls, location: str) -> str:
        return urls.parse(location).url

    @classmethod
    def exists(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> bool:
        remote = urls.parse(spec.locator)
        if remote.kind == "file":
            path = Path(remote.path)
            if not path.exists() or (path.is_dir() and not any(path.iterdir())):
                return False
            if _git_dir(path) is None:
                raise NotARepository(f"git:{remote.url} is not a Git repository")
            return True
        try:
            cls.open(spec, env)._list()
        except RepositoryNotFound:
            return False
        return True

    @classmethod
    def create(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> None:
        """Only a ``file://`` remote is created here (a bare repository, as ``git init
        --bare`` makes one); a server's repositories are made on the server."""
        remote = urls.parse(spec.locator)
        if remote.kind != "file":
            raise UsageError(
                f"git:{remote.url} does not exist; create the repository on its server first "
                "(a plain Git remote offers no way to create one)"
            )
        run_git(["git", "init", "-q", "--bare", remote.path])

    @classmethod
    def open(cls, spec: EndpointSpec, env: ProviderEnvironment | None = None) -> GitRemoteProvider:
        """Parses the URL; nothing is asked of the server until a read (``check_access``
        is the first)."""
        remote = urls.parse(spec.locator)
        if spec.repository_id is not None and spec.repository_id != remote.url:
            raise RepositoryMismatch(
                f"git:{remote.url} is not the remote this Binding was made for "
                f"({spec.repository_id})"
            )
        env = env or ProviderEnvironment(settings=Settings.from_env())
        if remote.kind == "file" and not Path(remote.path).exists():
            raise RepositoryNotFound(f"git:{remote.url} does not exist")
        return cls(remote, env.settings, env)

    # -- base contract ----------------------------------------------------------------

    def endpoint(self) -> EndpointInfo:
        return EndpointInfo(self.name, self.remote.url, self.remote.url)

    def check_access(self, *, write: bool) -> None:
        """Reading: the refs can be listed. Writing: a dry-run push reaches the server's
        receive-pack, where a server checks push rights (nothing is sent); its ref
        advertisement proves reading too, so it is the one request to the server."""
        if write:
            self._probe_push()
        else:
            self._list()

    def inventory_index(self, object_types: Sequence[ObjectType]) -> InventoryListing:
        wanted = sorted(set(object_types) & _GIT_TYPES, key=str)
        listing = InventoryListing(entries=[])
        if not wanted:
            return listing
        self.stats.index_reads += 1
        listed = self._list()
        entries: list[IndexEntry] = []
        for object_type in wanted:  # str order, as the listing promises
            if object_type is ObjectType.DEFAULT_BRANCH:
                head = _default_branch(listed)
                if head is not None:
                    entries.append(head.index_entry())
            else:
                refs = self._supported(listed, listing)
                entries.extend(git_ref(name, refs[name]).index_entry() for name in sorted(refs))
        listing.entries = entries
        return listing

    def read(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        return self.read_batch(object_type, [identity])[identity]

    def read_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        """Refs and the default branch from a fresh listing; a plain remote holds no
        object of any other type."""
        self.stats.object_reads += len(identities)
        if object_type not in _GIT_TYPES or not identities:
            return dict.fromkeys(identities)
        listed = self._list()
        if object_type is ObjectType.DEFAULT_BRANCH:
            head = _default_branch(listed)
            return {i: head if i == DEFAULT_BRANCH_IDENTITY else None for i in identities}
        refs = self._supported(listed, InventoryListing([]))
        return {i: git_ref(i, refs[i]) if i in refs else None for i in identities}

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    # -- capabilities -----------------------------------------------------------------

    def is_empty(self) -> bool:
        """No ref at all (a new bare repository; its ``HEAD`` names nothing yet)."""
        self.stats.index_reads += 1
        return not self._list().refs

    def git_remote(self, *, write: bool) -> GitRemote:
        """The URL as git takes it, and the process's SSH configuration. A ``file://``
        remote is a repository on this machine: its object store is borrowed, as a local
        forge's is, instead of fetched."""
        if self.remote.kind == "file":
            git_dir = _git_dir(Path(self.remote.path))
            if git_dir is None:
                raise NotARepository(f"git:{self.remote.url} is not a Git repository")
            return GitRemote(url=str(git_dir), objects_dir=str(git_dir / "objects"))
        return GitRemote(url=self.remote.url, env=dict(self._env))

    def lfs_backend(self) -> LfsBatchStore | LocalLfsStore:
        """The store git-lfs would use for this remote (``lfs.py``)."""
        if self._lfs_store is not None:
            return self._lfs_store
        if self.remote.kind == "file":
            git_dir = _git_dir(Path(self.remote.path))
            if git_dir is None:
                raise NotARepository(f"git:{self.remote.url} is not a Git repository")
            self._lfs_store = LocalLfsStore(git_dir)
            return self._lfs_store
        if self._session is None:
            factory = self._environment.http_session
            self._session = factory() if factory is not None else requests.Session()
        access = (
            HelperAccess(self.remote, self._env)
            if self.remote.kind == "http"
            else SshAccess(self.remote, self._env)
        )
        self._lfs_store = LfsBatchStore(
            self._session,
            access,
            name=f"git:{self.remote.url}",
            timeout=self._settings.http_timeout,
            clock=self._environment.clock,
            missing_means="not_served",
        )
        return self._lfs_store

    # -- git ----------------------------------------------------------------------------

    def _list(self) -> Listing:
        """``git ls-remote --symref``: refs (peeled tags left out) and ``HEAD``'s target."""
        remote = self.git_remote(write=False)
        result = run_git(["git", "ls-remote", "--symref", remote.url], env=remote.env, check=False)
        if result.returncode != 0:
            raise self._failure(result, "list the refs of")
        listed = Listing()
        for line in result.stdout.splitlines():
            value, _, name = line.partition("\t")
            if value.startswith("ref: "):
                if name == "HEAD":
                    listed.head = value.removeprefix("ref: ")
                continue
            if name.startswith("refs/") and not name.endswith("^{}"):
                listed.refs.append((name, value))
        return listed

    def _supported(self, listed: Listing, listing: InventoryListing) -> dict[str, str]:
        """Branches and tags; other namespaces counted in ``listing.unsupported``, names
        reposync cannot sync in ``listing.rejected``."""
        return split_refs(listed.refs, listing)[0]

    def _probe_push(self) -> None:
        remote = self.git_remote(write=True)
        with tempfile.TemporaryDirectory(prefix="reposync-probe-") as scratch:
            run_git(["git", "init", "-q", "--bare", scratch])
            result = run_git(
                [
                    "git",
                    "-C",
                    scratch,
                    "push",
                    "--dry-run",
                    "--porcelain",
                    remote.url,
                    f":{ACCESS_PROBE_REF}",
                ],
                env=remote.env,
                check=False,
            )
        if result.returncode != 0:
            raise self._failure(result, "push to")

    def _failure(self, result: subprocess.CompletedProcess[str], doing: str) -> ReposyncError:
        """What a failed git command says about the remote, in the error tree."""
        return remote_failure(result.stderr, doing, f"git:{self.remote.url}")


def remote_failure(stderr: str, doing: str, where: str) -> ReposyncError:
    """The error of git failing to ``doing`` ``where`` saying ``stderr``: by git's and
    curl's words, never by a number alone (the URL git names may hold any)."""
    said = last_line(stderr)
    lowered = stderr.lower()
    if any(word in lowered for word in _DENIED):
        return PermissionDenied(
            f"git cannot {doing} {where}: {said} (credentials come from git's credential "
            "helpers or the SSH agent of the service's user)"
        )
    if any(word in lowered for word in _MISSING):
        return RepositoryNotFound(f"{where} does not exist: {said}")
    if rate_limited(stderr):
        return GitRateLimited(f"git cannot {doing} {where}: its rate limit (HTTP 429): {said}")
    if any(word in lowered for word in _UNREACHABLE):
        return ProviderUnavailable(f"{where} did not answer: {said}")
    return GitTransportError(f"git could not {doing} {where}: {said}")


def _default_branch(listed: Listing) -> CanonicalObject | None:
    """``HEAD`` as a default branch: only while it names a branch the remote has."""
    head = listed.head
    if head is None or not head.startswith(BRANCH_PREFIX) or ref_name_problem(head):
        return None
    if not any(name == head for name, _ in listed.refs):
        return None
    return default_branch(head.removeprefix(BRANCH_PREFIX))


def _git_dir(path: Path) -> Path | None:
    """The Git directory of a repository on this machine: the path itself when bare,
    else its ``.git``."""
    for candidate in (path, path / ".git"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate.resolve()
    return None
