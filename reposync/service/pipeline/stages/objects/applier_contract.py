"""What an applier takes and answers, apart from the appliers themselves.

The applying stage, recovery and every applier (the Git refs' and objects' in
``appliers``, the default branch's in ``default_branch``) share these shapes; keeping
them here lets ``appliers`` pick the default branch's applier without either module
importing the other.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from reposync.errors import RateLimited, ReposyncError
from reposync.providers.base import ItemError
from reposync.service.pipeline.execution import StageExecution
from reposync.sync.key_moves import TEMPORARY
from reposync.sync.planner import ItemPlan, Reason
from reposync.sync.vocabulary import Action, ItemState, Representation


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyItem(ItemPlan):
    """A stored RunItem as the apply step sees it: the planner's ``ItemPlan`` and what
    the row adds (plain data, detached from any session). ``applying`` reads exactly
    these fields' columns, by name."""

    id: int
    #: Times a batch claimed it to write it; a wait for a rate limit is given back.
    attempt_count: int = 0
    verify_hash: str | None = None
    #: What it last settled with: ``rate_limited`` on a planned item says a rate limit
    #: stopped its write before (see ``waited``).
    error_code: str | None = None

    @property
    def waited(self) -> bool:
        """A rate limit stopped its write last time. That write may have begun (a create
        is several requests for some types, and the limit may strike between them), so a
        create is looked up by its marker before it is sent again."""
        return self.error_code == RateLimited.code

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
    """What the service concludes about one item, by reading the target back: the state
    it settles in, with its link's facts.

    Not the provider's ``ApplyResult`` (what a write's response said): success is never
    decided from a response alone. They share one type, ``ItemError``: a refusal or a
    lost response the write reported becomes the item's error when read-back does not
    find the write.
    """

    item: ApplyItem
    state: ItemState
    error: ItemError | None = None
    #: What read-back observed on the target (for the link).
    target_identity: str | None = None
    target_revision: str | None = None
    representation: Representation = Representation.NATIVE
    source_number: int | None = None
    target_number: int | None = None
    #: A recovered item whose target turned out different: re-planned as this update.
    replan_action: Action | None = None
    replan_expected_hash: str | None = None
    #: The write provably never happened, so it may be tried again (never guessed): a
    #: create whose marker the target proved no object carries (``AbsenceProver``), an
    #: edit whose object reads exactly as when it was planned, a delete whose object is
    #: still there.
    proven_absent: bool = False
    #: A rate limit stopped its write: a wait, not an attempt (its claim's is given back).
    deferred: bool = False


@dataclass(slots=True)
class WriteReport:
    """What a write told us (read-back still decides success)."""

    refused: dict[int, ItemError] = field(default_factory=dict)
    identities: dict[int, str] = field(default_factory=dict)
    verify_hashes: dict[int, str] = field(default_factory=dict)
    #: Sent, outcome not observed: read-back by marker decides, nothing is re-sent.
    unknown: dict[int, str] = field(default_factory=dict)
    #: Not attempted because of a rate limit: when they may be.
    deferred: dict[int, datetime] = field(default_factory=dict)
    representations: dict[int, Representation] = field(default_factory=dict)


class WriteStopped(Exception):
    """A write that ``error`` stopped before it sent the items ``unsent`` (their ids).

    Those go back to ``planned``, their attempt given back: nothing of theirs reached
    the target, so neither read-back nor recovery has anything to prove (a push refused
    its credentials would otherwise leave them unknown, read back with the same refused
    credentials, and the Binding waiting for an operator's recovery). What the write did
    send stays mid-write, for read-back. The stage then meets ``error`` as if the write
    had raised it."""

    def __init__(self, error: ReposyncError, unsent: Collection[int]) -> None:
        super().__init__(error.message)
        self.error = error
        self.unsent = frozenset(unsent)


class Applier(Protocol):
    """One object type's way to the target. The applying stage calls, in order:
    ``prepare`` (source re-read: supersede, no-ops), ``write`` (the only external write),
    then ``read_back`` (the only judge of success). One instance per batch."""

    def prepare(
        self, ex: StageExecution, items: Sequence[ApplyItem]
    ) -> tuple[list[ApplyItem], list[ItemOutcome]]:
        """Split a batch into items to write and items already settled."""

    def write(self, ex: StageExecution, items: Sequence[ApplyItem]) -> WriteReport:
        """Write the items (the batch's only external write); ``WriteStopped`` when an
        error stopped it before some were sent."""

    def read_back(self, ex: StageExecution, items: Sequence[ApplyItem]) -> list[ItemOutcome]:
        """COMPLETED where the target holds the desired state, else PLANNED."""


def deferred(item: ApplyItem, retry_at: datetime) -> ItemOutcome:
    """A rate limit stopped the item's write: planned again, to be written from
    ``retry_at`` on, without having spent an attempt."""
    return ItemOutcome(
        item,
        ItemState.PLANNED,
        ItemError(
            RateLimited.code,
            f"waits for the target's rate limit until {retry_at.isoformat()}",
        ),
        deferred=True,
    )


def superseded(item: ApplyItem, why: str) -> ItemOutcome:
    """The item's source changed after planning: a follow-up Run takes it."""
    return ItemOutcome(
        item, ItemState.SUPERSEDED, ItemError("superseded", f"{item.object_key} {why}")
    )
