"""``reposync sync SOURCE TARGET``: bind the pair, then run in this process.

Binding (``bindings.bind``) validates everything before it writes anything; only then is
a Run started, or one an earlier process left unfinished resumed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reposync.errors import BindingBusy
from reposync.git.progress import TransferProgress
from reposync.lifecycle import AuditMode, RunKind, RunMode, RunStatus, Stage, Trigger
from reposync.models import Binding, Run, RunItem
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ProviderPool, ServiceContext, Step
from reposync.service.lookups import active_run
from reposync.service.pipeline.holders import holder_gone
from reposync.service.pipeline.leases import database_now
from reposync.service.pipeline.runner import run_until_done
from reposync.service.runs import create_run
from reposync.sync.vocabulary import ItemState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Progress:
    run_id: int
    stage: str
    items_total: int
    items_done: int
    #: While a push runs: what git reports of it (the items move once it has ended).
    transfer: TransferProgress | None = None


ProgressCallback = Callable[[Progress], None]


def sync(
    ctx: ServiceContext, request: SyncRequest, progress: ProgressCallback | None = None
) -> Run:
    """Run one Run for the pair to its end in this process and return it.

    A Run an earlier invocation left unfinished (interrupted, or its process died) is
    finished first; when it is the kind of Run asked for, it is the answer.
    """
    binding = bind(ctx, request)
    resumed = resume_stalled(ctx, binding.id, progress)
    if resumed is not None:
        finished = _conclude(ctx, resumed, progress)
        if _answers(finished, request):
            return finished
    run = create_run(
        ctx,
        binding.id,
        mode=RunMode.DRY_RUN if request.dry_run else RunMode.APPLY,
        audit_mode=AuditMode.FULL if request.full_audit else AuditMode.CHECKPOINT,
        trigger=Trigger.MANUAL,
    )
    execute(ctx, Step(run.id, Stage.CHECKING_ACCESS, None), progress)
    return _conclude(ctx, run.id, progress)


def _conclude(ctx: ServiceContext, run_id: int, progress: ProgressCallback | None) -> Run:
    """Wait out short deferrals, then run the follow-ups a moving source asked for (a
    few at most: finalizing stops queueing them after ``MAX_FOLLOW_UPS``)."""
    finished = _wait_out_limits(ctx, _load(ctx, run_id), progress)
    while (follow_up := _follow_up_of(ctx, finished.id)) is not None:
        execute(ctx, Step(follow_up, Stage.CHECKING_ACCESS, None), progress)
        finished = _wait_out_limits(ctx, _load(ctx, follow_up), progress)
    return finished


def _answers(run: Run, request: SyncRequest) -> bool:
    """Whether a resumed Run is what ``request`` asks for (a full audit answers a
    checkpoint request too, never the other way round). A Run that ended cancelled
    answers nothing: somebody stopped it (``runs cancel``), and this call asks for a
    sync, so it syncs."""
    mode = RunMode.DRY_RUN if request.dry_run else RunMode.APPLY
    full = run.audit_mode == AuditMode.FULL.value
    return (
        run.status != RunStatus.CANCELLED.value
        and run.kind == RunKind.NORMAL.value
        and run.mode == mode.value
        and (full or not request.full_audit)
    )


def _wait_out_limits(ctx: ServiceContext, run: Run, progress: ProgressCallback | None) -> Run:
    """Rate limits defer a Run; in-process, wait for short ones and carry on."""
    clock = ctx.environment.clock if ctx.environment else None
    longest = timedelta(seconds=ctx.settings.embedded_max_wait)
    while run.status == "queued" and run.retry_at is not None and clock is not None:
        wait = run.retry_at - clock.now()
        if wait > longest:
            break  # the report says when; the next `reposync sync` resumes it
        log.warning("run %s waits %.0fs for a rate limit", run.id, wait.total_seconds())
        clock.sleep(max(0.0, wait.total_seconds()))
        execute(ctx, Step(run.id, None, None), progress)
        run = _load(ctx, run.id)
    return run


def _load(ctx: ServiceContext, run_id: int) -> Run:
    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run


def _follow_up_of(ctx: ServiceContext, run_id: int) -> int | None:
    with ctx.db.session() as session:
        return session.execute(
            select(Run.id).where(
                Run.parent_run_id == run_id, Run.trigger == Trigger.FOLLOW_UP.value
            )
        ).scalar_one_or_none()


def resume_stalled(
    ctx: ServiceContext, binding_id: int, progress: ProgressCallback | None = None
) -> int | None:
    """Resume a Run an earlier process left behind (its lease expired or was given up),
    if there is one; a Run deferred to a later time is left for the caller to wait on."""
    with ctx.db.session() as session:
        run = active_run(session, binding_id)
        if run is None:
            return None
        binding = session.get(Binding, binding_id)
        assert binding is not None
        now = database_now(session)
        free = (
            binding.lease_run_id is None
            or (binding.lease_expires_at is not None and binding.lease_expires_at < now)
            or holder_gone(binding.lease_owner)  # killed on this host: no TTL to wait out
        )
        if not free:
            raise BindingBusy(
                f"binding {binding_id} is being synced by run {run.id} "
                f"({binding.lease_owner}); wait for it or cancel it"
            )
        run_id = run.id
        deferred = run.retry_at is not None and run.status == RunStatus.QUEUED.value
    if not deferred:
        log.warning("resuming run %s left unfinished by an earlier process", run_id)
        execute(ctx, Step(run_id, None, None), progress)
    return run_id


def execute(ctx: ServiceContext, first: Step, progress: ProgressCallback | None) -> None:
    """Run ``first`` and the steps after it here, telling ``progress`` before each step
    and, while a push runs, at each of git's updates."""
    latest: dict[int, Progress] = {}
    trackers: dict[int, ProgressTracker] = {}

    def on_step(step: Step) -> None:
        if progress is not None:
            tracker = trackers.setdefault(step.run_id, ProgressTracker(ctx, step.run_id))
            latest[step.run_id] = tracker.read()
            progress(latest[step.run_id])

    def on_transfer(run_id: int, transfer: TransferProgress) -> None:
        assert progress is not None
        before = latest.get(run_id) or Progress(run_id, Stage.APPLYING.value, 0, 0)
        progress(replace(before, transfer=transfer))

    assert ctx.open_provider is not None
    pooled = replace(
        ctx,
        providers=ProviderPool(ctx.open_provider),
        on_transfer=on_transfer if progress is not None else None,
    )
    try:
        run_until_done(pooled, first, on_step=on_step)
    finally:
        assert pooled.providers is not None
        pooled.providers.close()
    if progress is not None:
        progress(read_progress(ctx, first.run_id))


