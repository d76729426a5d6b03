"""A local repository as a Binding's standby: the mark, the lock, the shadow branches.

The mark is ``reposync.standbyof`` in the repository's own Git config: the authority's
name, which the authoring API (``LocalForge.standby_of``) and the lock read. The lock is
the ``pre-receive`` hook of ``hooks.lock``. Both go into the repository and into its
wiki, which reads the mark from its own config; both go away together. A standby holds
the shadow branches of pull requests as branches (``create_branches``), where an
authority only derives them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pygit2

from reposync.errors import PermissionDenied
from reposync.providers.local import hooks

STANDBY_CONFIG_KEY = "reposync.standbyof"


def standby_of(repo: pygit2.Repository) -> str | None:
    """The authority ``repo`` is a standby of, when it is one."""
    try:
        return str(repo.config[STANDBY_CONFIG_KEY]) or None
    except KeyError:
        return None


def mark(repositories: Sequence[tuple[pygit2.Repository, Path]], authority: str | None) -> None:
    """Mark and lock each (repository, git dir) as the standby of ``authority``, or
    unmark and unlock it (``None``). Raises ``PermissionDenied`` when a hooks directory
    cannot be written, ``UsageError`` when a user's pre-receive hook cannot be moved
    aside (``hooks.lock``)."""
    for repo, git_dir in repositories:
        current = standby_of(repo)
        if authority and current != authority:
            repo.config[STANDBY_CONFIG_KEY] = authority
        elif not authority and current is not None:
            del repo.config[STANDBY_CONFIG_KEY]
        try:
            if authority:
                hooks.lock(git_dir)
            else:
                hooks.unlock(git_dir)
        except OSError as exc:
            raise PermissionDenied(
                f"cannot {'lock' if authority else 'unlock'} the standby {git_dir}: {exc}"
            ) from exc


def create_branches(
    repo: pygit2.Repository, branches: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Create each branch (name -> commit) that does not exist; returns those created and
    those Git refused (a name it cannot add beside an existing branch, as a push of it
    would be refused), each with the reason.

    Written through pygit2, so no hook runs: the standby lock refuses pushes, not
    reposync's own writes. A branch made meanwhile (a Run's push) counts as there.
    """
    created: dict[str, str] = {}
    refused: list[str] = []
    for name, oid in sorted(branches.items()):
        try:
            repo.references.create(name, pygit2.Oid(hex=oid))
        except pygit2.AlreadyExistsError:
            continue
        except (ValueError, pygit2.GitError) as exc:
            refused.append(f"{name} ({exc})")
            continue
        created[name] = oid
    return created, refused
