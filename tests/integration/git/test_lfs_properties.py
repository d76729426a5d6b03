"""Property-based: which refs an LFS problem holds back, over random pointer sets.

Each example builds branches (some on top of others) whose commits hold LFS pointers to
a few objects; a pointer may state a false size for its OID, and an object may be
missing from the source's store or corrupt there. Whatever the mix, and whatever the
Batch chunk size: a ref is held back exactly when its new history needs a broken
(OID, size) pair, with that pair's code; every other ref is pushed; the target's store
holds exactly the sound objects some ref needs; a second Run changes nothing and fails
the same refs again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.service.pipeline.stages import lfs_objects
from reposync.sync.lfs import LfsPointer
from tests.gitrepo import generate, refs
from tests.lfsrepo import commit_pointers, object_path, pointer_of, store, stored

#: Distinct sizes, so a "false size" of one object may be another's true size. Few, so
#: that branches often share an OID (with the same size or another).
CONTENTS = (b"alpha\n" * 2, b"bravo object\n" * 3, b"charlie-" * 9)
#: How the source's store holds each object (sound twice as often: a sound object that
#: another branch names with a false size is the case that went wrong).
STATES = ("sound", "sound", "missing", "corrupt")


@dataclass(frozen=True)
class File:
    content: int
    #: Another size than the content's (None: the true size).
    false_size: int | None


@dataclass(frozen=True)
class Branch:
    #: Index of an earlier branch this one is built on (None: main).
    base: int | None
    files: tuple[File, ...]


@dataclass(frozen=True)
class Example:
    states: tuple[str, ...]
    branches: tuple[Branch, ...]
    chunk: int


def _file(content: int, lie: bool, other: int) -> File:
    size = len(CONTENTS[content])
    false = len(CONTENTS[other]) if other != content else size + 1
    return File(content, false if lie else None)


files = st.builds(
    _file,
    st.integers(0, len(CONTENTS) - 1),
    st.booleans(),
    st.integers(0, len(CONTENTS) - 1),
)


@st.composite
def examples(draw: st.DrawFn) -> Example:
    states = tuple(draw(st.sampled_from(STATES)) for _ in CONTENTS)
    count = draw(st.integers(1, 4))
    branches = tuple(
        Branch(
            base=draw(st.none() | st.integers(0, n - 1)) if n else None,
            files=tuple(draw(st.lists(files, min_size=1, max_size=3))),
        )
        for n in range(count)
    )
    return Example(states, branches, draw(st.sampled_from([1, 2, 3, 100])))


def _pointer(file: File) -> LfsPointer:
    true = pointer_of(CONTENTS[file.content])
    return true if file.false_size is None else LfsPointer(true.oid, file.false_size)


def _needs(example: Example, n: int) -> set[LfsPointer]:
    """Every pointer in branch ``n``'s history (its own commit and its bases')."""
    branch = example.branches[n]
    own = {_pointer(f) for f in branch.files}
    return own if branch.base is None else own | _needs(example, branch.base)


def _broken_code(example: Example, pointer: LfsPointer) -> str | None:
    """The code of a pair that cannot move (None: it moves)."""
    content = next(c for c in CONTENTS if pointer_of(c).oid == pointer.oid)
    state = example.states[CONTENTS.index(content)]
    if state == "missing":
        return "lfs_object_missing"
    if state == "corrupt" or pointer.size != len(content):
        return "lfs_object_corrupt"
    return None


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A fresh directory per example (hypothesis runs many in one test call)."""
    with tempfile.TemporaryDirectory(prefix="reposync-lfs-prop-") as path:
        yield Path(path)


def _build(example: Example, root: Path) -> Path:
    source = generate(root / "src.git", commits=1, branches=0, tags=0)
    for content, state in zip(CONTENTS, example.states, strict=True):
        if state == "sound":
            store(source, content)
        elif state == "corrupt":  # the right size, other bytes
            pointer = store(source, content)
            object_path(source, pointer.oid).write_bytes(b"x" * len(content))
    for n, branch in enumerate(example.branches):
        commit_pointers(
            source,
            f"refs/heads/b{n}",
            {f"b{n}-{k}.bin": _pointer(f) for k, f in enumerate(branch.files)},
            base="refs/heads/main" if branch.base is None else f"refs/heads/b{branch.base}",
        )
    return source


def _failed(ctx: Any, run_id: int) -> dict[str, str | None]:
    with ctx.db.session() as session:
        rows = session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars()
        return {str(r.source_identity): r.error_code for r in rows if r.state == "failed"}


def _items(ctx: Any, run_id: int) -> set[str]:
    with ctx.db.session() as session:
        rows = session.execute(select(RunItem.source_identity).where(RunItem.run_id == run_id))
        return {str(identity) for identity in rows.scalars()}


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(example=examples())
@example(  # issue 23: ``good`` names (G, its size), ``bad`` (G, another size)
    example=Example(
        ("sound",) * len(CONTENTS),
        (Branch(None, (File(0, None),)), Branch(None, (File(0, 3),))),
        chunk=100,
    )
)
def test_only_refs_needing_a_broken_oid_and_size_are_held_back(ctx, workdir, example):
    """Held back = refs whose history needs a broken (OID, size), with its code; the
    rest pushed; the target stores the sound objects needed; a rerun fails the same."""
    root = Path(tempfile.mkdtemp(dir=workdir))
    source = _build(example, root)
    target = root / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    expected: dict[str, set[str]] = {}
    wanted: dict[str, bytes] = {}
    for n in range(len(example.branches)):
        codes = {_broken_code(example, p) for p in _needs(example, n)} - {None}
        if codes:
            expected[f"refs/heads/b{n}"] = {str(c) for c in codes}
        for pointer in _needs(example, n):
            if _broken_code(example, pointer) is None:
                wanted[pointer.oid] = next(c for c in CONTENTS if pointer_of(c) == pointer)

    with mock.patch.object(lfs_objects, "LFS_BATCH_SIZE", example.chunk):
        first = sync(ctx, request)
        second = sync(ctx, request)

    for run in (first, second):
        failed = _failed(ctx, run.id)
        assert set(failed) == set(expected), run.report["problems"]
        for ref, code in failed.items():
            assert code in expected[ref]
    on_target = refs(target)
    for name, value in refs(source).items():
        assert on_target.get(name) == (None if name in expected else value)
    assert stored(target) == wanted
    assert _items(ctx, second.id) == set(expected)  # the pushed refs are not touched again
