"""Build and edit real Git repositories quickly for tests and benchmarks.

Bulk histories go through ``git fast-import`` (one process for thousands of refs);
single edits go through pygit2.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pygit2

SIGNATURE = pygit2.Signature("Test Author", "author@example.com", 1_700_000_000, 0)


def init_bare(path: Path) -> Path:
    pygit2.init_repository(str(path), bare=True)
    return path


def generate(
    path: Path,
    *,
    commits: int,
    branches: int,
    tags: int,
    annotated_every: int = 2,
    files_per_commit: int = 1,
    file_bytes: int = 64,
    bare: bool = True,
    incompressible: bool = False,
) -> Path:
    """A repository with a linear history; branches and tags spread over it.

    Branch ``main`` holds the whole history; ``branch-NNNNN`` and ``vNNNNN`` point at
    commits spread evenly along it; every ``annotated_every``-th tag is annotated.
    ``incompressible`` files are seeded random bytes, so a pack of them weighs what they
    do (for pack-size limits).
    """
    if bare:
        subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
        git_dir = path
    else:
        subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
        git_dir = path / ".git"
    lines: list[bytes] = []
    timestamp = 1_700_000_000
    for n in range(1, commits + 1):
        message = f"commit {n}\n".encode()
        lines.append(b"commit refs/heads/main\n")
        lines.append(f"mark :{n}\n".encode())
        lines.append(f"committer Test <test@example.com> {timestamp + n} +0000\n".encode())
        lines.append(f"data {len(message)}\n".encode() + message)
        if n > 1:
            lines.append(f"from :{n - 1}\n".encode())
        for f in range(files_per_commit):
            body = (
                random.Random(n * 1000 + f).randbytes(file_bytes)
                if incompressible
                else (f"file {f} of commit {n}\n" * (file_bytes // 20 + 1)).encode()[:file_bytes]
            )
            lines.append(
                f"M 644 inline dir{f % 10}/file{(n * files_per_commit + f) % 997}.txt\n".encode()
            )
            lines.append(f"data {len(body)}\n".encode() + body + b"\n")
    for b in range(branches):
        mark = 1 + (b * commits) // max(branches, 1)
        lines.append(f"reset refs/heads/branch-{b:05d}\nfrom :{mark}\n\n".encode())
    for t in range(tags):
        mark = 1 + (t * commits) // max(tags, 1)
        if annotated_every and t % annotated_every == 0:
            message = f"release {t}\n".encode()
            lines.append(f"tag v{t:05d}\nfrom :{mark}\n".encode())
            lines.append(f"tagger Test <test@example.com> {timestamp} +0000\n".encode())
            lines.append(f"data {len(message)}\n".encode() + message)
        else:
            lines.append(f"reset refs/tags/v{t:05d}\nfrom :{mark}\n\n".encode())
    subprocess.run(
        ["git", f"--git-dir={git_dir}", "fast-import", "--quiet"],
        input=b"".join(lines),
        check=True,
    )
    return path


def refs(path: Path) -> dict[str, str]:
    """Every ref of a repository (``git for-each-ref``), name -> object id."""
    out = subprocess.run(
        ["git", f"--git-dir={_git_dir(path)}", "for-each-ref", "--format=%(objectname) %(refname)"],
        check=True,
        capture_output=True,
        text=True,
        errors="surrogateescape",  # ref names are bytes: keep what is not UTF-8
    ).stdout
    result = {}
    for line in out.splitlines():
        oid, name = line.split(" ", 1)
        result[name] = oid
    return result


def commit_on(path: Path, ref: str, message: str, content: bytes | None = None) -> str:
    """Add a commit on top of ``ref`` (creating it from main when missing): a file named
    after ``message`` holding ``content`` (else the message)."""
    repo = pygit2.Repository(str(_git_dir(path)))
    existing = repo.references.get(ref)
    parent = existing.peel(pygit2.Commit) if existing is not None else repo.head.peel(pygit2.Commit)
    builder = repo.TreeBuilder(parent.tree)
    blob = repo.create_blob(message.encode() if content is None else content)
    filename = re.sub(r"[^A-Za-z0-9]+", "_", message)[:60] + ".txt"
    builder.insert(filename, blob, pygit2.enums.FileMode.BLOB)
    oid = repo.create_commit(None, SIGNATURE, SIGNATURE, message, builder.write(), [parent.id])
    repo.references.create(ref, oid, force=True)
    return str(oid)


def commit_blob(path: Path, ref: str, size: int, seed: int) -> str:
    """A commit on top of ``ref`` (from main when missing) adding ``size`` random bytes."""
    repo = pygit2.Repository(str(_git_dir(path)))
    existing = repo.references.get(ref) or repo.references["refs/heads/main"]
    parent = existing.peel(pygit2.Commit)
    builder = repo.TreeBuilder(parent.tree)
    blob = repo.create_blob(random.Random(seed).randbytes(size))
    builder.insert(f"blob-{seed}.bin", blob, pygit2.enums.FileMode.BLOB)
    message = f"{size} random bytes ({seed})"
    oid = repo.create_commit(None, SIGNATURE, SIGNATURE, message, builder.write(), [parent.id])
    repo.references.create(ref, oid, force=True)
    return str(oid)


def commit_snapshot(path: Path, ref: str, files: Mapping[bytes, bytes]) -> str:
    """A commit on top of ``ref`` (none: a root commit) whose tree is exactly ``files``
    (name -> content, at the root; names are bytes, so any Git accepts), through git's
    plumbing; ``ref`` then points to it."""
    git_dir = str(_git_dir(path))

    who = {
        f"GIT_{role}_{what}": value
        for role in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "Test Author"), ("EMAIL", "author@example.com"))
    }

    def git(*args: str, stdin: bytes | None = None) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", git_dir, *args],
            input=stdin,
            check=True,
            capture_output=True,
            env={**os.environ, **who},
        ).stdout.strip()

    entries = b"".join(
        b"100644 blob " + git("hash-object", "-w", "--stdin", stdin=content) + b"\t" + name + b"\0"
        for name, content in sorted(files.items())
    )
    tree = git("mktree", "-z", stdin=entries).decode()
    parent = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", "--verify", "-q", ref],
        capture_output=True,
        text=True,
    ).stdout.strip()
    parents = ["-p", parent] if parent else []
    commit = git("commit-tree", tree, *parents, "-m", f"snapshot of {len(files)} files").decode()
    git("update-ref", ref, commit)
    return commit


def bad_tree_commit(path: Path, ref: str) -> str:
    """A commit on top of main (set as ``ref``) whose tree names one file twice: an
    object ``git fsck`` refuses (``duplicateEntries``), as a target with
    ``receive.fsckObjects`` does."""
    repo = pygit2.Repository(str(_git_dir(path)))
    blob = repo.create_blob(b"twice\n")
    entry = b"100644 twice.txt\0" + blob.raw
    tree = repo.odb.write(pygit2.enums.ObjectType.TREE, entry + entry)
    parent = repo.references["refs/heads/main"].peel(pygit2.Commit)
    oid = repo.create_commit(None, SIGNATURE, SIGNATURE, "bad tree", tree, [parent.id])
    repo.references.create(ref, oid, force=True)
    return str(oid)


def set_ref(path: Path, ref: str, target: str) -> None:
    repo = pygit2.Repository(str(_git_dir(path)))
    repo.references.create(ref, pygit2.Oid(hex=target), force=True)


def delete_refs(path: Path, names: Sequence[str]) -> None:
    repo = pygit2.Repository(str(_git_dir(path)))
    for name in names:
        repo.references.delete(name)


def enable_reflog(path: Path) -> None:
    """Record every ref update on a bare repository (to count writes at the resource)."""
    subprocess.run(
        ["git", f"--git-dir={path}", "config", "core.logAllRefUpdates", "always"], check=True
    )


def reflog_lengths(path: Path) -> dict[str, int]:
    logs = Path(_git_dir(path)) / "logs"
    counts: dict[str, int] = {}
    if not logs.exists():
        return counts
    for file in logs.rglob("*"):
        if file.is_file():
            name = str(file.relative_to(logs))
            counts[name] = len(file.read_text().splitlines())
    return counts


def _git_dir(path: Path) -> Path:
    return path / ".git" if (path / ".git").is_dir() else path


def install_gate_hook(target: Path, entered: Path, gate: Path) -> None:
    """A real pre-receive hook in ``target`` that holds the first push until ``gate``
    exists (it touches ``entered`` when it starts waiting; at most 120 s); later pushes
    pass straight through. A Run stays inside its push, with its task's message
    delivered and not yet acknowledged, for as long as a test needs: to crash a broker,
    to watch a page show the applying stage live."""
    hook = target / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\n"
        f'if [ ! -e "{entered}" ]; then\n'
        f'  touch "{entered}"\n'
        f'  i=0; while [ ! -e "{gate}" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n'
        "fi\n"
        "cat >/dev/null\n"
    )
    hook.chmod(0o755)
