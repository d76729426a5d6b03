"""One batch of writes to one hosted forge's repository, each sent to its family's
handler, and what the forge answered turned into results, the same on every forge.

The stage's write guard is asked before each write: a cancel or a lost lease stops the
batch between two writes. A rate limit defers this write and the rest of the batch
(nothing of the rest was sent; of this write, a create that takes several requests may
have landed its first, which is why the pipeline looks a deferred create up by its
marker before it sends it again); a refusal is this write's alone; a lost response is
looked for at once (the forge's ``find_created``) and finished, or reported ``UNKNOWN``,
never re-sent. Anything uncertain or refused makes the number allocator count afresh
(``forge.numbers``).

What differs between forges is a subclass's few hooks: how the object is read to check
it was not changed since planned, how a lost create is found, what its later requests
would have done, and how the found object exists there.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Generic, Protocol, TypeVar

from reposync.errors import (
    Conflict,
    ContentUnavailable,
    RateLimited,
    ReposyncError,
    ResultUnknown,
    WriteRefused,
)
from reposync.guards import check_guard
from reposync.providers.base import ApplyResult, ItemError, TargetWrite, WriteStatus
from reposync.providers.forge.numbers import NumberAllocator
from reposync.sync.canonical import CanonicalObject
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)


class BatchContext(Protocol):
    """What the loop needs of a forge's per-batch context."""

    numbers: NumberAllocator
    #: Marker -> identity of what this batch created (references within a batch).
    created: dict[str, str]


C = TypeVar("C", bound=BatchContext)
#: Performs one write of one (action, type): the target identity, and how the object
#: exists on the forge when that is not its type's own representation.
Handler = Callable[[C, TargetWrite], tuple[str, Representation | None]]


class ForgeWriter(ABC, Generic[C]):
    """Applies one batch of writes for one repository (its context keeps per-batch
    caches)."""

    #: What a forge raises for a write it refused (a 404 of a write is one on Forgejo).
    refusals: ClassVar[tuple[type[ReposyncError], ...]] = (WriteRefused,)

    def __init__(
        self, ctx: C, forge: str, handlers: Mapping[tuple[Action, ObjectType], Handler[C]]
    ) -> None:
        self.ctx = ctx
        self.forge = forge
        self.handlers = handlers

    def apply(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        """Each write in turn. The stage's write guard is asked before each one
        (``reposync.guards``): a cancel or a lost lease stops the batch there, between
        two whole writes, and what the earlier ones wrote is the read-back's to find."""
        results: list[ApplyResult] = []
        for index, write in enumerate(writes):
            check_guard()
            try:
                results.append(self._one(write))
            except RateLimited as limited:
                # Nothing of this write was sent: it and the rest wait for retry_at.
                results.extend(
                    ApplyResult(
                        w.item_id,
                        WriteStatus.DEFERRED,
                        error=ItemError.of(limited),
                        retry_at=limited.retry_at,
                    )
                    for w in writes[index:]
                )
                break
            except ContentUnavailable as unreadable:  # the source's bytes: this write only
                results.append(
                    ApplyResult(write.item_id, WriteStatus.REFUSED, error=ItemError.of(unreadable))
                )
            except ResultUnknown as unknown:
                # A create may have taken a number we did not see: count afresh before
                # the next number is allocated (a stale count shifts every later one).
                self.ctx.numbers.forget()
                results.append(self._recover(write, unknown))
            except self.refusals as refused:
                self.ctx.numbers.forget()  # a multi-request create may have stopped midway
                code = refused.refusal if isinstance(refused, WriteRefused) else "not_found"
                if code == "not_found" and write.action is Action.CREATE:
                    code = "dependency_missing"  # a create 404s only on what it hangs on
                results.append(
                    ApplyResult(
                        write.item_id, WriteStatus.REFUSED, error=ItemError(code, refused.message)
                    )
                )
        return results

    def _one(self, write: TargetWrite) -> ApplyResult:
        handler = self.handlers.get((write.action, write.object_type))
        if handler is None:
            return ApplyResult(
                write.item_id,
                WriteStatus.REFUSED,
                error=ItemError(
                    "unsupported",
                    f"{self.forge} cannot {write.action.value} a {write.object_type.value}",
                ),
            )
        if write.action is not Action.CREATE and write.expected_hash is not None:
            current = self.current(write)
            if current is not None and current.content_hash != write.expected_hash:
                return ApplyResult(
                    write.item_id,
                    WriteStatus.REFUSED,
                    error=ItemError(
                        Conflict.code,
                        f"{write.object_type.value} {write.target_identity} changed on "
                        f"{self.forge} since it was planned",
                    ),
                )
        identity, representation = handler(self.ctx, write)
        if write.action is Action.CREATE:
            self.ctx.created[write.marker] = identity
        return ApplyResult(
            write.item_id, WriteStatus.OK, target_identity=identity, representation=representation
        )

    def _recover(self, write: TargetWrite, unknown: ResultUnknown) -> ApplyResult:
        """A lost response: find what was created (marker, natural key) and finish it, or
        say unknown."""
        if write.action is Action.CREATE:
            try:
                found = self.find_created(write)
            except Exception:  # the look-up failing must not hide the unknown write
                log.exception("looking for %s after a lost response failed", write.marker)
                found = None
            if found is not None:
                self.finish_create(write, found)
                self.ctx.created[write.marker] = found
                return ApplyResult(
                    write.item_id,
                    WriteStatus.OK,
                    target_identity=found,
                    representation=self.representation(write, found),
                )
        return ApplyResult(write.item_id, WriteStatus.UNKNOWN, error=ItemError.of(unknown))

    @abstractmethod
    def current(self, write: TargetWrite) -> CanonicalObject | None:
        """The write's target as the forge has it now (``None``: gone)."""

    @abstractmethod
    def find_created(self, write: TargetWrite) -> str | None:
        """The identity of what a create whose answer was lost made, if it landed."""

    def finish_create(self, write: TargetWrite, identity: str) -> None:
        """The requests a found create would have sent after its first one (all
        idempotent); none by default."""

    @abstractmethod
    def representation(self, write: TargetWrite, identity: str) -> Representation | None:
        """How a create found after a lost response exists (its handler would have said
        so had the answer arrived)."""
