"""The in-process executor: ``reposync api`` runs what it queues when there is no broker.

In the embedded mode (the data directory's SQLite, no ``REPOSYNC_BROKER_URL``) nobody
would ever take the Runs the API and the page queue: Celery's messages went to a broker
that is not there and the Runs stayed ``queued``. This executor is the ``Dispatcher``
of that mode (``Settings.runs_in_process``). It does what a Celery worker and beat do,
in a few threads of the API's one process:

* a small pool of worker threads (``THREADS``) takes jobs first in, first out: a Run's
  steps (``execute_step`` one after the other, each claiming the Binding's lease like a
  Celery task does: the same fences, never bypassed), a handoff, a webhook delivery out,
  the Run a webhook owes, a pass of an owner binding;
* a clock thread holds the jobs that wait (a delivery's retry delay, a webhook's
  debounce) and runs the periodic tick (``service/scheduling/ticks.py``: schedules, stalled Runs,
  overdue deliveries, purges) every ``tick_interval``, as beat does;
* at ``start`` it adopts the Runs nobody runs: queued or running ones whose lease is
  free, expired, or held by a process of this machine that ended (an API killed
  mid-Run), so a restart resumes them at once instead of after the lease's TTL; each
  tick adopts those whose holder ended meanwhile (a killed ``reposync sync``);
* ``stop`` ends it with the API: jobs not started are dropped (their rows stay queued
  or pending, and the next start or tick dispatches them again), and a step running in
  a worker thread is interrupted the way Ctrl-C interrupts ``reposync sync``: a
  ``KeyboardInterrupt`` raised in that thread, so the runner gives the lease up (its
  ``interrupted`` event) and kills the git child with its children. Python raises an
  exception in another thread only between two bytecodes, as it does for a signal in
  the main thread, so everything written for Ctrl-C holds here too.

Exactly one executor may exist per database, as one beat does: ``reposync api`` runs
one gunicorn worker process in this mode (``web/server.py``). A second one (another
``reposync api`` on the same data directory) would still be safe, since every claim is
fenced, only wasteful.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlalchemy import select

from reposync.config import Settings
from reposync.errors import OwnerBindingBusy, RecordNotFound
from reposync.lifecycle import ACTIVE_RUN_STATUSES, RunKind, RunStatus, Trigger
from reposync.models import Binding, Run
from reposync.models.db import Database
from reposync.service import owners
from reposync.service.context import ServiceContext, Step
from reposync.service.handoff import handoff
from reposync.service.pipeline.holders import holder_gone
from reposync.service.pipeline.leases import database_now, new_owner
from reposync.service.pipeline.runner import run_until_done
from reposync.service.scheduling import ticks
from reposync.service.webhooks.deliveries import deliver
from reposync.service.webhooks.intake import start_due_run

log = logging.getLogger(__name__)

#: Worker threads: one long Run does not hold up the deliveries and the Runs of others,
#: and SQLite (one writer at a time) gains nothing from more.
THREADS = 2

#: Seconds ``stop`` waits for the threads to end: below gunicorn's graceful timeout
#: (30 s), so the API never gets killed while a lease is being given up.
STOP_TIMEOUT = 20.0


class Stopping(KeyboardInterrupt):
    """Raised in a worker thread when the executor stops (the API is shutting down)."""


@dataclass(frozen=True, slots=True)
class _Job:
    #: What makes two jobs the same work: a second one is not queued beside the first.
    key: tuple[str, int]
    what: str
    call: Callable[[], object]
    #: The Run the job executes, for ``describe_wait``.
    run_id: int | None = None


@dataclass(order=True, slots=True)
class _Timer:
    due: float
    seq: int
    job: _Job = field(compare=False)


class InProcessExecutor:
    """A ``Dispatcher`` that executes in this process (see the module)."""

    def __init__(self, settings: Settings, db: Database, *, threads: int = THREADS) -> None:
        #: The context every job runs with; its dispatcher is this executor.
        self.context = ServiceContext(settings=settings, db=db, dispatcher=self)
        self._threads_wanted = threads
        self._lock = threading.Condition()
        self._ready: deque[_Job] = deque()
        self._timers: list[_Timer] = []
        self._pending: set[tuple[str, int]] = set()
        #: thread ident -> the job it runs
        self._running: dict[int, _Job] = {}
        self._threads: list[threading.Thread] = []
        self._seq = itertools.count()
        self._started = False
        self._stopping = False

    # -- the Dispatcher protocol ---------------------------------------------------------

    def dispatch(self, step: Step) -> None:
        ctx = self.context
        self._submit(
            _Job(
                ("run", step.run_id),
                f"run {step.run_id}",
                lambda: run_until_done(ctx, step, on_step=self._between_steps),
                step.run_id,
            )
        )

    def dispatch_handoff(self, binding_id: int, run_id: int) -> None:
        ctx = self.context
        self._submit(
            _Job(
                ("run", run_id),
                f"the handoff of binding {binding_id} (run {run_id})",
                lambda: handoff(ctx, binding_id, forward_run_id=run_id),
                run_id,
            )
        )

    def dispatch_delivery(self, delivery_id: int, delay: float = 0.0) -> None:
        ctx = self.context
        self._submit(
            _Job(
                ("delivery", delivery_id),
                f"webhook delivery {delivery_id}",
                lambda: deliver(ctx, delivery_id, owner=new_owner("delivery")),
            ),
            delay,
        )

    def dispatch_event_run(self, binding_id: int, countdown: float) -> None:
        ctx = self.context
        self._submit(
            _Job(
                ("event_run", binding_id),
                f"the webhook Run owed to binding {binding_id}",
                lambda: start_due_run(ctx, binding_id),
            ),
            countdown,
        )

    def dispatch_owner_pass(self, owner_binding_id: int, trigger: Trigger) -> None:
        ctx = self.context

        def run_pass() -> None:
            try:
                owners.run_pass(ctx, owner_binding_id, trigger=trigger)
            except (OwnerBindingBusy, RecordNotFound) as exc:  # running already, or forgotten
                log.info("owner binding %s: no pass: %s", owner_binding_id, exc.message)

        self._submit(
            _Job(
                ("owner_pass", owner_binding_id),
                f"a pass of owner binding {owner_binding_id}",
                run_pass,
            )
        )

    # -- where a Run waits (``service/scheduling/waits.py``) ------------------------------

    def describe_wait(self, run_id: int, waited: float) -> str | None:
        """Where ``run_id`` is in this process: starting, its place in the queue (and
        what the busy threads run), its timer; or that nothing here holds it."""
        with self._lock:
            if self._stopping:
                return "this API is shutting down; the next `reposync api` resumes the Run"
            if any(job.run_id == run_id for job in self._running.values()):
                return "starting in this API process"
            for position, job in enumerate(self._ready, start=1):
                if job.run_id == run_id:
                    busy = [j.what for j in self._running.values()]
                    text = f"in this API process's queue, position {position} of {len(self._ready)}"
                    if len(busy) >= self._threads_wanted:
                        text += f"; its {len(busy)} executor threads run {', '.join(busy)}"
                    return text
            for timer in self._timers:
                if timer.job.run_id == run_id:
                    due = max(0.0, timer.due - time.monotonic())
                    return f"in this API process, due in {due:.0f}s"
        grace = self.context.settings.dispatch_grace
        if waited < grace:
            return (
                f"not handed to this API process's executor yet; its tick picks it up once "
                f"it has waited {grace:.0f}s"
            )
        return (
            f"not in this API process's queue ({waited:.0f}s since it was queued); its tick "
            f"runs every {self.context.settings.tick_interval:.0f}s and picks it up"
        )

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Adopt the Runs nobody runs, then start the clock and the worker threads."""
        with self._lock:
            if self._started:
                return
            self._started = True
        adopted = self.adopt()
        if adopted:
            log.warning("resuming runs %s, left unfinished by an earlier process", adopted)
        for number in range(self._threads_wanted):
            self._spawn(self._work, f"reposync-executor-{number + 1}")
        self._spawn(self._clock, "reposync-executor-clock")
        log.info(
            "in-process executor: %d threads, tick every %.0fs",
            self._threads_wanted,
            self.context.settings.tick_interval,
        )

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Drop what has not started, interrupt what runs (each step gives its lease up)
        and wait, at most ``timeout`` seconds, for the threads to end. Idempotent."""
        with self._lock:
            if not self._stopping:
                self._stopping = True
                dropped = len(self._ready) + len(self._timers)
                self._ready.clear()
                self._timers.clear()
                self._pending.clear()
                for ident, job in self._running.items():
                    log.warning("interrupting %s: the API is shutting down", job.what)
                    _interrupt(ident)
                if dropped:
                    log.info("%d jobs not started; the next start or tick dispatches them", dropped)
                self._lock.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        alive = [thread.name for thread in self._threads if thread.is_alive()]
        if alive:
            log.warning("executor threads still running after %.0fs: %s", timeout, alive)

    def adopt(self, *, orphans_only: bool = False) -> list[int]:
        """Dispatch every active Run nobody runs (see the module), or with
        ``orphans_only`` those whose lease's holder is a process of this machine that
        ended (each tick: a ``reposync sync`` killed meanwhile); the Runs adopted."""
        ctx = self.context
        adopted = []
        for run_id, binding_id, kind in _unowned_runs(ctx, orphans_only):
            if kind == RunKind.HANDOFF.value:
                self.dispatch_handoff(binding_id, run_id)
            else:
                self.dispatch(Step(run_id, None, None))
            adopted.append(run_id)
        return adopted

    # -- threads ------------------------------------------------------------------------------

    def _submit(self, job: _Job, delay: float = 0.0) -> None:
        with self._lock:
            if self._stopping:
                log.info("%s not queued: the API is shutting down", job.what)
                return
            if job.key in self._pending:
                if delay > 0:  # the sooner of two timers wins; a queued job is sooner still
                    self._sooner(job, time.monotonic() + delay)
                return
            self._pending.add(job.key)
            if delay > 0:
                heapq.heappush(self._timers, _Timer(time.monotonic() + delay, next(self._seq), job))
            else:
                self._ready.append(job)
            self._lock.notify_all()

    def _sooner(self, job: _Job, due: float) -> None:
        for timer in self._timers:
            if timer.job.key == job.key and due < timer.due:
                timer.due = due
                heapq.heapify(self._timers)
                self._lock.notify_all()
                return

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        # Daemon threads: a hung forge call must not keep the process from ending after
        # ``stop`` gave up waiting (the lease's TTL or ``holder_gone`` then frees it).
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _between_steps(self, step: Step) -> None:
        """Called before each step of a Run: a stopping executor starts none (the runner
        gives up the lease the last step handed on)."""
        if self._stopping:
            raise Stopping()

    def _work(self) -> None:
        ident = threading.get_ident()
        try:
            for job in self._jobs(ident):
                try:
                    job.call()
                except Exception:  # a job's failure is its own, like a Celery task's
                    log.exception("%s failed", job.what)
                finally:
                    with self._lock:
                        self._running.pop(ident, None)
        except Stopping:
            log.info("%s stopped", threading.current_thread().name)
        finally:
            with self._lock:
                self._running.pop(ident, None)

    def _jobs(self, ident: int) -> Iterator[_Job]:
        while True:
            with self._lock:
                while not self._ready and not self._stopping:
                    self._lock.wait()
                if self._stopping:
                    return
                job = self._ready.popleft()
                self._pending.discard(job.key)
                self._running[ident] = job
            yield job

    def _clock(self) -> None:
        """Move due timers to the queue, and run the tick every ``tick_interval``."""
        interval = self.context.settings.tick_interval
        next_tick = time.monotonic()
        while True:
            with self._lock:
                while True:
                    if self._stopping:
                        return
                    now = time.monotonic()
                    while self._timers and self._timers[0].due <= now:
                        self._ready.append(heapq.heappop(self._timers).job)
                        self._lock.notify_all()
                    if now >= next_tick:
                        break
                    wake = min([next_tick, *(t.due for t in self._timers[:1])])
                    self._lock.wait(wake - now)
            next_tick = time.monotonic() + interval
            try:
                adopted = self.adopt(orphans_only=True)
                if adopted:
                    log.warning("resuming runs %s, whose process ended", adopted)
                ticks.tick(self.context)
            except Exception:  # logged part by part; the next tick tries again
                log.warning("the tick failed; the next one tries again")


def _interrupt(ident: int) -> None:
    """Raise ``Stopping`` in the thread ``ident`` at its next bytecode (module)."""
    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async_exc(ctypes.c_ulong(ident), ctypes.py_object(Stopping))


def _unowned_runs(ctx: ServiceContext, orphans_only: bool) -> list[tuple[int, int, str]]:
    """Active Runs whose Binding's lease nobody alive holds (``orphans_only``: held by a
    process that ended), but not those a rate limit deferred to a later time (the tick
    dispatches them when due)."""
    with ctx.db.session() as session:
        now = database_now(session)
        rows = session.execute(
            select(
                Run.id,
                Run.binding_id,
                Run.kind,
                Run.status,
                Run.retry_at,
                Binding.lease_run_id,
                Binding.lease_owner,
                Binding.lease_expires_at,
            )
            .join(Binding, Binding.id == Run.binding_id)
            .where(Run.status.in_([s.value for s in ACTIVE_RUN_STATUSES]))
            .order_by(Run.id)
        ).all()
    found = []
    for row in rows:
        if row.status == RunStatus.QUEUED.value and row.retry_at is not None and row.retry_at > now:
            continue
        if holder_gone(row.lease_owner) or (
            not orphans_only
            and (
                row.lease_run_id is None
                or (row.lease_expires_at is not None and row.lease_expires_at <= now)
            )
        ):
            found.append((row.id, row.binding_id, row.kind))
    return found
