"""A scratch repository that holds exactly the refs one push sends.

Pushing ``<sha>:<ref>`` refspecs costs git a scan of every local ref per refspec
(measured here: ~8 ms per ref on a 5,000-ref source, 34 s for 4,000 refs). Instead, the
refs of one batch are written into this bare repository, which borrows the source's
objects through ``objects/info/alternates``, and pushed with two pattern refspecs: the
same cost as ``git push --mirror``. The source repository itself is never written to.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reposync.git.environment import git_env


class PushWorkspace:
    def __init__(self, path: Path, objects_dir: str) -> None:
        self.path = path
        self.objects_dir = objects_dir

    def prepare(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "init", "-q", "--bare", str(self.path)],
                check=True,
                env=git_env(),
                stdout=subprocess.DEVNULL,
            )
        set_alternates(self.path, [self.objects_dir])

    def stage(self, refs: Mapping[str, str]) -> None:
        """Make ``refs`` (name -> object id) the workspace's only refs."""
        self.prepare()
        refs_dir = self.path / "refs"
        for loose in list(refs_dir.rglob("*")):  # never created by us, but be sure
            if loose.is_file():
                loose.unlink()
        # The packed-refs format (gitrepository-layout(5)); no traits line, so git makes
        # no assumption about sorting or peeling.
        lines = "".join(f"{oid} {name}\n" for name, oid in sorted(refs.items()))
        _atomic_write(self.path / "packed-refs", lines)


def set_alternates(git_dir: Path, objects_dirs: Sequence[str]) -> None:
    """Make ``objects_dirs`` the object stores ``git_dir`` borrows from (and only them)."""
    alternates = git_dir / "objects" / "info" / "alternates"
    text = "".join(f"{d}\n" for d in objects_dirs)
    current = alternates.read_text() if alternates.exists() else ""
    if current == text:
        return
    if not text:
        alternates.unlink()
        return
    alternates.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(alternates, text)


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + f".tmp{os.getpid()}")
    temporary.write_text(text)
    os.replace(temporary, path)
