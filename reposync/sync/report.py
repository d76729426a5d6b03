"""Run reports and final statuses, computed from aggregated item counts.

Pure: the service aggregates RunItems with one GROUP BY and hands the rows over, so a
report costs the same for ten items or a million.

Each problem says three things: ``error_code`` (the precise, stable cause),
``problem_type`` (one of ``ProblemType``'s seven kinds: what a user interface offers to do
about it, from the error tree's class, so nothing here restates it) and ``category``
(what the entry is). Categories ``conflict``, ``blocked``, ``error`` and ``run_error``
are failures; ``preserved`` (target-only objects kept), ``pending_change`` (superseded
by a newer source) and ``data_gap`` (objects that cannot be synced) are notices: nothing
failed, and their kind is the one whose action they would take if anyone acts
(``NOTICE_TYPES``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reposync.errors import (
    Conflict,
    PermissionDenied,
    ProblemType,
    RateLimited,
    ResultUnknown,
    ResultUnknownUnresolved,
    VisibilityUnconfirmed,
    error_class,
)
from reposync.lifecycle import RunStatus
from reposync.sync.vocabulary import Action, ItemState

COUNTER_NAMES = (
    "scanned",
    "checkpoint_skipped",
    "created",
    "updated",
    "deleted",
    "unchanged",
    "conflicts",
    "failed",
    "blocked",
    "pending_changes",
)

CONFLICT_CODE = Conflict.code

#: What each entry of a report's problems is (``Problem.category``): failures first.
FAILURE_CATEGORIES = ("conflict", "blocked", "error", "run_error")
NOTICE_CATEGORIES = ("preserved", "pending_change", "data_gap")
#: The kind of a notice: target-only objects make the standby differ from the authority
#: (acting on them is on the standby, as for a conflict); a pending change and a data gap
#: are objects this Run did not sync (a follow-up Run takes the first, nothing the second).
NOTICE_TYPES = {
    "preserved": ProblemType.REPOSITORY_CONFLICT,
    "pending_change": ProblemType.SYNC_FAILED,
    "data_gap": ProblemType.SYNC_FAILED,
}


def problem_type_of(code: str) -> ProblemType:
    """The kind of a failure with this code: its class's in the error tree; an item's own
    code (a forge's refusal: ``invalid``, ``dependency_missing``) is a failed sync."""
    known = error_class(code)
    return known.problem_type if known is not None else ProblemType.SYNC_FAILED


@dataclass(frozen=True, slots=True)
class ItemAggregate:
    """One row of ``GROUP BY object_type, action, state, error_code``."""

    object_type: str
    action: Action
    state: ItemState
    error_code: str | None
    count: int
    #: A few object keys of this group, so a report names examples.
    examples: Sequence[str] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    error_code: str
    problem_type: ProblemType
    #: What the entry is (``FAILURE_CATEGORIES`` or ``NOTICE_CATEGORIES``).
    category: str
    message: str
    suggested_action: str
    retryable: bool
    count: int = 1
    object_type: str | None = None
    examples: Sequence[str] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "error_code": self.error_code,
            "problem_type": self.problem_type.value,
            "category": self.category,
            "message": self.message,
            "suggested_action": self.suggested_action,
            "retryable": self.retryable,
            "count": self.count,
        }
        if self.object_type is not None:
            data["object_type"] = self.object_type
        if self.examples:
            data["examples"] = list(self.examples)
        return data


@dataclass(slots=True)
class PlanningCounters:
    """Counts only the planner knows: objects looked at but given no item."""

    scanned: dict[str, int] = field(default_factory=dict)
    checkpoint_skipped: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {
            "scanned": dict(self.scanned),
            "checkpoint_skipped": dict(self.checkpoint_skipped),
            "unchanged": dict(self.unchanged),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, int]] | None) -> PlanningCounters:
        data = data or {}
        return cls(
            scanned=dict(data.get("scanned", {})),
            checkpoint_skipped=dict(data.get("checkpoint_skipped", {})),
            unchanged=dict(data.get("unchanged", {})),
        )


def _is_conflict(row: ItemAggregate) -> bool:
    return row.action is Action.CONFLICT or row.error_code == CONFLICT_CODE


def _counter_for(row: ItemAggregate) -> str | None:
    if _is_conflict(row):
        return "conflicts"
    if row.state is ItemState.COMPLETED:
        return {
            Action.CREATE: "created",
            Action.UPDATE: "updated",
            Action.DELETE: "deleted",
            Action.NOOP: "unchanged",
        }.get(row.action)
    return {
        ItemState.FAILED: "failed",
        ItemState.BLOCKED: "blocked",
        ItemState.SUPERSEDED: "pending_changes",
    }.get(row.state)


