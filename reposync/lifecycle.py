"""The words of a Binding's and a Run's life: sides, triggers, modes, stages, statuses.

Every layer speaks them (models store them, the API and the CLI show them, tasks route by
them, the engine's report ends in a status), so they live beside ``errors.py`` as a leaf
that imports nothing of reposync, not in the engine's own vocabulary (``sync/vocabulary``:
object types, actions, item states). ``StrEnum``: the stored, shown and sent values are
the plain strings an operator reads.
"""

from __future__ import annotations

from enum import StrEnum


class Side(StrEnum):
    A = "a"
    B = "b"

    @property
    def other(self) -> Side:
        return Side.B if self is Side.A else Side.A


class RunKind(StrEnum):
    NORMAL = "normal"
    HANDOFF = "handoff"


class RunMode(StrEnum):
    APPLY = "apply"
    DRY_RUN = "dry_run"


class AuditMode(StrEnum):
    CHECKPOINT = "checkpoint"
    FULL = "full"


class Trigger(StrEnum):
    MANUAL = "manual"
    SCHEDULE = "schedule"
    WEBHOOK = "webhook"
    RETRY = "retry"
    RESUME = "resume"
    FOLLOW_UP = "follow_up"  # queued because the source changed during a Run


class Stage(StrEnum):
    """Persisted on the Run independently of its status; the order is the pipeline."""

    QUEUED = "queued"
    CHECKING_ACCESS = "checking_access"
    INVENTORY_SOURCE = "inventory_source"
    INVENTORY_TARGET = "inventory_target"
    PLANNING = "planning"
    APPLYING = "applying"
    VERIFYING = "verifying"
    FINALIZING = "finalizing"
    COMPLETED = "completed"

    @property
    def next(self) -> Stage:
        order = list(Stage)
        return order[min(order.index(self) + 1, len(order) - 1)]


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    COMPLETED_WITH_PENDING_CHANGES = "completed_with_pending_changes"
    REQUIRES_ATTENTION = "requires_attention"
    BLOCKED = "blocked"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_active(self) -> bool:
        return self in ACTIVE_RUN_STATUSES


ACTIVE_RUN_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})
