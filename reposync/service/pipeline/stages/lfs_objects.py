"""LFS objects move before the refs that need them; a ref never goes without them.

Called by the Git refs' applier right before its push. For the batch's new ref values
it walks, with native git, the history reachable from them and not from what the target
already has (its refs as the plan and the links know them: ``git lfs pre-push`` walks
the same way), and streams the LFS pointers found there through both stores in Batch API
chunks of ``LFS_BATCH_SIZE``:

1. the size cap (``REPOSYNC_LFS_MAX_OBJECT_SIZE``) refuses larger objects unread;
2. the source is asked for them (``download``), the target whether it needs them
   (``upload``): objects it has are skipped, unread;
3. each needed object is read from the source into a spool file while its SHA-256 and
   size are checked (a corrupt or missing object is never sent), then uploaded; the
   target verifies it on its side (a Batch ``verify`` action, a local hash);
4. the target is asked again: only objects it now reports as present count as
   uploaded. An upload whose answer was lost is settled by that question, never re-sent
   blindly; if the target still lacks it, the batch is retried later (retryable error).

An object is its OID **and** its size (as git-lfs's Batch API names it): two pointers
with one OID and different sizes are two objects, at most one of which can exist. An
object that cannot be moved (missing, corrupt or not a file on the source, too large,
refused by the target's full disk) fails the items of the refs whose new history needs
that (OID, size), with its code; those refs, and only those, are left out of the push.
A checkpoint with no changed ref never gets here: no LFS content is read. Nor is any
history walked when the repository provably holds no pointer at all
(``reposync.git.lfs_proof``: its stored objects read once, its packs remembered): a
repository that never used LFS pays a bootstrap's first proof, then nothing. The proof
runs beside the push (``start_proof``), whose refs wait for it; only when it fails does
the walk run, and the push after it.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import IO

from sqlalchemy import select

from reposync.errors import (
    LfsObjectCorrupt,
    LfsObjectError,
    LfsObjectTooLarge,
    ProviderUnavailable,
    ResultUnknown,
    TargetRefusedPush,
)
from reposync.git.lfs_proof import BackgroundProof, ProofCache, holds_no_pointer
from reposync.git.lfs_scan import scan_pointers
from reposync.models import ObjectLink
from reposync.providers.base import (
    LFS_BATCH_SIZE,
    ItemError,
    LfsOperation,
    LfsStore,
    LfsTransfer,
)
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.objects.applier_contract import ApplyItem
from reposync.sync.lfs import LfsPointer
from reposync.sync.vocabulary import Action, ObjectType

_CHUNK = 1 << 20
#: ``Run.io`` bucket of the counters below.
IO_ROLE = "lfs"
#: The proven packs' file (``lfs_proof.ProofCache``) in the data directory's ``git``.
PROOFS = "lfs-pointer-free-packs"


@dataclass(slots=True)
class _Counts:
    scanned: int = 0
    uploaded: int = 0
    skipped: int = 0
    failed: int = 0
    bytes_uploaded: int = 0

    def report(self, ex: StageExecution) -> None:
        for key, value in (
            ("objects_scanned", self.scanned),
            ("objects_uploaded", self.uploaded),
            ("objects_skipped", self.skipped),
            ("objects_failed", self.failed),
            ("bytes_uploaded", self.bytes_uploaded),
        ):
            if value:
                ex.count_io(key, value, role=IO_ROLE)


@dataclass(slots=True)
class _Chunk:
    """One Batch API chunk's progress."""

    failures: dict[LfsPointer, ItemError] = field(default_factory=dict)
    sent: set[LfsPointer] = field(default_factory=set)
    unsure: dict[LfsPointer, Exception] = field(default_factory=dict)


def start_proof(
    ex: StageExecution, git_dir: Path, items: Sequence[ApplyItem]
) -> BackgroundProof | None:
    """The proof that the batch needs no LFS object, started beside the push it gates
    (``transport.push(gate=...)``); None when no LFS object can be needed at all."""
    source, target = ex.source(), ex.target()
    if not isinstance(source, LfsStore) or not isinstance(target, LfsStore):
        return None  # a side without an LFS store: pointers are plain blobs to it
    if not any(i.action is not Action.DELETE and i.source_revision for i in items):
        return None
    return BackgroundProof(git_dir, ProofCache(ex.ctx.settings.data_dir / "git" / PROOFS))