def build_counters(
    rows: Iterable[ItemAggregate], planning: PlanningCounters
) -> tuple[dict[str, int], dict[str, dict[str, int]], dict[str, int]]:
    """Return (counters, per-object-type counters, planned actions)."""
    counters = dict.fromkeys(COUNTER_NAMES, 0)
    per_type: dict[str, dict[str, int]] = {}

    def bump(object_type: str, name: str, count: int) -> None:
        counters[name] += count
        bucket = per_type.setdefault(object_type, dict.fromkeys(COUNTER_NAMES, 0))
        bucket[name] += count

    for name in ("scanned", "checkpoint_skipped", "unchanged"):
        for object_type, count in getattr(planning, name).items():
            bump(object_type, name, count)
    planned: dict[str, int] = {}
    for row in rows:
        planned[str(row.action)] = planned.get(str(row.action), 0) + row.count
        counter = _counter_for(row)
        if counter is not None:
            bump(row.object_type, counter, row.count)
    return counters, per_type, planned


def item_problems(rows: Iterable[ItemAggregate]) -> list[Problem]:
    """One problem per (type, kind of trouble), with a count and a few examples."""
    merged: dict[tuple[str, str, str], Problem] = {}
    for problem in _row_problems(rows):
        key = (problem.object_type or "", problem.category, problem.error_code)
        seen = merged.get(key)
        if seen is None:
            merged[key] = problem
        else:
            merged[key] = replace(
                seen,
                count=seen.count + problem.count,
                examples=[*seen.examples, *problem.examples][:MAX_EXAMPLES],
            )
    return list(merged.values())


MAX_EXAMPLES = 5


def _row_problems(rows: Iterable[ItemAggregate]) -> Iterator[Problem]:
    for row in rows:
        if _is_conflict(row):
            yield Problem(
                error_code=CONFLICT_CODE,
                problem_type=Conflict.problem_type,
                category="conflict",
                message=row.error_message
                or f"{row.count} {row.object_type} object(s) exist on the target with "
                "different content and are not managed by this Binding; kept as they are",
                suggested_action=Conflict.suggested_action,
                retryable=False,
                count=row.count,
                object_type=row.object_type,
                examples=row.examples,
            )
        elif row.action is Action.REPORT:
            yield Problem(
                error_code="target_only_preserved",
                problem_type=NOTICE_TYPES["preserved"],
                category="preserved",
                message=f"{row.count} {row.object_type} object(s) exist only on the "
                "target; preserved, not managed",
                suggested_action="none, or delete them on the target if unwanted",
                retryable=False,
                count=row.count,
                object_type=row.object_type,
                examples=row.examples,
            )
        elif row.state in (ItemState.FAILED, ItemState.BLOCKED):
            code = row.error_code or "item_failed"
            known = error_class(code)
            yield Problem(
                error_code=code,
                problem_type=problem_type_of(code),
                category="blocked" if row.state is ItemState.BLOCKED else "error",
                message=row.error_message or f"{row.count} {row.object_type} item(s) {row.state}",
                suggested_action=known.suggested_action if known else ITEM_ACTION,
                retryable=known.rerun_clears() if known else False,
                count=row.count,
                object_type=row.object_type,
                examples=row.examples,
            )
        elif row.state is ItemState.SUPERSEDED:
            yield Problem(
                error_code="superseded",
                problem_type=NOTICE_TYPES["pending_change"],
                category="pending_change",
                message=f"{row.count} {row.object_type} object(s) changed on the source "
                "after planning; a follow-up Run picks them up",
                suggested_action="none: a follow-up Run is queued",
                retryable=True,
                count=row.count,
                object_type=row.object_type,
                examples=row.examples,
            )


#: What to do about an item's own code (a forge's refusal: ``invalid``, ``dependency_missing``
#: ...); codes of the error tree say it themselves.
ITEM_ACTION = "inspect the Run's items and retry"


def final_status(
    counters: Mapping[str, int],
    *,
    cancelled: bool = False,
    error_code: str | None = None,
) -> RunStatus:
    """Precedence: cancelled > run error > blocked > failed items > conflicts > pending."""
    if cancelled:
        return RunStatus.CANCELLED
    if error_code is not None:
        return RunStatus.BLOCKED if error_code in _BLOCKING_RUN_CODES else RunStatus.FAILED
    if counters.get("blocked", 0):
        return RunStatus.BLOCKED
    if counters.get("failed", 0):
        return RunStatus.FAILED
    if counters.get("conflicts", 0):
        return RunStatus.REQUIRES_ATTENTION
    if counters.get("pending_changes", 0):
        return RunStatus.COMPLETED_WITH_PENDING_CHANGES
    return RunStatus.COMPLETED


_BLOCKING_RUN_CODES = frozenset(
    {
        PermissionDenied.code,
        RateLimited.code,
        ResultUnknown.code,
        VisibilityUnconfirmed.code,
        ResultUnknownUnresolved.code,
    }
)
