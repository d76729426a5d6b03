"""LFS objects through the real pipeline, local forge -> local forge.

Objects move by OID before the refs that need them; a ref whose object cannot move
(missing, corrupt, too large) fails with that code and is not pushed; a checkpoint
moves only what the changed refs need, a no-change Run reads no LFS content. A local
forge's store is git-lfs's own layout: the real git-lfs client clones from it.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.sync.lfs import LfsPointer
from tests.gitrepo import generate, refs
from tests.lfsrepo import (
    clone_with_lfs,
    commit_lfs,
    commit_pointers,
    object_path,
    store,
    stored,
)

BIG = b"large binary payload\n" * 400


def _items(ctx: Any, run_id: int) -> dict[str, RunItem]:
    with ctx.db.session() as session:
        rows = session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars()
        return {str(r.source_identity): r for r in rows}


def _lfs_io(run: Any) -> dict[str, int]:
    return dict(run.report["io"].get("lfs", {}))


def _source(tmp_path: Path) -> Path:
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    commit_lfs(source, "refs/heads/main", {"model.bin": BIG, "small.bin": b"tiny\n"})
    return source


def test_lfs_objects_reach_the_target_before_their_refs_and_git_lfs_reads_them(ctx, tmp_path):
    """Bootstrap: every object lands in the target's git-lfs store, verified; refs follow;
    git-lfs clones the target over file:// and smudges the files to their bytes."""
    source = _source(tmp_path)
    target = tmp_path / "dst.git"

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert run.status == "completed", run.report["problems"]
    assert refs(target) == refs(source)
    assert stored(target) == stored(source)
    assert _lfs_io(run) == {
        "objects_scanned": 2,
        "objects_uploaded": 2,
        "bytes_uploaded": len(BIG) + len(b"tiny\n"),
    }
    clone = clone_with_lfs(f"file://{target}", tmp_path / "clone")
    assert (clone / "model.bin").read_bytes() == BIG
    assert (clone / "small.bin").read_bytes() == b"tiny\n"


def test_a_checkpoint_moves_only_what_the_changed_refs_need(ctx, tmp_path):
    """A new commit on one branch moves its one new object; objects of unchanged history
    are not even scanned; a no-change Run moves nothing and scans nothing."""
    source = _source(tmp_path)
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")
    sync(ctx, request)
    commit_lfs(source, "refs/heads/branch-00000", {"new.bin": b"new object\n" * 50})

    second = sync(ctx, request)

    assert second.status == "completed", second.report["problems"]
    assert _lfs_io(second) == {
        "objects_scanned": 1,
        "objects_uploaded": 1,
        "bytes_uploaded": len(b"new object\n" * 50),
    }
    assert stored(target) == stored(source)
    third = sync(ctx, request)
    assert third.status == "completed"
    assert _lfs_io(third) == {}
    assert _items(ctx, third.id) == {}


def test_a_ref_whose_object_is_missing_on_the_source_fails_and_is_not_pushed(ctx, tmp_path):
    """The ref needing a missing object fails with lfs_object_missing and stays off the
    target; the other refs go; once the object is back, the next Run pushes the ref."""
    source = generate(tmp_path / "src.git", commits=3, branches=0, tags=0)
    commit_lfs(source, "refs/heads/main", {"ok.bin": b"fine\n"})
    _, (lost,) = commit_lfs(
        source, "refs/heads/broken", {"lost.bin": b"gone\n" * 9}, keep_objects=False
    )
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")

    first = sync(ctx, request)

    item = _items(ctx, first.id)["refs/heads/broken"]
    assert item.state == "failed"
    assert item.error_code == "lfs_object_missing"
    assert lost.oid in (item.error_message or "")
    assert "refs/heads/broken" not in refs(target)
    assert refs(target)["refs/heads/main"] == refs(source)["refs/heads/main"]
    assert not object_path(target, lost.oid).exists()
    assert _lfs_io(first)["objects_failed"] == 1
    problem = next(p for p in first.report["problems"] if p["error_code"] == "lfs_object_missing")
    assert problem["suggested_action"]

    store(source, b"gone\n" * 9)
    second = sync(ctx, request)
    assert second.status == "completed", second.report["problems"]
    assert refs(target) == refs(source)
    assert object_path(target, lost.oid).read_bytes() == b"gone\n" * 9


