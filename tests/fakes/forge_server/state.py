"""The bookkeeping both test servers' states share: one re-entrant lock every route, the
Git server and every test take; id sequences per kind of record; accounts, tokens and
repositories by login, value and id; finding a repository by ``"owner/name"``.

What a forge keeps and how it makes records (GitHub's numbering and Apps, Forgejo's
organizations and scopes) is its own state's (tests/fakes/github/state.py,
tests/fakes/forgejo/state.py).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Generic, TypeVar

from tests.fakes.forge_server.clock import Clock, whole_seconds
from tests.fakes.gitserver import bare_repos

RepoT = TypeVar("RepoT", bound="_Named")
UserT = TypeVar("UserT")
TokenT = TypeVar("TokenT")


class _Owner:
    login: str


class _Named:
    owner: _Owner
    name: str


class StateBase(Generic[RepoT, UserT, TokenT]):
    """Lock, ids, accounts, tokens and repositories of one forge instance."""

    def __init__(
        self, root: Path, clock: Clock, *, folders: Iterable[str], ids: Mapping[str, int]
    ) -> None:
        """``folders``: made under ``root`` beside ``repositories``; ``ids``: each kind of
        record and the first id of its sequence."""
        self.root = root
        self.clock = clock
        self.lock = threading.RLock()
        for folder in ("repositories", *folders):
            (root / folder).mkdir(parents=True, exist_ok=True)
        self.users: dict[str, UserT] = {}
        self.repos: dict[int, RepoT] = {}
        self.tokens: dict[str, TokenT] = {}
        self._ids = {kind: itertools.count(start) for kind, start in ids.items()}

    def now(self) -> datetime:
        return whole_seconds(self.clock())

    def next_id(self, kind: str) -> int:
        return next(self._ids[kind])

    def git_dir_for(self, repo_id: int) -> Path:
        """Where a new repository's bare Git repository goes."""
        return self.root / "repositories" / f"{repo_id}.git"

    def _account(self, login: str, make: Callable[[int], UserT]) -> UserT:
        """The account ``login`` (in any case), made by ``make(id)`` on first use."""
        with self.lock:
            found = self.users.get(login.casefold())
            if found is None:
                found = make(self.next_id("user"))
                self.users[login.casefold()] = found
            return found

    def _init_repo(
        self,
        full_name: str,
        default_branch: str,
        auto_init: bool,
        bot: tuple[str, str] = bare_repos.BOT_SIGNATURE,
    ) -> tuple[int, Path, datetime]:
        """A new repository's id, its bare Git repository (a first commit by ``bot`` if
        ``auto_init``) and the time; ValueError when ``full_name`` is taken. The caller
        holds the lock until it has stored the repository."""
        owner, name = full_name.split("/", 1)
        if self._lookup(owner, name) is not None:
            raise ValueError(f"{full_name} already exists")
        repo_id = self.next_id("repo")
        git_dir = self.git_dir_for(repo_id)
        now = self.now()
        bare_repos.init(git_dir, default_branch, auto_init=auto_init, when=now, bot=bot)
        return repo_id, git_dir, now

    def _lookup(self, owner: str, name: str) -> RepoT | None:
        key = (owner.casefold(), name.casefold())
        with self.lock:
            for repo in self.repos.values():
                if (repo.owner.login.casefold(), repo.name.casefold()) == key:
                    return repo
        return None

    def repo(self, ref: str | RepoT) -> RepoT:
        """The repository ``"owner/name"`` (KeyError when there is none), or ``ref``."""
        if not isinstance(ref, str):
            return ref
        owner, name = ref.split("/", 1)
        found = self._lookup(owner, name)
        if found is None:
            raise KeyError(ref)
        return found

    def token(self, value: str) -> TokenT | None:
        with self.lock:
            return self.tokens.get(value)
