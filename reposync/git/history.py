"""When each tip was committed: the order a large push sends its refs in.

A forge that takes a bounded number of ref updates per push (GitHub: 500) makes a
bootstrap several pushes. In name order each push carries its own slice of history, with
its own pack, negotiation and connectivity check: measured 1.4x one ``git push --mirror``
of the same repository (bench/git_remote_scale.py). Newest tip first, the first push
carries nearly all the history in one pack (the main line usually reaches most of it) and
the later ones only name commits the target already holds: the mirror's time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from reposync.git.process import run_git


def commit_times(
    git_dir: Path, object_ids: Iterable[str], *, env: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Object id -> commit time (seconds) of the commit it peels to (an annotated tag to
    its commit). Ids that are missing or reach no commit are left out: callers keep them
    where they were. Two git processes whatever the count (a peel, then a log)."""
    ids = sorted(set(object_ids))
    if not ids:
        return {}
    # "<id>^{commit} <id>": cat-file peels the first word and echoes the rest.
    peeled = run_git(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch-check=%(objectname) %(rest)"],
        env=env,
        input_text="".join(f"{oid}^{{commit}} {oid}\n" for oid in ids),
    )
    commit_of: dict[str, str] = {}
    for line in peeled.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] != "missing":
            commit_of[parts[1]] = parts[0]
    if not commit_of:
        return {}
    logged = run_git(
        [
            "git",
            "--git-dir",
            str(git_dir),
            "log",
            "--no-walk=unsorted",
            "--format=%H %ct",
            "--stdin",
        ],
        env=env,
        input_text="".join(f"{commit}\n" for commit in sorted(set(commit_of.values()))),
    )
    time_of = {}
    for line in logged.stdout.splitlines():
        commit, _, seconds = line.partition(" ")
        if seconds.isdigit():
            time_of[commit] = int(seconds)
    return {oid: time_of[c] for oid, c in commit_of.items() if c in time_of}
