"""reposync's own forge on disk: a bare Git repository per repository.

The repository's immutable id lives in its Git config (``reposync.repositoryid``), so
moving or renaming the directory refreshes the locator but keeps the Binding.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import pygit2

from reposync.errors import (
    InvalidLocator,
    NotARepository,
    PermissionDenied,
    RepositoryMismatch,
    RepositoryNotFound,
)
from reposync.providers.base import (
    EndpointInfo,
    EndpointSpec,
    GitRemote,
    InventoryListing,
    Provider,
)
from reposync.sync.canonical import (
    CanonicalObject,
    IndexEntry,
    git_ref,
    git_ref_hash,
    is_supported_ref,
    ref_namespace,
    ref_object_key,
)
from reposync.sync.vocabulary import ObjectType

ID_CONFIG_KEY = "reposync.repositoryid"


class LocalProvider(Provider):
    name = "local"

    def __init__(self, repo: pygit2.Repository, locator: str) -> None:
        super().__init__()
        self._repo = repo
        self._locator = locator
        self._git_dir = str(Path(repo.path).resolve())
        self._repository_id = _ensure_repository_id(repo)

    # -- locators ---------------------------------------------------------------------

    @classmethod
    def normalize_locator(cls, location: str) -> str:
        location = location.strip()
        if not location:
            raise InvalidLocator("local: needs a path, for example local:/srv/forge/app.git")
        return os.path.abspath(os.path.expanduser(location))

    @classmethod
    def exists(cls, spec: EndpointSpec) -> bool:
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
    def create(cls, spec: EndpointSpec) -> None:
        repo = pygit2.init_repository(spec.locator, bare=True)
        _ensure_repository_id(repo)

    @classmethod
    def open(cls, spec: EndpointSpec) -> LocalProvider:
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
        provider = cls(repo, spec.locator)
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

    def inventory_index(self, object_types: Sequence[ObjectType]) -> InventoryListing:
        listing = InventoryListing(entries=[])
        if ObjectType.GIT_REF not in object_types:
            return listing
        self.stats.index_reads += 1
        entries: list[IndexEntry] = []
        for name, object_id in self._refs():
            if not is_supported_ref(name):
                namespace = ref_namespace(name)
                listing.unsupported[namespace] = listing.unsupported.get(namespace, 0) + 1
                continue
            entries.append(
                IndexEntry(
                    ObjectType.GIT_REF,
                    name,
                    ref_object_key(name),
                    name,
                    object_id,
                    git_ref_hash(object_id),
                )
            )
        entries.sort(key=lambda e: e.identity)
        listing.entries = entries
        return listing

    def read(self, object_type: ObjectType, identity: str) -> CanonicalObject | None:
        self.stats.object_reads += 1
        if object_type is not ObjectType.GIT_REF:
            return None
        ref = self._repo.references.get(identity)
        if ref is None:
            return None
        ref = ref.resolve()
        return git_ref(identity, str(ref.target))

    def close(self) -> None:
        self._repo.free()

    # -- capabilities -----------------------------------------------------------------

    def is_empty(self) -> bool:
        self.stats.index_reads += 1
        return next(iter(self._refs()), None) is None

    def visibility(self) -> str:
        return "private"

    def git_remote(self, *, write: bool) -> GitRemote:
        return GitRemote(url=self._git_dir, objects_dir=str(Path(self._git_dir) / "objects"))

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        try:
            return bool(self._repo.descendant_of(descendant, ancestor))
        except (KeyError, ValueError, pygit2.GitError):
            return False

    # -- internals --------------------------------------------------------------------

    def _refs(self) -> list[tuple[str, str]]:
        refs: list[tuple[str, str]] = []
        for ref in self._repo.references.iterator():
            if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
                # Symbolic refs (refs/remotes/origin/HEAD) are aliases; count their namespace.
                refs.append((ref.name, ""))
                continue
            refs.append((ref.name, str(ref.target)))
        return refs


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
    return None


def _ensure_repository_id(repo: pygit2.Repository) -> str:
    config = repo.config
    try:
        return str(config[ID_CONFIG_KEY])
    except KeyError:
        repository_id = str(uuid.uuid4())
        config[ID_CONFIG_KEY] = repository_id
        return repository_id