def move_lfs_objects(
    ex: StageExecution,
    git_dir: Path,
    items: Sequence[ApplyItem],
    proof: BackgroundProof | None = None,
) -> dict[int, ItemError]:
    """Bring the LFS objects the batch's refs need to the target; the items whose ref
    must not be pushed, with their error. ``git_dir`` reaches the source's objects;
    ``proof``, already started on it, is waited for rather than made again."""
    source, target = ex.source(), ex.target()
    if not isinstance(source, LfsStore) or not isinstance(target, LfsStore):
        return {}  # a side without an LFS store: pointers are plain blobs to it
    writes = [i for i in items if i.action is not Action.DELETE and i.source_revision]
    if not writes:
        return {}
    proofs = ProofCache(ex.ctx.settings.data_dir / "git" / PROOFS)
    if proof.result() if proof is not None else holds_no_pointer(git_dir, proofs):
        return {}  # nothing stored is a pointer: no pushed history can hold one
    known = _target_tips(ex, items)
    counts = _Counts()
    failures: dict[LfsPointer, ItemError] = {}
    try:
        pointers = scan_pointers(git_dir, [str(i.source_revision) for i in writes], known)
        for chunk in _chunks(pointers, LFS_BATCH_SIZE):
            counts.scanned += len(chunk)
            failures.update(_move_chunk(ex, source, target, chunk, counts))
    finally:
        counts.report(ex)
    if not failures:
        return {}
    return _refs_needing(git_dir, writes, known, failures)


def _move_chunk(
    ex: StageExecution,
    source: LfsStore,
    target: LfsStore,
    pointers: list[LfsPointer],
    counts: _Counts,
) -> dict[LfsPointer, ItemError]:
    cap = ex.ctx.settings.lfs_max_object_size
    state = _Chunk()
    wanted: list[LfsPointer] = []
    for pointer in pointers:
        if pointer.size > cap:
            state.failures[pointer] = ItemError(
                LfsObjectTooLarge.code,
                f"LFS object {pointer.oid} has {pointer.size} bytes, more than "
                f"REPOSYNC_LFS_MAX_OBJECT_SIZE ({cap})",
            )
        else:
            wanted.append(pointer)
    needed: list[LfsTransfer] = []
    if wanted:
        for answer in target.lfs_batch(LfsOperation.UPLOAD, wanted):
            if answer.error is not None:
                state.failures[answer.pointer] = answer.error
            elif answer.present:
                counts.skipped += 1
            else:
                needed.append(answer)
    if needed:
        downloads = source.lfs_batch(LfsOperation.DOWNLOAD, [t.pointer for t in needed])
        spool_dir = ex.ctx.settings.data_dir / "lfs-spool"
        spool_dir.mkdir(parents=True, exist_ok=True)
        for upload, download in zip(needed, downloads, strict=True):
            if download.error is not None:
                state.failures[download.pointer] = download.error
                continue
            _copy_one(ex, source, target, download, upload, spool_dir, state)
        _read_back(target, state, counts)
    counts.failed += len(state.failures)
    return state.failures


def _copy_one(
    ex: StageExecution,
    source: LfsStore,
    target: LfsStore,
    download: LfsTransfer,
    upload: LfsTransfer,
    spool_dir: Path,
    state: _Chunk,
) -> None:
    """Source bytes into a spool file, checked; then uploaded (or the object's failure)."""
    pointer = download.pointer
    with tempfile.TemporaryFile(dir=spool_dir) as spool:
        try:
            with closing(source.lfs_download(download)) as stream:
                problem = _spool_verified(stream, spool, pointer)
        except LfsObjectError as error:  # missing, or not a file the store may read
            state.failures[pointer] = ItemError.of(error)
            return
        if problem is not None:
            state.failures[pointer] = problem
            return
        spool.seek(0)
        ex.lease.check_write()  # an upload is an external write (a cancel stops it too)
        try:
            target.lfs_upload(upload, spool)
        except (LfsObjectError, TargetRefusedPush) as error:
            state.failures[pointer] = ItemError.of(error)
            return
        except (ResultUnknown, ProviderUnavailable) as error:
            state.unsure[pointer] = error
        state.sent.add(pointer)