def test_a_corrupt_source_object_fails_its_ref_and_never_reaches_the_target(ctx, tmp_path):
    """Bytes that do not hash to their OID: lfs_object_corrupt, nothing stored, no push."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    _, (pointer,) = commit_lfs(source, "refs/heads/main", {"data.bin": b"original\n" * 20})
    object_path(source, pointer.oid).write_bytes(b"tampered\n" * 20)  # same size, wrong hash
    target = tmp_path / "dst.git"

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    item = _items(ctx, run.id)["refs/heads/main"]
    assert (item.state, item.error_code) == ("failed", "lfs_object_corrupt")
    assert "refs/heads/main" not in refs(target)
    assert stored(target) == {}


def test_objects_over_the_size_cap_are_refused_with_a_clear_problem(ctx, tmp_path):
    """REPOSYNC_LFS_MAX_OBJECT_SIZE: a larger object fails its ref as lfs_object_too_large,
    unread; refs with small objects still go."""
    ctx.settings = ctx.settings.with_overrides(lfs_max_object_size=1000)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    commit_lfs(source, "refs/heads/main", {"small.bin": b"s" * 999})
    _, (big,) = commit_lfs(source, "refs/heads/huge", {"big.bin": b"b" * 1001})
    target = tmp_path / "dst.git"

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    item = _items(ctx, run.id)["refs/heads/huge"]
    assert (item.state, item.error_code) == ("failed", "lfs_object_too_large")
    assert "REPOSYNC_LFS_MAX_OBJECT_SIZE" in (item.error_message or "")
    assert "refs/heads/huge" not in refs(target)
    assert set(stored(target)) == set(stored(source)) - {big.oid}
    codes = {p["error_code"] for p in run.report["problems"]}
    assert "lfs_object_too_large" in codes


def test_a_false_size_on_one_branch_holds_back_only_that_branch(ctx, tmp_path):
    """An LFS object is its OID and its size: ``good`` points at (G, 10) whose object is
    stored, ``bad`` at (G, 3); only ``bad`` fails (lfs_object_corrupt), ``good`` reaches
    the target with its object in the first Run and stays there in the next."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    content = b"0123456789"
    real = store(source, content)
    false = LfsPointer(real.oid, 3)
    commit_pointers(source, "refs/heads/good", {"data.bin": real})
    commit_pointers(source, "refs/heads/bad", {"data.bin": false})
    target = tmp_path / "dst.git"
    request = SyncRequest(f"local:{source}", f"local:{target}")

    for run in (sync(ctx, request), sync(ctx, request)):
        items = _items(ctx, run.id)
        assert refs(target)["refs/heads/good"] == refs(source)["refs/heads/good"]
        assert "refs/heads/bad" not in refs(target)
        bad = items["refs/heads/bad"]
        assert (bad.state, bad.error_code) == ("failed", "lfs_object_corrupt")
        assert "(3 bytes)" in (bad.error_message or "")
        assert {p["error_code"] for p in run.report["problems"]} == {"lfs_object_corrupt"}
    assert stored(target) == {real.oid: content}


