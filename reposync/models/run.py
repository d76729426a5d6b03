"""Run: one execution for a Binding, with its persisted stage, status and report."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, select, text
from sqlalchemy.orm import Mapped, column_property, mapped_column

from reposync.lifecycle import AuditMode, RunKind, RunMode, RunStatus, Stage, Trigger
from reposync.models.base import Base, utcnow
from reposync.models.binding import Binding

_ACTIVE = "status IN ('queued', 'running')"


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        # One active Run per Binding, enforced by the database itself.
        Index(
            "ux_runs_one_active_per_binding",
            "binding_id",
            unique=True,
            sqlite_where=text(_ACTIVE),
            postgresql_where=text(_ACTIVE),
        ),
        Index("ix_runs_binding_id_id", "binding_id", "id"),
        Index("ix_runs_status_id", "status", "id"),
        Index("ix_runs_parent_run_id", "parent_run_id"),
        # One Run per schedule slot, whatever number of beats or ticks ask for it.
        Index(
            "ux_runs_binding_id_scheduled_for",
            "binding_id",
            "scheduled_for",
            unique=True,
            sqlite_where=text("scheduled_for IS NOT NULL"),
            postgresql_where=text("scheduled_for IS NOT NULL"),
        ),
        CheckConstraint("source_side <> target_side", name="sides"),
        CheckConstraint("attempt >= 1", name="attempt"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    binding_id: Mapped[int] = mapped_column(ForeignKey("bindings.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16), default=RunKind.NORMAL.value)
    mode: Mapped[str] = mapped_column(String(16), default=RunMode.APPLY.value)
    audit_mode: Mapped[str] = mapped_column(String(16), default=AuditMode.CHECKPOINT.value)
    trigger: Mapped[str] = mapped_column(String(16), default=Trigger.MANUAL.value)
    source_side: Mapped[str] = mapped_column(String(1))
    target_side: Mapped[str] = mapped_column(String(1))
    authority_epoch: Mapped[int]

    stage: Mapped[str] = mapped_column(String(32), default=Stage.QUEUED.value)
    status: Mapped[str] = mapped_column(String(40), default=RunStatus.QUEUED.value)
    #: How the planner ran (empty_target, baseline, checkpoint, full_audit).
    plan_mode: Mapped[str | None] = mapped_column(String(16))
    #: The plan completeness marker: items count only once this is true.
    plan_complete: Mapped[bool] = mapped_column(default=False)
    planning_counters: Mapped[dict[str, Any]] = mapped_column(default=dict)
    source_digest: Mapped[str | None] = mapped_column(String(80))
    target_digest: Mapped[str | None] = mapped_column(String(80))
    #: What the inventories found that reposync cannot sync (counted, never dropped).
    unsupported: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: Objects the source inventory refused for what they are, by code:
    #: ``{"invalid_ref_name": {"count": 2, "examples": [...]}}``.
    rejected: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    #: Reads and writes per side, for "every Run explains itself".
    io: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: While a push runs, what git reports of it (``TransferProgress.to_dict``); None
    #: otherwise.
    transfer: Mapped[dict[str, Any] | None]
    counters: Mapped[dict[str, Any]] = mapped_column(default=dict)
    report: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None]

    parent_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    attempt: Mapped[int] = mapped_column(default=1)
    cancel_requested_at: Mapped[datetime | None]
    #: The schedule slot a scheduled Run was created for.
    scheduled_for: Mapped[datetime | None]
    retry_at: Mapped[datetime | None]

    #: Lease generation of the execution that last claimed this Run.
    lease_generation: Mapped[int | None]
    #: Claims since the last progress; capped, because redelivery is otherwise unbounded.
    stage_attempts: Mapped[int] = mapped_column(default=0)
    #: Last RunEvent sequence number handed out (events are numbered per Run).
    event_seq: Mapped[int] = mapped_column(default=0)

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    #: Who holds the Binding's lease for this Run, and until when (None: nobody), read
    #: with the Run (two primary-key look-ups): what tells a Run being executed from one
    #: whose execution stopped (``service.runs.interrupted``).
    lease_holder: Mapped[str | None] = column_property(
        select(Binding.lease_owner)
        .where(Binding.id == binding_id, Binding.lease_run_id == id)
        .correlate_except(Binding)
        .scalar_subquery()
    )
    lease_held_until: Mapped[datetime | None] = column_property(
        select(Binding.lease_expires_at)
        .where(Binding.id == binding_id, Binding.lease_run_id == id)
        .correlate_except(Binding)
        .scalar_subquery()
    )

    @property
    def is_active(self) -> bool:
        return RunStatus(self.status).is_active