def _spool_verified(stream: IO[bytes], spool: IO[bytes], pointer: LfsPointer) -> ItemError | None:
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(min(_CHUNK, pointer.size + 1 - size) or 1):
        digest.update(chunk)
        size += len(chunk)
        spool.write(chunk)
        if size > pointer.size:
            break
    if size == pointer.size and digest.hexdigest() == pointer.oid:
        return None
    return ItemError(
        LfsObjectCorrupt.code,
        f"the source's LFS object {pointer.oid} is corrupt: "
        + (
            f"{'more than ' if size > pointer.size else ''}{size} bytes, its pointer says "
            f"{pointer.size}"
            if size != pointer.size
            else f"its bytes hash to {digest.hexdigest()}"
        ),
    )


def _read_back(target: LfsStore, state: _Chunk, counts: _Counts) -> None:
    """Only what the target now reports present counts as uploaded (read-back)."""
    if not state.sent:
        return
    answers = target.lfs_batch(LfsOperation.UPLOAD, sorted(state.sent))
    lost: list[str] = []
    for answer in answers:
        pointer = answer.pointer
        if answer.present:
            counts.uploaded += 1
            counts.bytes_uploaded += pointer.size
        elif pointer in state.unsure:
            lost.append(f"{pointer.oid}: {state.unsure[pointer]}")
        else:
            state.failures[pointer] = ItemError(
                LfsObjectError.code,
                f"the target does not hold LFS object {pointer.oid} ({pointer.size} bytes) "
                "after its upload was accepted",
            )
    if lost:  # not landed, and its upload failed on the way: the batch is tried again
        raise ProviderUnavailable("LFS uploads did not reach the target: " + "; ".join(lost[:5]))


def _refs_needing(
    git_dir: Path,
    writes: Sequence[ApplyItem],
    known: Sequence[str],
    failures: dict[LfsPointer, ItemError],
) -> dict[int, ItemError]:
    """Which items' new history holds an object that could not be moved, by OID and size
    (a ref whose pointer names the same OID with its true size needs nothing broken);
    one walk per ref, only when something failed."""
    refused: dict[int, ItemError] = {}
    for item in writes:
        for pointer in scan_pointers(git_dir, [str(item.source_revision)], known):
            error = failures.get(pointer)
            if error is not None:
                refused[item.id] = ItemError(
                    error.code,
                    f"{item.target_identity or item.source_identity} is not pushed: it needs "
                    f"LFS object {pointer.oid} ({pointer.size} bytes): {error.message}",
                )
                break
    return refused


def _target_tips(ex: StageExecution, items: Sequence[ApplyItem]) -> list[str]:
    """What the target already has: the values this batch replaces, and every ref value
    its links verified (their LFS objects went with them)."""
    revision = ObjectLink.a_revision if ex.run.target_side == "a" else ObjectLink.b_revision
    with ex.ctx.db.session() as session:
        linked = session.execute(
            select(revision).where(
                ObjectLink.binding_id == ex.binding.id,
                ObjectLink.object_type == ObjectType.GIT_REF.value,
                revision.is_not(None),
            )
        ).scalars()
        tips = {str(value) for value in linked}
    tips.update(
        str(i.intent["expected_revision"]) for i in items if i.intent.get("expected_revision")
    )
    return sorted(tips)


def _chunks(pointers: Iterable[LfsPointer], size: int) -> Iterator[list[LfsPointer]]:
    """Chunks of distinct objects (a pointer held by two blobs is asked for once per
    chunk). One OID may appear with two sizes: those are two objects, both kept."""
    iterator = iter(pointers)
    while chunk := list(islice(iterator, size)):
        yield list(dict.fromkeys(chunk))