#: Item states that still owe work (every other state counts as done).
_OWED = (ItemState.PLANNED.value, ItemState.APPLYING.value, ItemState.VERIFYING.value)
_DONE = tuple(state.value for state in ItemState if state.value not in _OWED)


class ProgressTracker:
    """A Run's progress before each step, at a cost that does not grow with the Run.

    Counting every item before every step made a Run's progress O(n²) in total (~90 s
    of an 800k-item Run). Here the items are counted whole once per stage; while the Run
    applies, a step changes only the batches it can reach, named before it runs: the
    lowest batch with planned items (the one it claims) and the batches of items an
    earlier execution left mid-write (which it settles first, possibly re-planning them
    into that lowest batch). After the step only those batches are counted again, by the
    (run, state, batch) index. Items are added only by planning, so the total is fixed
    while the Run applies. Any other stage counts whole (those steps are few per Run).
    """

    def __init__(self, ctx: ServiceContext, run_id: int) -> None:
        self._ctx = ctx
        self._run_id = run_id
        self._stage: str | None = None
        self._total = 0
        self._done_by_batch: dict[int, int] = {}
        #: The batches the step about to run may change (only while applying).
        self._dirty: set[int] = set()

    def read(self) -> Progress:
        applying = Stage.APPLYING.value
        with self._ctx.db.session() as session:
            stage = session.execute(select(Run.stage).where(Run.id == self._run_id)).scalar_one()
            if stage == applying and self._stage == applying:
                self._recount(session, self._dirty)
            else:
                self._count_whole(session)
            self._stage = stage
            self._dirty = self._reachable(session) if stage == applying else set()
        return Progress(self._run_id, stage, self._total, sum(self._done_by_batch.values()))

    def _count_whole(self, session: Session) -> None:
        self._total = session.execute(
            select(func.count()).where(
                RunItem.run_id == self._run_id, RunItem.batch_no.is_not(None)
            )
        ).scalar_one()
        self._done_by_batch = {}
        self._recount(session, None)

    def _recount(self, session: Session, batches: set[int] | None) -> None:
        """Done items per batch, for ``batches`` (None: every batch)."""
        if batches is not None:
            if not batches:
                return
            for batch in batches:
                self._done_by_batch.pop(batch, None)
        query = (
            select(RunItem.batch_no, func.count())
            .where(RunItem.run_id == self._run_id, RunItem.state.in_(_DONE))
            .group_by(RunItem.batch_no)
        )
        query = query.where(
            RunItem.batch_no.is_not(None) if batches is None else RunItem.batch_no.in_(batches)
        )
        for batch_no, count in session.execute(query).all():
            if batch_no is not None:
                self._done_by_batch[batch_no] = count

    def _reachable(self, session: Session) -> set[int]:
        """The batches the next applying step may change (see the class docstring)."""
        lowest = session.execute(
            select(func.min(RunItem.batch_no)).where(
                RunItem.run_id == self._run_id,
                RunItem.state == ItemState.PLANNED.value,
                RunItem.batch_no.is_not(None),
            )
        ).scalar_one_or_none()
        unfinished = session.execute(
            select(RunItem.batch_no)
            .where(
                RunItem.run_id == self._run_id,
                RunItem.state.in_(_OWED[1:]),
                RunItem.batch_no.is_not(None),
            )
            .distinct()
        ).scalars()
        reachable = {batch for batch in unfinished if batch is not None}
        if lowest is not None:
            reachable.add(lowest)
        return reachable


def read_progress(ctx: ServiceContext, run_id: int) -> Progress:
    """A Run's progress counted whole (once, at the end of an execution)."""
    return ProgressTracker(ctx, run_id).read()
