"""What an applier takes and answers, apart from the appliers themselves.

The applying stage, recovery and every applier (the Git refs' and objects' in
``appliers``, the default branch's in ``default_branch``) share these shapes; keeping
them here lets ``appliers`` pick the default branch's applier without either module
importing the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from reposync.service.pipeline.execution import StageExecution
from reposync.sync.key_moves import TEMPORARY
from reposync.sync.planner import Reason
from reposync.sync.vocabulary import Action, ItemState, ObjectType, Representation


@dataclass(frozen=True, slots=True)
class ApplyItem:
    """A RunItem as the apply step sees it (plain data, detached from any session)."""

    id: int
    object_type: ObjectType
    object_key: str
    action: Action
    reason: str
    source_identity: str | None
    target_identity: str | None
    source_revision: str | None
    desired_hash: str | None
    expected_target_hash: str | None
    intent: dict[str, Any] = field(default_factory=dict)
    attempt_count: int = 0
    verify_hash: str | None = None

    @property
    def drops_link(self) -> bool:
        """Its link is dropped when it settles: a delete, or a no-op where the target has
        nothing left either."""
        return self.action is Action.DELETE or self.reason == Reason.ALREADY_DELETED

    @property
    def source_gone(self) -> bool:
        """Planned because the source object is gone (a misplaced object's delete is not:
        its source is there, and its create follows)."""
        return self.drops_link and self.reason != Reason.MISPLACED

    @property
    def temporary_key(self) -> bool:
        """A rename's first step: the object steps aside so another can take its key.
        Its link is left unreliable until the rename's second step verifies it."""
        return bool(self.intent.get(TEMPORARY))


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    item: ApplyItem
    state: ItemState
    error_code: str | None = None
    error_message: str | None = None
    #: What read-back observed on the target (for the link).
    target_identity: str | None = None
    target_revision: str | None = None
    representation: Representation = Representation.NATIVE
    source_number: int | None = None
    target_number: int | None = None
    #: A recovered item whose target turned out different: re-planned as this update.
    replan_action: Action | None = None
    replan_expected_hash: str | None = None
    #: A create not found because the target proved no object carries its marker: it
    #: never happened, so it may be tried again (never guessed: see ``AbsenceProver``).
    proven_absent: bool = False


@dataclass(slots=True)
class WriteReport:
    """What a write told us (read-back still decides success)."""

    refused: dict[int, tuple[str, str]] = field(default_factory=dict)
    identities: dict[int, str] = field(default_factory=dict)
    verify_hashes: dict[int, str] = field(default_factory=dict)
    #: Sent, outcome not observed: read-back by marker decides, nothing is re-sent.
    unknown: dict[int, str] = field(default_factory=dict)
    #: Not attempted because of a rate limit: when they may be.
    deferred: dict[int, datetime] = field(default_factory=dict)
    representations: dict[int, Representation] = field(default_factory=dict)


class Applier(Protocol):
    """One object type's way to the target. The applying stage calls, in order:
    ``prepare`` (source re-read: supersede, no-ops), ``write`` (the only external write),
    then ``read_back`` (the only judge of success). One instance per batch."""

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        """Split a batch into items to write and items already settled."""

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> WriteReport:
        """Write the items (the batch's only external write)."""

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        """COMPLETED where the target holds the desired state, else PLANNED."""