def _link_out(entry: Path, outside: Path) -> None:
    """Make ``entry`` (an LFS store file or directory) a symbolic link to ``outside``."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    if entry.is_file():
        entry.unlink()
    entry.symlink_to(outside)


@pytest.mark.parametrize("linked", ["object", "fan-out directory", "store"])
def test_a_source_store_entry_linked_out_of_the_repository_is_never_followed(ctx, tmp_path, linked):
    """A symbolic link in the source's LFS store (the object's file, a fan-out directory
    or ``lfs`` itself) to a file outside whose bytes are even the object's: not read,
    not sent; the ref needing it fails lfs_object_not_a_file, the others go (all of them
    fail when the whole store is a link)."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    fine = store(source, b"fine\n")
    commit_pointers(source, "refs/heads/main", {"fine.bin": fine})
    secret = b"a file outside the repository\n"
    _, (leak,) = commit_lfs(source, "refs/heads/leak", {"x.bin": secret}, keep_objects=False)
    outside = tmp_path / "outside"
    store(outside, secret)  # outside/lfs/objects/..., the layout a link would lead into
    if linked == "object":
        _link_out(object_path(source, leak.oid), object_path(outside, leak.oid))
    elif linked == "fan-out directory":
        _link_out(
            object_path(source, leak.oid).parent.parent,
            object_path(outside, leak.oid).parent.parent,
        )
    else:
        store(outside, b"fine\n")
        shutil.rmtree(source / "lfs")
        _link_out(source / "lfs", outside / "lfs")
    target = tmp_path / "dst.git"

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    items = _items(ctx, run.id)
    assert (items["refs/heads/leak"].state, items["refs/heads/leak"].error_code) == (
        "failed",
        "lfs_object_not_a_file",
    )
    assert "refs/heads/leak" not in refs(target)
    assert secret not in stored(target).values()
    if linked == "store":
        assert items["refs/heads/main"].error_code == "lfs_object_not_a_file"
        assert stored(target) == {}
    else:
        assert refs(target)["refs/heads/main"] == refs(source)["refs/heads/main"]
        assert stored(target) == {fine.oid: b"fine\n"}
    problem = next(p for p in run.report["problems"] if p["error_code"] == "lfs_object_not_a_file")
    assert "never followed" in problem["suggested_action"]


@pytest.mark.parametrize("linked", ["fan-out directory", "store", "tmp"])
def test_a_linked_directory_in_the_target_store_is_never_written_through(ctx, tmp_path, linked):
    """The target's ``lfs``, ``lfs/tmp`` or a fan-out directory is a link to a directory
    outside the repository: nothing is written there; the ref needing the object fails
    lfs_object_not_a_file and is not pushed."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    _, (pointer,) = commit_lfs(source, "refs/heads/main", {"data.bin": b"payload\n" * 4})
    target = generate(tmp_path / "dst.git", commits=0, branches=0, tags=0)
    outside = tmp_path / "outside"
    outside.mkdir()
    entry = {
        "fan-out directory": object_path(target, pointer.oid).parent.parent,
        "store": target / "lfs",
        "tmp": target / "lfs" / "tmp",
    }[linked]
    _link_out(entry, outside)

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    item = _items(ctx, run.id)["refs/heads/main"]
    assert (item.state, item.error_code) == ("failed", "lfs_object_not_a_file")
    assert "refs/heads/main" not in refs(target)
    assert list(outside.rglob("*")) == []


def test_a_link_where_the_target_object_belongs_is_replaced_not_trusted(ctx, tmp_path):
    """The target's entry for the object is a link to a file outside (of the right size):
    not taken as present; the object is written as a file in its place, and the file
    the link named is untouched."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    content = b"payload\n" * 4
    _, (pointer,) = commit_lfs(source, "refs/heads/main", {"data.bin": content})
    target = generate(tmp_path / "dst.git", commits=0, branches=0, tags=0)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"x" * len(content))
    _link_out(object_path(target, pointer.oid), outside)

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert run.status == "completed", run.report["problems"]
    entry = object_path(target, pointer.oid)
    assert not entry.is_symlink()
    assert entry.read_bytes() == content
    assert outside.read_bytes() == b"x" * len(content)
    assert refs(target)["refs/heads/main"] == refs(source)["refs/heads/main"]


