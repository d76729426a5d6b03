"""One stage execution: the claimed lease, the Run as claimed, and the opened providers.

Stage handlers receive a ``StageExecution`` and use it for every write (always fenced),
every provider they open (opened once, closed at the end) and the Run's I/O accounting.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from reposync.lifecycle import RunMode, Side, Stage
from reposync.models import Binding, Run
from reposync.providers.base import EndpointSpec, Provider
from reposync.service.context import ServiceContext
from reposync.service.events import emit
from reposync.service.lookups import endpoint_spec
from reposync.service.pipeline.leases import Lease, fenced


@dataclass(slots=True)
class StageExecution:
    ctx: ServiceContext
    lease: Lease
    run: Run
    binding: Binding
    _providers: dict[str, Provider] = field(default_factory=dict)
    #: Counters not kept by providers, by ``Run.io`` bucket (``git``: pushes, fetches;
    #: ``lfs``: objects and bytes moved), merged into ``Run.io``.
    extra_io: dict[str, dict[str, int]] = field(default_factory=dict)

    # -- identity -----------------------------------------------------------------

    @property
    def run_id(self) -> int:
        return self.run.id

    @property
    def stage(self) -> Stage:
        return Stage(self.run.stage)

    @property
    def dry_run(self) -> bool:
        return self.run.mode == RunMode.DRY_RUN.value

    @property
    def source_side(self) -> Side:
        return Side(self.run.source_side)

    def spec(self, role: str) -> EndpointSpec:
        side = self.source_side if role == "source" else self.source_side.other
        return endpoint_spec(self.binding, side)

    # -- providers ----------------------------------------------------------------

    def provider(self, role: str) -> Provider:
        if role not in self._providers:
            pool = self.ctx.providers
            spec = self.spec(role)
            opener = self.ctx.open_provider
            assert opener is not None
            provider = pool.get(spec) if pool else opener(spec)
            # The Binding's standby holds real shadow branches; only the authority derives
            # them (also in a handoff's reverse dry-run, where the authority is the target).
            side = self.source_side if role == "source" else self.source_side.other
            provider.derive_shadows = side is self.binding.authority
            self._providers[role] = provider
        return self._providers[role]

    def source(self) -> Provider:
        return self.provider("source")

    def target(self) -> Provider:
        return self.provider("target")

    def close(self) -> None:
        if self.ctx.providers is None:  # borrowed providers stay open for the next step
            for provider in self._providers.values():
                provider.close()
        self._providers.clear()

    # -- writes -------------------------------------------------------------------

    @contextmanager
    def fenced(self) -> Iterator[Session]:
        with fenced(self.ctx.db, self.lease) as session:
            yield session

    def event(self, session: Session, event_type: str, message: str = "", **counts: Any) -> None:
        emit(
            session,
            self.run_id,
            event_type,
            self.run.stage,
            generation=self.lease.generation,
            counts=counts,
            message=message,
        )

    def flush_io(self, session: Session) -> None:
        """Merge provider counters into ``Run.io`` (inside a fenced transaction)."""
        deltas: dict[str, dict[str, int]] = {}
        for role, provider in self._providers.items():
            stats = provider.stats.take()
            if any(stats.values()):
                deltas[role] = stats
        for role, counts in self.extra_io.items():
            if counts:
                deltas[role] = dict(counts)
        self.extra_io.clear()
        if not deltas:
            return
        current = session.execute(select(Run.io).where(Run.id == self.run_id)).scalar_one()
        merged = {k: dict(v) for k, v in (current or {}).items()}
        for role, stats in deltas.items():
            bucket = merged.setdefault(role, {})
            for key, value in stats.items():
                bucket[key] = bucket.get(key, 0) + value
        session.execute(update(Run).where(Run.id == self.run_id).values(io=merged))

    def count_io(self, key: str, amount: int = 1, *, role: str = "git") -> None:
        bucket = self.extra_io.setdefault(role, {})
        bucket[key] = bucket.get(key, 0) + amount

    def advance(
        self, session: Session, next_stage: Stage, message: str = "", **values: Any
    ) -> Stage:
        """Persist the next stage (progress: resets the attempt counter) in ``session``."""
        self.flush_io(session)
        session.execute(
            update(Run)
            .where(Run.id == self.run_id)
            .values(stage=next_stage.value, stage_attempts=0, **values)
        )
        emit(
            session,
            self.run_id,
            "stage_completed",
            self.run.stage,
            generation=self.lease.generation,
            message=message or f"next: {next_stage.value}",
        )
        self.run.stage = next_stage.value
        return next_stage

    def advance_now(self, next_stage: Stage, message: str = "", **values: Any) -> Stage:
        with self.fenced() as session:
            return self.advance(session, next_stage, message, **values)

    def cancel_requested(self) -> bool:
        with self.ctx.db.session() as session:
            return (
                session.execute(
                    select(Run.cancel_requested_at).where(Run.id == self.run_id)
                ).scalar_one()
                is not None
            )
