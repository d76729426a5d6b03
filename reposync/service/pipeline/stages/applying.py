"""Stage ``applying``: one physical batch per execution, intent before write.

Order of one execution:

1. Settle what an earlier execution left ``applying``/``verifying`` (it may have died
   mid-write): read back, mark completed what arrived, re-plan what did not.
2. Check for cancellation (a cancel during the write stops a push at once, and a
   forge's batch at its next write: their items are read back, then the Run ends
   ``cancelled``).
3. Claim the lowest unfinished batch: ``planned -> applying`` in one fenced, guarded
   UPDATE that also counts the attempt (items over the cap fail instead).
4. Write (the applier re-reads the source first and supersedes what moved), mark the
   batch ``verifying``, read back, and settle each item with its link in one fenced
   transaction.

A wait for a rate limit is never an attempt: the items a limit stopped go back to
``planned`` with their claim's attempt given back (``rate_limited`` on the row, so a
create the limit cut short is looked up by its marker before it is sent again), and so
does every item not yet sent when a retryable error stops the batch. The cap counts
only writes that were sent, or executions that died mid-write (a poison item), however
many times a limit defers the Run.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Executable, Table, case, func, select, update
from sqlalchemy.orm import Session

from reposync import metrics
from reposync.errors import (
    AttemptsExhausted,
    RateLimited,
    ReposyncError,
    ResultUnknown,
    RunCancelled,
    VerifyMismatch,
)
from reposync.lifecycle import Stage
from reposync.models import Run, RunItem, utcnow
from reposync.models.db import driver_datetime, execute, executemany, fetch
from reposync.providers.base import ItemError
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.objects.applier_contract import (
    ApplyItem,
    ItemOutcome,
    WriteStopped,
    deferred,
)
from reposync.service.pipeline.stages.objects.appliers import applier_for
from reposync.service.pipeline.stages.objects.links import (
    VerifiedPair,
    drop_links,
    mark_unreliable,
    write_links,
)
from reposync.sync.canonical import REF_TYPES
from reposync.sync.planner import Reason
from reposync.sync.vocabulary import Action, ItemState, ObjectType, Representation

_UNFINISHED = (ItemState.APPLYING.value, ItemState.VERIFYING.value)

#: The run_items table for Core statements (no ORM bookkeeping in the hot path).
ITEMS = cast("Table", RunItem.__table__)

#: The columns the apply step reads from a RunItem: ``ApplyItem``'s fields, the one list.
#: Every read of an item selects (or returns) them, and ``_to_item`` maps them by name.
_ITEM_FIELDS = tuple(f.name for f in fields(ApplyItem))
_ITEM_COLUMNS = tuple(ITEMS.c[name] for name in _ITEM_FIELDS)


def _json(value: Any) -> dict[str, Any]:
    """A JSON column as the driver returns it (text on SQLite, decoded on PostgreSQL)."""
    if value is None:
        return {}
    return dict(json.loads(value)) if isinstance(value, str | bytes) else dict(value)


#: How a column's stored value becomes its field's (the others are taken as they are).
_DECODE: dict[str, Callable[[Any], Any]] = {
    "object_type": {t.value: t for t in ObjectType}.__getitem__,
    "action": {a.value: a for a in Action}.__getitem__,
    "reason": {r.value: r for r in Reason}.__getitem__,
    "intent": _json,
}


def _to_item(values: dict[str, Any]) -> ApplyItem:
    """An ``ApplyItem`` from one row of ``_ITEM_COLUMNS`` as ``{column name: value}``
    (decoded in place)."""
    for name, decode in _DECODE.items():
        values[name] = decode(values[name])
    return ApplyItem(**values)


def apply_next_batch(ex: StageExecution) -> Stage:
    settle_unfinished(ex)
    if ex.cancel_requested():
        return ex.advance_now(Stage.FINALIZING, "cancel requested")
    batch_no = next_batch(ex)
    if batch_no is None:
        return ex.advance_now(Stage.VERIFYING, "every batch settled")
    items = claim_batch(ex, batch_no)
    if items:
        sent: set[int] = set()
        try:
            outcomes, retry_at = apply_items(ex, items, sent=sent)
        except RunCancelled:
            # A cancel stopped the push (its git is dead) or a forge's batch (at its next
            # write): read back what it may have written, then end the Run as any cancel
            # does.
            settle_unfinished(ex)
            stopped = "push" if items[0].object_type in REF_TYPES else "batch of writes"
            return ex.advance_now(
                Stage.FINALIZING, f"cancel requested; the running {stopped} stopped"
            )
        except WriteStopped as halted:
            _give_back(ex, items, halted.error, sent, halted.unsent)
            raise halted.error from None  # the write's own error, as if it had raised it
        except ReposyncError as error:
            _give_back(ex, items, error, sent, frozenset())
            raise
        record(ex, outcomes, batch_no=batch_no)
        if retry_at is not None:  # the rest of the batch waits for the forge's limit
            waiting = sum(1 for outcome in outcomes if outcome.deferred)
            raise RateLimited(
                f"the target's rate limit stopped the batch ({waiting} items wait)",
                retry_at=retry_at,
            )
    if next_batch(ex) is None:
        return ex.advance_now(Stage.VERIFYING, "every batch settled")
    return Stage.APPLYING


def _give_back(
    ex: StageExecution,
    items: Sequence[ApplyItem],
    error: ReposyncError,
    sent: set[int],
    unsent: frozenset[int],
) -> None:
    """A batch ``error`` stopped: the items its write never sent are ``planned`` again;
    when retrying may help (the forge's trouble, not the items'), every item not sent
    gets its attempt back, as the retry is free."""
    refund_attempts(ex, [item for item in items if item.id in unsent], replan=True)
    if error.retryable:
        refund_attempts(ex, [i for i in items if i.id not in sent and i.id not in unsent])


def apply_items(
    ex: StageExecution, items: Sequence[ApplyItem], *, sent: set[int] | None = None
) -> tuple[list[ItemOutcome], datetime | None]:
    """Prepare, write, mark verifying, read back: one batch's outcomes.

    Also returns when a rate limit lets the writes it stopped be tried again (those
    items go back to ``planned``, their attempt given back). ``sent`` receives the ids
    of the items whose writes were sent, as soon as the write returns: an error after
    that (in read-back) leaves their attempt counted and theirs alone.
    """
    applier = applier_for(items[0].object_type)
    to_write, outcomes = applier.prepare(ex, items)
    if not to_write:
        return outcomes, None
    ex.lease.check()  # the last moment a stalled execution can still be stopped
    report = applier.write(ex, to_write)
    written = [item for item in to_write if item.id not in report.deferred]
    if sent is not None:
        sent.update(item.id for item in written)
    outcomes.extend(
        deferred(item, report.deferred[item.id]) for item in to_write if item.id in report.deferred
    )
    if not written:
        return outcomes, max(report.deferred.values(), default=None)
    mark_verifying(ex, written)
    landed = [
        replace(
            item,
            target_identity=report.identities.get(item.id, item.target_identity),
            verify_hash=report.verify_hashes.get(item.id, item.verify_hash),
        )
        for item in written
    ]
    for outcome in applier.read_back(ex, landed):
        item = outcome.item
        if (
            item.id in report.representations
            and outcome.state is ItemState.COMPLETED
            # a projection stays a projection even if its comment carries a header
            and item.object_type.representation is Representation.NATIVE
        ):
            outcome = replace(outcome, representation=report.representations[item.id])
        if outcome.state is ItemState.PLANNED:  # read-back did not find what was written
            if item.id in report.refused:
                outcome = replace(outcome, state=ItemState.FAILED, error=report.refused[item.id])
            elif item.id in report.unknown and outcome.proven_absent:
                pass  # sent, and proven never to have happened: planned, tried again
            elif item.id in report.unknown:
                # Sent, not found: never re-sent blindly. Recovery proves the outcome.
                outcome = replace(
                    outcome,
                    state=ItemState.BLOCKED,
                    error=ItemError(ResultUnknown.code, report.unknown[item.id]),
                )
            else:
                outcome = replace(
                    outcome,
                    state=ItemState.FAILED,
                    error=ItemError(
                        VerifyMismatch.code, "the target does not read back as written"
                    ),
                )
        outcomes.append(outcome)
    return outcomes, max(report.deferred.values(), default=None)


def next_batch(ex: StageExecution) -> int | None:
    with ex.ctx.db.session() as session:
        return session.execute(
            select(func.min(RunItem.batch_no)).where(
                RunItem.run_id == ex.run_id,
                RunItem.state == ItemState.PLANNED.value,
                RunItem.batch_no.is_not(None),
            )
        ).scalar_one_or_none()


_CLAIM = (
    f"UPDATE run_items SET state = '{ItemState.APPLYING.value}', "
    "attempt_count = attempt_count + 1, applied_generation = ?, updated_at = ? "
    f"WHERE run_id = ? AND batch_no = ? AND state = '{ItemState.PLANNED.value}' "
    f"RETURNING {', '.join(_ITEM_FIELDS)}"
)


def claim_batch(ex: StageExecution, batch_no: int) -> list[ApplyItem]:
    """``planned -> applying`` for one batch, persisted before any external write."""
    max_attempts = ex.ctx.settings.max_item_attempts
    with ex.fenced() as session:
        exhausted = _rowcount(
            session,
            update(ITEMS)
            .where(
                ITEMS.c.run_id == ex.run_id,
                ITEMS.c.batch_no == batch_no,
                ITEMS.c.state == ItemState.PLANNED.value,
                ITEMS.c.attempt_count >= max_attempts,
            )
            .values(
                state=ItemState.FAILED.value,
                error_code=AttemptsExhausted.code,
                error_message=f"gave up after {max_attempts} attempts",
                applied_generation=ex.lease.generation,
            ),
        )
        now = driver_datetime(session, utcnow())
        params = (ex.lease.generation, now, ex.run_id, batch_no)
        # The driver's rows are plain tuples in RETURNING's order, which is _ITEM_FIELDS'.
        items = [
            _to_item(dict(zip(_ITEM_FIELDS, row, strict=True)))
            for row in fetch(session, _CLAIM, params)
        ]
        ex.event(
            session,
            "batch_claimed",
            f"batch {batch_no}",
            batch=batch_no,
            applying=len(items),
            attempts_exhausted=exhausted,
        )
    return sorted(items, key=lambda item: item.id)


def settle_unfinished(ex: StageExecution) -> int:
    """Settle items an earlier execution left mid-write, by target read-back only."""
    with ex.ctx.db.session() as session:
        rows = session.execute(
            select(*_ITEM_COLUMNS).where(
                RunItem.run_id == ex.run_id, RunItem.state.in_(_UNFINISHED)
            )
        ).all()
    if not rows:
        return 0
    by_type: dict[ObjectType, list[ApplyItem]] = defaultdict(list)
    for row in rows:
        item = _to_item(dict(row._mapping))
        by_type[item.object_type].append(item)
    outcomes: list[ItemOutcome] = []
    for object_type, items in by_type.items():
        outcomes.extend(applier_for(object_type).read_back(ex, items))
    record(ex, outcomes, recovered=True)
    return len(outcomes)


def refund_attempts(
    ex: StageExecution, items: Sequence[ApplyItem], *, replan: bool = False
) -> None:
    """Give back the attempt a batch cost when an error stopped it before these items'
    writes were sent: a retryable one (a rate limit, a forge briefly away), or, with
    ``replan``, one whose write never sent them (``WriteStopped``): those go back to
    ``planned`` as if never claimed.

    The per-item cap stops poison items (a write that kills its worker every time);
    a forge that is briefly away is the stage's retry budget's business, and a rate
    limit only a wait.
    """
    if not items:
        return
    where = [
        ITEMS.c.id.in_([item.id for item in items]),
        ITEMS.c.applied_generation == ex.lease.generation,
    ]
    values: dict[str, Any] = {
        "attempt_count": case((ITEMS.c.attempt_count > 0, ITEMS.c.attempt_count - 1), else_=0)
    }
    if replan:
        where.append(ITEMS.c.state == ItemState.APPLYING.value)
        values["state"] = ItemState.PLANNED.value
    with ex.fenced() as session:
        session.execute(update(ITEMS).where(*where).values(**values))


def block_unfinished(ex: StageExecution, message: str) -> int:
    """Items left mid-write whose outcome nobody could prove: ``blocked result_unknown``
    (the Binding waits for recovery, which proves each by read-back)."""
    with ex.fenced() as session:
        return _rowcount(
            session,
            update(ITEMS)
            .where(ITEMS.c.run_id == ex.run_id, ITEMS.c.state.in_(_UNFINISHED))
            .values(
                state=ItemState.BLOCKED.value,
                error_code=ResultUnknown.code,
                error_message=message,
                applied_generation=ex.lease.generation,
            ),
        )


def _rowcount(session: Session, statement: Executable) -> int:
    """Rows an UPDATE matched."""
    return int(cast("CursorResult[Any]", session.execute(statement)).rowcount)


def mark_verifying(ex: StageExecution, items: Sequence[ApplyItem]) -> None:
    """The write returned: its items now wait for read-back (one statement per batch).

    Where each write landed and what read-back must show are recorded with the outcome;
    an execution that dies in between is settled by marker and recomputed hashes.
    """
    ids = [item.id for item in items]
    with ex.fenced() as session:
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            # Straight through the driver: a compiled IN of a whole batch cost more
            # than the database did.
            execute(session, _MARK_VERIFYING + f"({','.join('?' * len(chunk))})", chunk)


#: Ids per ``IN`` list of the hot path's driver statements (a batch is 500 by default).
_IN_CHUNK = 1000
_MARK_VERIFYING = (
    f"UPDATE run_items SET state = '{ItemState.VERIFYING.value}' "
    f"WHERE state = '{ItemState.APPLYING.value}' AND id IN "
)


def item_rows(ex: StageExecution, *, state: ItemState, error_code: str) -> list[ApplyItem]:
    """This Run's items in one state with one error (recovery's working set)."""
    with ex.ctx.db.session() as session:
        rows = session.execute(
            select(*_ITEM_COLUMNS).where(
                RunItem.run_id == ex.run_id,
                RunItem.state == state.value,
                RunItem.error_code == error_code,
            )
        ).all()
    return [_to_item(dict(row._mapping)) for row in rows]


def record_blocked(ex: StageExecution, outcomes: Sequence[ItemOutcome]) -> None:
    """Settle items recovery proved (they were ``blocked``, not mid-write)."""
    record(ex, outcomes, recovered=True, from_states=(ItemState.BLOCKED.value,))


def record(
    ex: StageExecution,
    outcomes: Sequence[ItemOutcome],
    *,
    batch_no: int | None = None,
    recovered: bool = False,
    from_states: Sequence[str] = _UNFINISHED,
) -> None:
    """Settle items and their links in one fenced transaction (also counts as progress)."""
    if not outcomes:
        return
    counts: dict[str, int] = defaultdict(int)
    for outcome in outcomes:
        counts[outcome.state.value] += 1
        if outcome.deferred:
            counts["deferred"] += 1
    with ex.fenced() as session:
        now = driver_datetime(session, utcnow())
        generation = ex.lease.generation
        settled = executemany(
            session,
            "UPDATE run_items SET state = ?, error_code = ?, error_message = ?, "
            "applied_generation = ?, target_identity = ?, representation = ?, action = ?, "
            "expected_target_hash = ?, verify_hash = ?, updated_at = ?, "
            "attempt_count = attempt_count - ? "
            f"WHERE id = ? AND state IN ({', '.join(repr(st) for st in from_states)})",
            [
                (
                    outcome.state.value,
                    outcome.error.code if outcome.error is not None else None,
                    outcome.error.message if outcome.error is not None else None,
                    generation,
                    outcome.target_identity or outcome.item.target_identity,
                    outcome.representation.value if outcome.state is ItemState.COMPLETED else None,
                    (outcome.replan_action or outcome.item.action).value,
                    outcome.replan_expected_hash
                    if outcome.replan_action is not None
                    else outcome.item.expected_target_hash,
                    outcome.item.verify_hash,
                    now,
                    # A wait is no attempt: the claim counted one for it (> 0 by then).
                    1 if outcome.deferred and outcome.item.attempt_count > 0 else 0,
                    outcome.item.id,
                )
                for outcome in outcomes
            ],
        )
        _write_outcome_links(ex, session, outcomes)
        ex.flush_io(session)
        ex.event(
            session,
            "items_recovered" if recovered else "batch_settled",
            f"batch {batch_no}" if batch_no is not None else "read-back of unfinished items",
            batch=batch_no,
            settled=settled,
            **dict(counts),
        )
        if any(outcome.state is not ItemState.PLANNED for outcome in outcomes):
            # Progress: the stage's attempt counter starts over. (Read-back that only
            # re-plans what an earlier attempt left is none: a stage failing the same
            # way each time must still reach its cap.)
            session.execute(update(Run).where(Run.id == ex.run_id).values(stage_attempts=0))
    settled_by_type: dict[tuple[str, str], int] = defaultdict(int)
    for outcome in outcomes:  # counted once committed
        settled_by_type[(outcome.item.object_type.value, outcome.state.value)] += 1
    metrics.record_items(settled_by_type)


def _write_outcome_links(
    ex: StageExecution, session: Session, outcomes: Sequence[ItemOutcome]
) -> None:
    verified: list[VerifiedPair] = []
    dropped: list[tuple[str, str]] = []
    unreliable: list[tuple[str, str]] = []
    for outcome in outcomes:
        item = outcome.item
        key = (item.object_type.value, item.source_identity or "")
        if outcome.state is ItemState.COMPLETED:
            if item.drops_link:
                dropped.append(key)
            elif item.temporary_key:  # the target holds a stand-in until the rename lands
                unreliable.append(key)
            else:
                verified.append(
                    VerifiedPair(
                        object_type=item.object_type.value,
                        source_identity=item.source_identity or "",
                        target_identity=outcome.target_identity or item.target_identity or "",
                        source_revision=item.source_revision,
                        target_revision=outcome.target_revision,
                        verified_hash=item.desired_hash or "",
                        representation=outcome.representation,
                        source_number=outcome.source_number,
                        target_number=outcome.target_number,
                    )
                )
        elif outcome.error is not None and outcome.error.code == VerifyMismatch.code:
            unreliable.append(key)
    binding_id, source_side = ex.binding.id, ex.source_side
    write_links(
        session,
        binding_id=binding_id,
        source_side=source_side,
        run_id=ex.run_id,
        verified=verified,
    )
    drop_links(session, binding_id=binding_id, source_side=source_side, pairs=dropped)
    mark_unreliable(session, binding_id=binding_id, source_side=source_side, pairs=unreliable)