def test_a_repository_without_pointers_walks_no_history_for_them(ctx, tmp_path, monkeypatch):
    """Bootstrap and checkpoint of a repository that never used LFS: its stored objects
    prove it holds no pointer, so the history walk (``scan_pointers``) never runs; a
    pointer committed later (no ``.gitattributes``) is walked for and its object moved."""
    from reposync.service.pipeline.stages import lfs_objects
    from tests.gitrepo import commit_snapshot
    from tests.lfsrepo import pointer_text

    source = generate(tmp_path / "src.git", commits=30, branches=3, tags=3, file_bytes=300)
    target = tmp_path / "dst.git"
    walks: list[list[str]] = []
    real_scan = lfs_objects.scan_pointers

    def counted(git_dir: Path, tips: Any, known: Any = ()) -> Any:
        walks.append(list(tips))
        return real_scan(git_dir, tips, known)

    monkeypatch.setattr(lfs_objects, "scan_pointers", counted)

    first = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    commit_snapshot(source, "refs/heads/main", {b"readme.txt": b"plain text\n" * 20})
    second = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert (first.status, second.status) == ("completed", "completed")
    assert second.report["counters"]["updated"] == 1
    assert walks == []

    pointer = store(source, BIG)
    tip = commit_snapshot(source, "refs/heads/main", {b"model.bin": pointer_text(pointer)})
    third = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert third.status == "completed", third.report["problems"]
    assert walks == [[tip]]
    assert stored(target) == {pointer.oid: BIG}
    assert refs(target)["refs/heads/main"] == tip


def _slow_proof(monkeypatch: Any, before_answer: Any) -> list[bool]:
    """The background proof answers only after ``before_answer()`` returned; its answers."""
    from reposync.git import lfs_proof

    answers: list[bool] = []
    real = lfs_proof.holds_no_pointer

    def slow(git_dir: Path, cache: Any, **options: Any) -> bool:
        answer = real(git_dir, cache, **options)
        before_answer()
        answers.append(answer)
        return answer

    monkeypatch.setattr(lfs_proof, "holds_no_pointer", slow)
    return answers


def _quarantined(target: Path) -> bool:
    return any(f.is_file() for f in target.glob("objects/*incoming-*/**/*"))


def test_a_proof_beside_the_push_lands_no_ref_before_the_objects_it_needs(
    ctx, tmp_path, monkeypatch
):
    """The proof runs beside the push; when it finds a pointer (late: after the push's
    objects reached the target), no ref has landed, the objects move first, and the
    refs follow in the push after them."""
    from reposync.providers.base import LfsThroughBackend

    source = _source(tmp_path)
    target = tmp_path / "dst.git"

    def once_the_push_waits() -> None:
        deadline = time.monotonic() + 20
        while not _quarantined(target) and time.monotonic() < deadline:
            time.sleep(0.01)

    answers = _slow_proof(monkeypatch, once_the_push_waits)
    refs_at_upload: list[dict[str, str]] = []
    real_upload = LfsThroughBackend.lfs_upload

    def upload(self: Any, transfer: Any, content: Any) -> None:
        refs_at_upload.append(refs(target))
        real_upload(self, transfer, content)

    monkeypatch.setattr(LfsThroughBackend, "lfs_upload", upload)

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert run.status == "completed", run.report["problems"]
    assert answers == [False]
    assert refs_at_upload == [{}, {}]
    assert refs(target) == refs(source)
    assert stored(target) == stored(source)
    assert not list(target.glob("objects/*incoming-*"))


def test_a_repository_without_pointers_is_pushed_while_its_proof_runs(ctx, tmp_path, monkeypatch):
    """No pointer stored: the push's objects reach the target before the proof answers,
    its refs land after the answer, and no history is walked."""
    from reposync.service.pipeline.stages import lfs_objects

    source = generate(tmp_path / "src.git", commits=30, branches=3, tags=3, file_bytes=300)
    target = tmp_path / "dst.git"
    seen: list[tuple[bool, dict[str, str]]] = []

    def once_the_push_waits() -> None:
        deadline = time.monotonic() + 20
        while not _quarantined(target) and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append((_quarantined(target), refs(target)))

    answers = _slow_proof(monkeypatch, once_the_push_waits)
    monkeypatch.setattr(lfs_objects, "scan_pointers", None)  # a walk would fail the Run

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    assert run.status == "completed", run.report["problems"]
    assert answers == [True]
    assert seen == [(True, {})]
    assert refs(target) == refs(source)
