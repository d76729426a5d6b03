"""Keeping each push's pack under the target's limit.

A forge refuses a push whose pack is larger than it accepts (GitHub: 2 GiB, with
"pack exceeds maximum allowed size"); the whole atomic group is then lost. Before a
group is pushed its pack is estimated, and a group that would exceed the limit is split
by history:

* the refs are ordered by the date of the commit they point at, older first, so the
  first pushes carry the old history and each later one only what it adds;
* each ref's own share is what ``git rev-list --objects --disk-usage`` counts for its new
  value minus everything the target holds (its advertised refs) or will hold by then
  (the refs ordered before it);
* refs are taken in that order while the group's total stays under the limit; a ref
  whose own share alone exceeds it cannot be pushed at all: it is set aside
  (``too_large``), and the rest still goes.

Estimates read the sizes objects take in the source's store (compressed, deltified), which
is what ``pack-objects`` reuses when it sends them. The walk is skipped altogether when the
whole object store fits the limit, the common case, so a push of a small repository costs
nothing more.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    import subprocess


class _RunGit(Protocol):
    def __call__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        input_text: str | None = None,
    ) -> subprocess.CompletedProcess[str]: ...


class _Update(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def new(self) -> str | None: ...


def effective_limit(declared: int | None, configured: int) -> int | None:
    """The pack-size limit of pushes to a target: the forge's own (``declared``, None when
    it has none) lowered by the ``git_max_push_pack_bytes`` setting when that is > 0."""
    if configured > 0:
        return configured if declared is None else min(declared, configured)
    return declared


def store_bytes(objects_dirs: Iterable[str]) -> int:
    """Bytes of the object stores a push may send from: an upper bound of any pack."""
    total = 0
    for objects in objects_dirs:
        for dirpath, _, filenames in os.walk(objects):
            name = os.path.basename(dirpath)
            if name == "pack":
                total += sum(_size(dirpath, f) for f in filenames if f.endswith(".pack"))
            elif len(name) == 2:  # a loose object's fan-out directory
                total += sum(_size(dirpath, f) for f in filenames)
    return total


def _size(directory: str, name: str) -> int:
    try:
        return os.stat(os.path.join(directory, name)).st_size
    except OSError:  # repacked meanwhile: its objects are counted in the new pack
        return 0


U = TypeVar("U", bound=_Update)


@dataclass(slots=True)
class PackSplit(Generic[U]):
    """Groups to push in order (older history first), and refs that fit in no push."""

    groups: list[list[U]] = field(default_factory=list)
    #: ref name -> estimated bytes of its own pack (over the limit).
    too_large: dict[str, int] = field(default_factory=dict)


class PackEstimator:
    """Estimates packs of one repository (a push workspace that sees the source's objects)."""

    def __init__(
        self, git_dir: Path, run_git: _RunGit, env: Mapping[str, str] | None = None
    ) -> None:
        self.git_dir = git_dir
        self._run_git = run_git
        self._env = env

    def pack_bytes(self, tips: Iterable[str], exclude: Collection[str]) -> int:
        """Bytes of the objects reachable from ``tips`` and not from ``exclude`` (object
        ids; those this repository does not have are ignored)."""
        lines = [*tips, *(f"^{oid}" for oid in exclude)]
        result = self._run_git(
            [
                "git",
                "--git-dir",
                str(self.git_dir),
                "rev-list",
                "--objects",
                "--disk-usage",
                "--ignore-missing",
                "--stdin",
            ],
            env=self._env,
            input_text="\n".join(lines) + "\n",
        )
        return int(result.stdout.strip() or 0)

    def commit_dates(self, oids: Iterable[str]) -> dict[str, int]:
        """Committer date of what each object id points at (tags peeled); 0 if unknown."""
        wanted = sorted(set(oids))
        if not wanted:
            return {}
        result = self._run_git(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", *(f"{o}^{{}}" for o in wanted)],
            env=self._env,
            check=False,
        )
        peeled = result.stdout.split() if result.returncode == 0 else wanted
        if len(peeled) != len(wanted):
            peeled = wanted
        shown = self._run_git(
            [
                "git",
                "--git-dir",
                str(self.git_dir),
                "log",
                "--no-walk=unsorted",
                "--ignore-missing",
                "--format=%H %ct",
                "--stdin",
            ],
            env=self._env,
            input_text="\n".join(peeled) + "\n",
            check=False,
        )
        dates: dict[str, int] = {}
        for line in shown.stdout.splitlines():
            oid, _, when = line.partition(" ")
            if when.isdigit():
                dates[oid] = int(when)
        return {o: dates.get(p, 0) for o, p in zip(wanted, peeled, strict=True)}

    def split(self, updates: Sequence[U], limit: int, target_has: Collection[str]) -> PackSplit[U]:
        """``updates`` in groups whose estimated packs stay under ``limit`` bytes.

        One group, unchanged, when its whole pack fits; otherwise as the module says.
        Deletes send no objects: they go with the first group.
        """
        tips = [u.new for u in updates if u.new is not None]
        if self.pack_bytes(tips, target_has) <= limit:
            return PackSplit[U](groups=[list(updates)])
        dates = self.commit_dates(tips)
        deletes = [u for u in updates if u.new is None]
        ordered = sorted(
            (u for u in updates if u.new is not None),
            key=lambda u: (dates.get(u.new or "", 0), u.name),
        )
        split = PackSplit[U]()
        landed = set(target_has)
        current: list[U] = list(deletes)
        current_bytes = 0
        for update in ordered:
            assert update.new is not None
            own = self.pack_bytes([update.new], landed | {u.new for u in current if u.new})
            if own > limit:
                split.too_large[update.name] = own
                continue
            if current_bytes + own > limit and any(u.new is not None for u in current):
                split.groups.append(current)
                landed.update(u.new for u in current if u.new is not None)
                current, current_bytes = [], 0
            current.append(update)
            current_bytes += own
        if current:
            split.groups.append(current)
        return split


def advertised_oids(
    run_git: _RunGit,
    url: str,
    env: Mapping[str, str] | None,
) -> set[str]:
    """Object ids of every ref the target advertises (what it holds, for estimates)."""
    result = run_git(["git", "ls-remote", url], env=env)
    return {line.split("\t", 1)[0] for line in result.stdout.splitlines() if "\t" in line}
