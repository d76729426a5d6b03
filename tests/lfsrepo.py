"""Git LFS content for tests: pointer blobs committed with pygit2, objects stored where
git-lfs keeps them (``<git dir>/lfs/objects/<aa>/<bb>/<oid>``), and the real ``git-lfs``
client (Debian's package, installed by ``scripts/test``) where a test needs one."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pygit2

from reposync.sync.lfs import LfsPointer
from tests.gitrepo import SIGNATURE


def git_dir(path: Path) -> Path:
    return path / ".git" if (path / ".git").is_dir() else path


def pointer_of(content: bytes) -> LfsPointer:
    return LfsPointer(hashlib.sha256(content).hexdigest(), len(content))


def pointer_text(pointer: LfsPointer) -> bytes:
    """A pointer exactly as git-lfs writes one."""
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{pointer.oid}\n"
        f"size {pointer.size}\n"
    ).encode()


def object_path(path: Path, oid: str) -> Path:
    return git_dir(path) / "lfs" / "objects" / oid[0:2] / oid[2:4] / oid


def store(path: Path, content: bytes) -> LfsPointer:
    """Put an object into a repository's LFS store."""
    pointer = pointer_of(content)
    target = object_path(path, pointer.oid)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return pointer


def stored(path: Path) -> dict[str, bytes]:
    """Every object of a repository's LFS store, OID -> bytes."""
    root = git_dir(path) / "lfs" / "objects"
    return {p.name: p.read_bytes() for p in root.glob("*/*/*") if p.is_file()}


def commit_lfs(
    path: Path, ref: str, files: Mapping[str, bytes], *, keep_objects: bool = True
) -> tuple[str, list[LfsPointer]]:
    """A commit on ``ref`` (from main, or a root commit) adding ``files`` as LFS pointers;
    their objects go to the store unless ``keep_objects`` is False."""
    pointers = {
        name: store(path, content) if keep_objects else pointer_of(content)
        for name, content in files.items()
    }
    return commit_pointers(path, ref, pointers), list(pointers.values())


def commit_pointers(
    path: Path, ref: str, pointers: Mapping[str, LfsPointer], *, base: str = "refs/heads/main"
) -> str:
    """A commit on ``ref`` (a new ref starts from ``base``, or is a root commit) adding
    these pointer files as they are, whether or not the store has their objects (a
    pointer may lie)."""
    repo = pygit2.Repository(str(git_dir(path)))
    existing = repo.references.get(ref)
    if existing is None and base in repo.references:
        existing = repo.references[base]
    parent = existing.peel(pygit2.Commit) if existing is not None else None
    builder = repo.TreeBuilder(parent.tree) if parent is not None else repo.TreeBuilder()
    attributes = "".join(f"/{name} filter=lfs diff=lfs merge=lfs -text\n" for name in pointers)
    if parent is not None and ".gitattributes" in parent.tree:
        attributes = parent.tree[".gitattributes"].data.decode() + attributes
    builder.insert(".gitattributes", repo.create_blob(attributes), pygit2.enums.FileMode.BLOB)
    for name, pointer in pointers.items():
        builder.insert(name, repo.create_blob(pointer_text(pointer)), pygit2.enums.FileMode.BLOB)
    oid = repo.create_commit(
        None,
        SIGNATURE,
        SIGNATURE,
        f"add {', '.join(pointers)}",
        builder.write(),
        [parent.id] if parent is not None else [],
    )
    repo.references.create(ref, oid, force=True)
    return str(oid)


def git_lfs(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run the real git-lfs client (through git) in a work tree."""
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=full_env
    ).stdout


def clone_with_lfs(
    url: str, into: Path, branch: str = "main", env: Mapping[str, str] | None = None
) -> Path:
    """``git clone`` with git-lfs smudging every pointer into its object's bytes."""
    home = into.parent / f"{into.name}-home"
    home.mkdir(parents=True, exist_ok=True)
    clone_env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    git_lfs(into.parent, "lfs", "install", "--skip-repo", env=clone_env)
    git_lfs(into.parent, "clone", "-q", "-b", branch, url, str(into), env=clone_env)
    return into
