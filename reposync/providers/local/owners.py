"""A local owner: a directory whose bare repositories (``<name>.git``) are its own.

What a forge people browse calls an organization is, on disk, a directory such as
``/srv/forge`` holding ``app.git`` and ``lib.git`` (and their wikis, ``app.wiki.git``,
which belong to ``app`` and are no repositories of their own). Listing reads each
repository's id without writing one: a repository reposync never opened has none yet, and
a listing must change nothing. Creating one is ``git init --bare`` there, with its id.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pygit2

from reposync.errors import Conflict, InvalidLocator, OwnerNotFound
from reposync.providers.base import OwnedRepository, OwnerSpec

#: The id a repository is known by (``provider.ID_CONFIG_KEY``, which the provider module
#: imports from here: it declares the capability and calls this module).
ID_CONFIG_KEY = "reposync.repositoryid"
SUFFIX = ".git"
WIKI_SUFFIX = ".wiki.git"
#: A name that stays one directory entry and reads the same on every forge: letters,
#: digits, ``.``, ``-``, ``_`` (GitHub's own grammar of names), not ``.`` or ``..``.
_NAME = re.compile(r"^(?!\.\.?$)[A-Za-z0-9._-]{1,100}$")
#: Visibility of every local repository: a directory is read by whoever the system lets.
VISIBILITY = "private"


def repository_path(owner: str, name: str) -> str:
    """``/srv/forge`` and ``app`` -> ``/srv/forge/app.git``; a name that would leave the
    directory, or be taken for another repository's wiki, is refused."""
    if not _NAME.match(name) or name.endswith(".wiki"):
        raise InvalidLocator(
            f"{name!r} cannot name a repository of local:{owner} (letters, digits, '.', '-' "
            "and '_'; not ending in '.wiki', which is a repository's wiki)"
        )
    return str(Path(owner) / f"{name}{SUFFIX}")


def list_repositories(owner: OwnerSpec) -> list[OwnedRepository]:
    """The bare repositories directly in the owner's directory, by name. An entry named
    ``*.git`` that is no repository is not one of the owner's (nothing to bind)."""
    root = _directory(owner)
    found = []
    for entry in sorted(root.iterdir(), key=lambda path: path.name):
        name = entry.name.removesuffix(SUFFIX)
        if not entry.name.endswith(SUFFIX) or entry.name.endswith(WIKI_SUFFIX) or not name:
            continue
        repository_id = _read_id(entry)
        if repository_id is None:
            continue
        found.append(OwnedRepository(name, str(entry), repository_id, VISIBILITY))
    return found


def new_repository_path(owner: OwnerSpec, name: str) -> str:
    """Where the owner's new repository ``name`` goes; ``Conflict`` when something is
    there already (a repository or not: nothing is ever created over it)."""
    path = Path(repository_path(str(_directory(owner)), name))
    if path.exists() or path.is_symlink():
        raise Conflict(f"local:{path} exists already")
    return str(path)


def created(path: str, name: str, description: str | None) -> OwnedRepository:
    """A repository just created at ``path`` (``LocalProvider.create``: bare, with its id),
    as a listing shows it; ``description`` goes where Git keeps one (gitweb reads it)."""
    if description:
        (Path(path) / "description").write_text(description.strip() + "\n")
    repository_id = _read_id(Path(path))
    assert repository_id, path
    return OwnedRepository(name, path, repository_id, VISIBILITY, description)


def _directory(owner: OwnerSpec) -> Path:
    root = Path(owner.locator)
    if not root.is_dir():
        raise OwnerNotFound(f"local:{owner.locator} is not a directory")
    return root


def _read_id(path: Path) -> str | None:
    """The repository's id, or None when ``path`` is no bare repository (nor a repository
    at all)."""
    try:
        repo = pygit2.Repository(str(path))
    except pygit2.GitError:
        return None
    if not repo.is_bare or Path(repo.path).resolve() != path.resolve():
        return None
    return repository_id(repo)


def repository_id(repo: pygit2.Repository) -> str:
    """The id the repository's config holds, or the one it will hold once reposync writes
    there: derived from where it is, so a source is never written to be named.

    A repository reposync only reads (a user's clone, another user's mirror, a read-only
    mount) keeps its config untouched; the first write into it (as a target, after a
    handoff) stores the same id (``store_repository_id``), so its Bindings still match.
    """
    try:
        return str(repo.config[ID_CONFIG_KEY])
    except KeyError:
        git_dir = Path(repo.path).resolve()
        return str(uuid.uuid5(uuid.NAMESPACE_URL, git_dir.as_uri()))


def store_repository_id(repo: pygit2.Repository, repository_id: str) -> None:
    """Keep the id in the config, where it survives the directory being moved."""
    try:
        repo.config[ID_CONFIG_KEY]
    except KeyError:
        repo.config[ID_CONFIG_KEY] = repository_id
