"""The files a branch movement changed, as native Git compares two revisions.

``git diff-tree -r -z -M --name-status OLD NEW`` in a repository that holds both
commits: plumbing, so no worktree, index, hook, textconv or external diff of an
untrusted repository is involved. The answer is bounded: at most ``limit`` entries are
read (the process is stopped after one more), with a flag saying the list was cut, and
a time limit. Paths are bytes in Git; those that are not UTF-8 are shown with backslash
escapes, as reports show such ref names.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO

from reposync.git.environment import git_env

#: Entries a ``branch.moved`` event lists at most (GitHub's compare lists 300 files too).
MAX_CHANGED_FILES = 300
#: Seconds one comparison may take before it is given up (the caller holds a transaction).
TIMEOUT = 10.0
#: What ``--name-status`` letters mean here (a type change is a modification; ``-C`` is
#: not asked for, so no copies appear).
CHANGES = {"A": "added", "M": "modified", "T": "modified", "D": "deleted", "R": "renamed"}
_OBJECT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class ChangedFile:
    path: str
    #: ``added``, ``modified``, ``deleted`` or ``renamed``.
    change: str
    #: A renamed file's path before (None for the other changes).
    previous_path: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "change": self.change, "previous_path": self.previous_path}


@dataclass(frozen=True, slots=True)
class ChangedFiles:
    files: tuple[ChangedFile, ...]
    #: Whether more files changed than ``files`` lists.
    truncated: bool


def changed_files(
    git_dir: str,
    before: str,
    after: str,
    *,
    limit: int = MAX_CHANGED_FILES,
    timeout: float = TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> ChangedFiles | None:
    """What changed from ``before`` to ``after`` in the repository at ``git_dir``; None
    when that repository cannot say (an object it does not hold, a revision that is not
    an object id, such as a branch's creation from the all-zero id, or the time limit)."""
    if not (_OBJECT_ID.fullmatch(before) and _OBJECT_ID.fullmatch(after)):
        return None
    if set(before) == {"0"} or set(after) == {"0"}:
        return None
    argv = ["git", "--git-dir", git_dir, "diff-tree", "-r", "-z", "-M", "--name-status"]
    proc = subprocess.Popen(
        [*argv, before, after],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git_env(env),
    )
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    files: list[ChangedFile] = []
    truncated = False
    try:
        assert proc.stdout is not None
        for entry in parse_name_status(_fields(proc.stdout)):
            if len(files) == limit:
                truncated = True
                break
            files.append(entry)
    finally:
        timed_out = not timer.is_alive()
        timer.cancel()
        if truncated:
            proc.kill()
        if proc.stdout is not None:
            proc.stdout.close()
        status = proc.wait()
    if timed_out or (status != 0 and not truncated):
        return None
    return ChangedFiles(tuple(files), truncated)


def _fields(stream: IO[bytes]) -> Iterator[bytes]:
    """The NUL-terminated fields of ``-z`` output, read a chunk at a time."""
    pending = b""
    while chunk := stream.read(_CHUNK):
        pending += chunk
        *complete, pending = pending.split(b"\0")
        yield from complete
    if pending:
        yield pending


def parse_name_status(fields: Iterator[bytes]) -> Iterator[ChangedFile]:
    """``--name-status -z`` fields: a status (``R`` with its score), then one path, or two
    for a rename (from, to)."""
    for status in fields:
        letter = status[:1].decode("ascii", "replace")
        path = _text(next(fields, b""))
        if letter == "R":
            yield ChangedFile(_text(next(fields, b"")), "renamed", previous_path=path)
        elif letter == "C":  # a copy: the new path is added (only with -C, never asked)
            yield ChangedFile(_text(next(fields, b"")), "added")
        else:
            yield ChangedFile(path, CHANGES.get(letter, "modified"))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")
