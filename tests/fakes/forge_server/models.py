"""What both test servers' repository records derive from where they keep it: the full
name, the wiki beside the bare repository, and the default branch, which is the bare
repository's HEAD (one truth for the API and for ``git``).

The records' fields stay each forge's own (GitHub's ``created_at``, Forgejo's ``created``
after its tables): only what is computed from them is shared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from tests.fakes.gitserver import bare_repos


class _Owner(Protocol):
    @property
    def login(self) -> str: ...


class GitRepo:
    """A mixin of a repository record with ``owner``, ``name`` and ``git_dir`` fields."""

    owner: _Owner
    name: str
    git_dir: Path

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    @property
    def wiki_dir(self) -> Path:
        """The wiki's bare repository beside the repository's (there once created)."""
        return self.git_dir.with_name(self.git_dir.name.removesuffix(".git") + ".wiki.git")

    @property
    def default_branch(self) -> str:
        """The bare repository's HEAD: one truth for the API and ``git``."""
        return bare_repos.head_branch(self.git_dir)

    @property
    def empty(self) -> bool:
        return bare_repos.is_empty(self.git_dir)
