"""How branches and tags (and a wiki's) reach the target: one leased ``git push`` per batch.

The Git refs' applier of ``appliers.applier_for``: the source is re-read right before the
write (what moved since planning is superseded), LFS objects the new history needs go
first (``lfs_objects``), the push is conditional on every ref's planned old value, and
read-back of the target's refs decides. One class serves the main repository and its
wiki (``RefRepository``): they differ only in object type, remote and names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from reposync.errors import (
    Conflict,
    GitCredentialsRefused,
    GitRateLimited,
    GitTransportError,
    ProviderError,
    PushTooLarge,
    TargetRefusedPush,
    WikiDisabled,
    WikiNotInitialized,
)
from reposync.git import transport
from reposync.git.locks import remove_stale_locks
from reposync.git.packsize import effective_limit
from reposync.git.push_report import PushOutcome
from reposync.git.workspace import PushWorkspace
from reposync.guards import guarded
from reposync.models import RunEvent
from reposync.providers.base import (
    GitRemote,
    GitRemoteSource,
    ItemError,
    LockRecoverer,
    Provider,
    WikiRemoteSource,
    read_index,
)
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.lfs_objects import move_lfs_objects, start_proof
from reposync.service.pipeline.stages.objects.applier_contract import (
    ApplyItem,
    ItemOutcome,
    WriteReport,
    WriteStopped,
    superseded,
)
from reposync.service.pipeline.stages.push_progress import PushProgress
from reposync.sync.vocabulary import Action, ItemState, ObjectType


def _git_remote(provider: Provider, write: bool) -> GitRemote:
    if not isinstance(provider, GitRemoteSource):
        raise ProviderError(f"the {provider.name} provider offers no Git transport")
    return provider.git_remote(write=write)


def _wiki_remote(provider: Provider, write: bool) -> GitRemote:
    if not isinstance(provider, WikiRemoteSource):
        raise ProviderError(f"the {provider.name} provider has no wiki")
    return provider.wiki_remote(write=write)


def _no_refusal(error: GitTransportError, target: str) -> ProviderError | None:
    return None


def _wiki_missing(error: GitTransportError, target: str) -> ProviderError | None:
    """A wiki push answered "not found": the forge keeps no wiki repository yet and did
    not create one for the push (github.com, until a first page is saved; the wiki being
    off is refused before git starts, ``WikiDisabled``)."""
    if "not found" not in error.message.lower():
        return None
    return WikiNotInitialized(
        f"{target}: the wiki has no repository yet and the push did not create one "
        f"({error.message})"
    )


@dataclass(frozen=True, slots=True)
class RefRepository:
    """Which Git repository of each side a ref applier moves refs between: the main one,
    or the wiki beside it. Both go through the same push, leases and read-back."""

    object_type: ObjectType
    #: Told apart in the names of this repository's mirror and push workspace.
    suffix: str
    remote: Callable[[Provider, bool], GitRemote]
    #: Whether its pushes carry LFS objects first (the repository's LFS store is the main
    #: repository's; a wiki has none on GitHub, so its pointers stay plain blobs).
    lfs: bool
    #: What a push that git could not complete means for this repository's items, when
    #: it is their problem rather than the transport's (None: the error stands).
    #: Called with the error and the target's display name.
    refusal: Callable[[GitTransportError, str], ProviderError | None] = _no_refusal

    def workspace(self, ex: StageExecution, objects_dir: str) -> PushWorkspace:
        """The Binding's scratch repository for this repository's pushes, borrowing
        ``objects_dir`` (``reposync.git.workspace``)."""
        name = f"binding-{ex.binding.id}{self.suffix}.git"
        return PushWorkspace(ex.ctx.settings.data_dir / "git" / name, objects_dir)


MAIN_REPOSITORY = RefRepository(ObjectType.GIT_REF, "", _git_remote, lfs=True)
WIKI_REPOSITORY = RefRepository(
    ObjectType.WIKI_REF, "-wiki", _wiki_remote, lfs=False, refusal=_wiki_missing
)
REF_REPOSITORIES = (MAIN_REPOSITORY, WIKI_REPOSITORY)


class GitRefApplier:
    """Branches and tags (of the repository or of its wiki): one ``git push`` per batch,
    updates leased on their old value."""

    def __init__(self, repository: RefRepository = MAIN_REPOSITORY) -> None:
        self.repository = repository
        self._target_remote: GitRemote | None = None

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        # The source is re-read right before the write: what moved since planning is
        # superseded (a follow-up Run takes it), what reappeared supersedes its delete.
        current = ex.source().read_batch(
            self.repository.object_type, [i.source_identity for i in items if i.source_identity]
        )
        to_write: list[ApplyItem] = []
        settled: list[ItemOutcome] = []
        for item in items:
            now = current.get(item.source_identity or "")
            now_revision = now.revision if now is not None else None
            if item.source_gone and now is not None:
                settled.append(superseded(item, "reappeared on the source"))
            elif not item.source_gone and now_revision != item.source_revision:
                settled.append(superseded(item, f"moved on the source to {now_revision}"))
            elif item.action is Action.NOOP:
                settled.append(
                    ItemOutcome(
                        item,
                        ItemState.COMPLETED,
                        target_identity=item.target_identity,
                        target_revision=item.source_revision,
                    )
                )
            else:
                to_write.append(item)
        if to_write:
            try:
                self._target_remote = self.repository.remote(ex.target(), True)
            except WikiDisabled as error:  # the target's setting, not the items' fault
                failed = ItemError.of(error)
                settled.extend(ItemOutcome(i, ItemState.FAILED, failed) for i in to_write)
                return [], settled
        return to_write, settled

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> WriteReport:
        # A cancel stops the fetch and the push it runs (``RunCancelled``); ``applying``
        # then reads back what they may have written before the Run ends cancelled.
        with guarded(ex.lease.check_write):
            return self._write(ex, items)

    def _write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> WriteReport:
        source_remote = self.repository.remote(ex.source(), False)
        target_remote = self._target_remote or self.repository.remote(ex.target(), True)
        transfer: Path | None = None
        suffix = self.repository.suffix
        objects_dir = source_remote.objects_dir
        if objects_dir is None:  # a remote source: this batch's objects into the mirror
            mirror = (
                ex.ctx.settings.data_dir / "git" / f"binding-{ex.binding.id}{suffix}-source.git"
            )
            _clear_stale_locks(ex, "mirror", lambda ttl: remove_stale_locks(mirror, ttl, wait=True))
            wanted = {
                i.source_identity: i.source_revision if i.action is not Action.DELETE else None
                for i in items
                if i.source_identity
            }
            try:
                fetched = source_remote.with_credentials(
                    lambda remote: transport.fetch_refs(
                        mirror,
                        remote.url,
                        wanted,
                        env=dict(remote.env),
                        borrow=target_remote.objects_dir,
                    )
                )
            except (GitCredentialsRefused, GitRateLimited) as refused:
                # The source's refusal or limit: nothing went out.
                raise WriteStopped(refused, [item.id for item in items]) from None
            objects_dir = str(fetched.objects_dir)
            ex.count_io("fetches")
            ex.count_io("fetched_tips", fetched.fetched)
            ex.count_io("fetched_objects", fetched.received)
            if target_remote.objects_dir is not None:  # a transfer repository: see below
                transfer = mirror
        target = ex.target()
        if isinstance(target, LockRecoverer):
            _clear_stale_locks(ex, "target", lambda ttl: target.remove_stale_locks(ttl, wait=True))
        workspace = self.repository.workspace(ex, objects_dir)
        workspace.prepare()
        # LFS objects first: a ref whose objects cannot all reach the target stays out.
        # The proof that none is needed runs beside the push, whose refs wait for it;
        # when it fails, nothing was pushed: the walk moves them, then the push runs.
        proof = start_proof(ex, workspace.path, items) if self.repository.lfs else None
        held_back: dict[int, ItemError] = {}
        progress = PushProgress(ex)
        per_push = transport.ref_updates_limit(
            type(target).max_ref_updates_per_push, ex.ctx.settings.git_max_ref_updates_per_push
        )
        taken = _taken_per_push(ex)
        if taken is not None:
            per_push = min(per_push or taken, taken)
        try:
            while True:
                items = [item for item in items if item.id not in held_back]
                updates = [
                    transport.RefUpdate(
                        name=item.target_identity or "",
                        new=item.source_revision if item.action is not Action.DELETE else None,
                        expected_old=item.intent.get("expected_revision"),
                    )
                    for item in items
                ]
                pushed = target_remote.with_credentials(
                    functools.partial(
                        _push,
                        workspace=workspace,
                        updates=updates,
                        max_pack_bytes=effective_limit(
                            type(target).max_push_pack_bytes,
                            ex.ctx.settings.git_max_push_pack_bytes,
                        ),
                        max_refs_per_push=per_push,
                        on_push=_push_progress(ex, len(updates), per_push),
                        on_progress=progress,
                        gate=proof.result if proof is not None else None,
                    )
                )
                if not pushed.gate_closed or proof is None:
                    break
                held_back = move_lfs_objects(ex, workspace.path, items, proof)
                proof = None
        except (GitCredentialsRefused, GitRateLimited) as refused:
            unsent = refused.unsent_refs
            if unsent is None:
                raise
            raise WriteStopped(
                refused,
                [item.id for item in items if (item.target_identity or "") in unsent]
                + list(held_back),
            ) from None
        except GitTransportError as error:
            refusal = self.repository.refusal(error, ex.spec("target").display)
            if refusal is None:
                raise
            failed = ItemError.of(refusal)
            return WriteReport(
                identities={i.id: i.target_identity or "" for i in items},
                refused={**held_back, **{i.id: failed for i in items}},
            )
        finally:
            progress.close()
        if pushed.locked:
            # Another git holds those refs' locks on the target (a push killed moments
            # ago, whose locks were not yet stale, or a concurrent one): the batch goes
            # again after the stage's backoff, its attempts given back; what landed is
            # read back then.
            name, why = next(iter(pushed.locked.items()))
            raise GitTransportError(
                f"{len(pushed.locked)} ref(s) of {ex.spec('target').display} locked by "
                f"another git process, {name} first: {why}"
            )
        if transfer is not None:  # what it fetched is in the target now (or not wanted)
            transport.discard_objects(transfer)
        ex.count_io("pushes", pushed.groups)
        if pushed.refused_sizes:
            _say_pushes_shrank(ex, pushed)
        ex.target().stats.writes += len(pushed.accepted)
        report = WriteReport(refused=dict(held_back))
        for item in items:
            name = item.target_identity or ""
            report.identities[item.id] = name
            if item.desired_hash is not None:
                report.verify_hashes[item.id] = item.desired_hash
            if name in pushed.too_large:
                report.refused[item.id] = ItemError(PushTooLarge.code, pushed.too_large[name])
            elif name in pushed.refused:  # the target's own trouble, not a conflict
                report.refused[item.id] = ItemError(
                    TargetRefusedPush.code, f"{name} was not pushed: {pushed.refused[name]}"
                )
            elif name in pushed.rejected:
                report.refused[item.id] = ItemError(
                    Conflict.code,
                    f"the target ref changed since planning; push refused "
                    f"({pushed.rejected[name]})",
                )
        return report

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        observed = read_index(
            ex.target(), self.repository.object_type, [i.target_identity or "" for i in items]
        )
        outcomes = []
        for item in items:
            obj = observed.get(item.target_identity or "")
            if item.action is Action.DELETE:
                done = obj is None
            else:
                done = obj is not None and obj.content_hash == item.desired_hash
            outcomes.append(
                ItemOutcome(
                    item,
                    ItemState.COMPLETED if done else ItemState.PLANNED,
                    target_identity=item.target_identity,
                    target_revision=obj.revision if obj is not None else None,
                    # A ref read is the whole truth on every forge: not there, not applied.
                    proven_absent=not done,
                )
            )
        return outcomes


def _taken_per_push(ex: StageExecution) -> int | None:
    """How many ref updates one push of this Run's target took after it answered larger
    pushes with a server error (the last ``git_pushes_shrank``), if it did: every later
    batch of the Run starts at that size instead of paying the refused pushes again (a
    bootstrap of thousands of refs is many batches). Read from the Run's events, so a
    batch on another worker knows it too; a later Run learns it anew, unless the
    operator sets ``GIT_MAX_REF_UPDATES_PER_PUSH`` as the event says."""
    with ex.ctx.db.session() as session:
        counts = session.execute(
            select(RunEvent.counts)
            .where(RunEvent.run_id == ex.run_id, RunEvent.type == _PUSHES_SHRANK)
            .order_by(RunEvent.seq.desc())
            .limit(1)
        ).scalar_one_or_none()
    taken = (counts or {}).get("refs_per_push")
    return taken if isinstance(taken, int) and taken > 0 else None


#: The event that says a target took fewer ref updates per push than were sent.
_PUSHES_SHRANK = "git_pushes_shrank"


def _say_pushes_shrank(ex: StageExecution, pushed: PushOutcome) -> None:
    """A ``git_pushes_shrank`` event: the target answered pushes with a server error and
    took them in halves. Most likely its limit on ref updates per push is below what
    reposync sent (GitHub says no more than "HTTP 500"); the operator who sets it spares
    every later batch its refused pushes."""
    sizes = ", ".join(str(size) for size in pushed.refused_sizes)
    with ex.fenced() as session:
        ex.event(
            session,
            _PUSHES_SHRANK,
            f"{ex.spec('target').display} answered pushes of {sizes} refs with a server error "
            f"({pushed.server_error}); the refs went again in pushes of at most "
            f"{pushed.refs_per_push}: if its limit on ref updates per push is lower than "
            f"{pushed.refused_sizes[0]}, set REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH to it",
            refused=len(pushed.refused_sizes),
            refs_per_push=pushed.refs_per_push or 0,
        )


def _push(
    remote: GitRemote,
    *,
    workspace: PushWorkspace,
    updates: Sequence[transport.RefUpdate],
    max_pack_bytes: int | None,
    max_refs_per_push: int | None,
    on_push: Callable[[int, int], None] | None,
    on_progress: PushProgress,
    gate: Callable[[], bool] | None,
) -> PushOutcome:
    """``transport.push`` to ``remote`` as its credentials stand (``with_credentials``
    calls it again on the remote renewed, should the forge refuse them)."""
    return transport.push(
        workspace,
        remote.url,
        updates,
        env=dict(remote.env),
        receive_pack=remote.receive_pack,
        max_pack_bytes=max_pack_bytes,
        max_refs_per_push=max_refs_per_push,
        on_push=on_push,
        on_progress=on_progress,
        gate=gate,
    )


def _push_progress(
    ex: StageExecution, total: int, per_push: int | None
) -> Callable[[int, int], None] | None:
    """A batch that takes several pushes says after each how far it is (a ``git_pushed``
    event: the API's event stream, ``reposync runs events -f`` and the Run page show it),
    so a bootstrap's minutes of pushes are not one silent step."""
    if per_push is None or total <= per_push:
        return None

    def pushed(done: int, of: int) -> None:
        with ex.fenced() as session:
            ex.event(session, "git_pushed", f"{done} of {of} refs pushed", done=done, total=of)

    return pushed


def _clear_stale_locks(
    ex: StageExecution, where: str, remove: Callable[[float], list[str]]
) -> None:
    """Ref locks a killed ``git`` left (older than the lease TTL, waited for when younger;
    we hold the lease) would fail every later push of their refs: removed, counted and
    named in the Run's events."""
    removed = remove(ex.ctx.settings.lease_ttl)
    if not removed:
        return
    ex.count_io("stale_locks_removed", len(removed))
    with ex.fenced() as session:
        ex.event(
            session,
            "stale_locks_removed",
            f"{where}: removed {', '.join(removed[:20])}"
            + (f" and {len(removed) - 20} more" if len(removed) > 20 else "")
            + " (left by a git process that was killed)",
            count=len(removed),
        )
