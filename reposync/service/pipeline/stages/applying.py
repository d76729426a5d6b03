"""Stage ``applying``: one physical batch per execution, intent before write.

Order of one execution:

1. Settle what an earlier execution left ``applying``/``verifying`` (it may have died
   mid-write): read back, mark completed what arrived, re-plan what did not.
2. Check for cancellation.
3. Claim the lowest unfinished batch: ``planned -> applying`` in one fenced, guarded
   UPDATE that also counts the attempt (items over the cap fail instead).
4. Write (the applier re-reads the source first and supersedes what moved), mark the
   batch ``verifying``, read back, and settle each item with its link in one fenced
   transaction.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from reposync.errors import RateLimited, ReposyncError
from reposync.lifecycle import Stage
from reposync.models import Run, RunItem, utcnow
from reposync.models.db import driver_datetime, executemany, fetch
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.applier_contract import ApplyItem, ItemOutcome
from reposync.service.pipeline.stages.appliers import applier_for
from reposync.service.pipeline.stages.links import (
    VerifiedPair,
    drop_links,
    mark_unreliable,
    write_links,
)
from reposync.sync.vocabulary import Action, ItemState, ObjectType, Representation

_UNFINISHED = (ItemState.APPLYING.value, ItemState.VERIFYING.value)

#: The run_items table for Core statements (no ORM bookkeeping in the hot path).
ITEMS = RunItem.__table__

_ITEM_COLUMNS = (
    RunItem.id,
    RunItem.object_type,
    RunItem.object_key,
    RunItem.action,
    RunItem.reason,
    RunItem.source_identity,
    RunItem.target_identity,
    RunItem.source_revision,
    RunItem.desired_hash,
    RunItem.expected_target_hash,
    RunItem.intent,
    RunItem.attempt_count,
    RunItem.verify_hash,
)


def _json(value: Any) -> dict[str, Any]:
    """A JSON column as the driver returns it (text on SQLite, decoded on PostgreSQL)."""
    if value is None:
        return {}
    return dict(json.loads(value)) if isinstance(value, str | bytes) else dict(value)


_TYPES = {t.value: t for t in ObjectType}
_ACTIONS = {a.value: a for a in Action}


def _to_item(row: Sequence[Any]) -> ApplyItem:
    return ApplyItem(
        id=row[0],
        object_type=_TYPES[row[1]],
        object_key=row[2],
        action=_ACTIONS[row[3]],
        reason=row[4],
        source_identity=row[5],
        target_identity=row[6],
        source_revision=row[7],
        desired_hash=row[8],
        expected_target_hash=row[9],
        intent=_json(row[10]),
        attempt_count=row[11],
        verify_hash=row[12],
    )


def apply_next_batch(ex: StageExecution) -> Stage:
    settle_unfinished(ex)
    if ex.cancel_requested():
        return ex.advance_now(Stage.FINALIZING, "cancel requested")
    batch_no = next_batch(ex)
    if batch_no is None:
        return ex.advance_now(Stage.VERIFYING, "every batch settled")
    items = claim_batch(ex, batch_no)
    if items:
        try:
            outcomes, retry_at = apply_items(ex, items)
        except ReposyncError as error:
            if error.retryable:  # the forge's trouble, not the items': the retry is free
                refund_attempts(ex, items)
            raise
        record(ex, outcomes, batch_no=batch_no)
        if retry_at is not None:  # the rest of the batch waits for the forge's limit
            raise RateLimited("the target's rate limit stopped the batch", retry_at=retry_at)
    if next_batch(ex) is None:
        return ex.advance_now(Stage.VERIFYING, "every batch settled")
    return Stage.APPLYING


def apply_items(
    ex: StageExecution, items: Sequence[ApplyItem]
) -> tuple[list[ItemOutcome], datetime | None]:
    """Prepare, write, mark verifying, read back: one batch's outcomes.

    Also returns when a rate limit lets the writes it stopped be tried again (those
    items go back to ``planned``; nothing of them was sent).
    """
    applier = applier_for(items[0].object_type)
    to_write, outcomes = applier.prepare(ex, items)
    if not to_write:
        return outcomes, None
    ex.lease.check()  # the last moment a stalled execution can still be stopped
    report = applier.write(ex, to_write)
    sent = [item for item in to_write if item.id not in report.deferred]
    outcomes.extend(
        ItemOutcome(item, ItemState.PLANNED) for item in to_write if item.id in report.deferred
    )
    if not sent:
        return outcomes, max(report.deferred.values(), default=None)
    mark_verifying(ex, sent)
    written = [
        replace(
            item,
            target_identity=report.identities.get(item.id, item.target_identity),
            verify_hash=report.verify_hashes.get(item.id, item.verify_hash),
        )
        for item in sent
    ]
    for outcome in applier.read_back(ex, written):
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
                code, message = report.refused[item.id]
                outcome = replace(
                    outcome, state=ItemState.FAILED, error_code=code, error_message=message
                )
            elif item.id in report.unknown and outcome.proven_absent:
                pass  # sent, and proven never to have happened: planned, tried again
            elif item.id in report.unknown:
                # Sent, not found: never re-sent blindly. Recovery proves the outcome.
                outcome = replace(
                    outcome,
                    state=ItemState.BLOCKED,
                    error_code="result_unknown",
                    error_message=report.unknown[item.id],
                )
            else:
                outcome = replace(
                    outcome,
                    state=ItemState.FAILED,
                    error_code="verify_mismatch",
                    error_message="the target does not read back as written",
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
    "UPDATE run_items SET state = 'applying', attempt_count = attempt_count + 1, "
    "applied_generation = ?, updated_at = ? "
    "WHERE run_id = ? AND batch_no = ? AND state = 'planned' "
    "RETURNING id, object_type, object_key, action, reason, source_identity, "
    "target_identity, source_revision, desired_hash, expected_target_hash, intent, "
    "attempt_count, verify_hash"
)


def claim_batch(ex: StageExecution, batch_no: int) -> list[ApplyItem]:
    """``planned -> applying`` for one batch, persisted before any external write."""
    max_attempts = ex.ctx.settings.max_item_attempts
    with ex.fenced() as session:
        exhausted = session.execute(
            update(ITEMS)
            .where(
                ITEMS.c.run_id == ex.run_id,
                ITEMS.c.batch_no == batch_no,
                ITEMS.c.state == ItemState.PLANNED.value,
                ITEMS.c.attempt_count >= max_attempts,
            )
            .values(
                state=ItemState.FAILED.value,
                error_code="attempts_exhausted",
                error_message=f"gave up after {max_attempts} attempts",
                applied_generation=ex.lease.generation,
            )
        ).rowcount
        now = driver_datetime(session, utcnow())
        rows = list(fetch(session, _CLAIM, (ex.lease.generation, now, ex.run_id, batch_no)))
        ex.event(
            session,
            "batch_claimed",
            f"batch {batch_no}",
            batch=batch_no,
            applying=len(rows),
            attempts_exhausted=exhausted,
        )
    return sorted((_to_item(row) for row in rows), key=lambda item: item.id)


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
        item = _to_item(row)
        by_type[item.object_type].append(item)
    outcomes: list[ItemOutcome] = []
    for object_type, items in by_type.items():
        outcomes.extend(applier_for(object_type).read_back(ex, items))
    record(ex, outcomes, recovered=True)
    return len(outcomes)


def refund_attempts(ex: StageExecution, items: Sequence[ApplyItem]) -> None:
    """Give back the attempt a batch cost when a retryable error stopped it.

    The per-item cap stops poison items (a write that kills its worker every time);
    a forge that is briefly away is the stage's retry budget's business.
    """
    with ex.fenced() as session:
        session.execute(
            update(ITEMS)
            .where(
                ITEMS.c.id.in_([item.id for item in items]),
                ITEMS.c.applied_generation == ex.lease.generation,
                ITEMS.c.attempt_count > 0,
            )
            .values(attempt_count=ITEMS.c.attempt_count - 1)
        )


def block_unfinished(ex: StageExecution, message: str) -> int:
    """Items left mid-write whose outcome nobody could prove: ``blocked result_unknown``
    (the Binding waits for recovery, which proves each by read-back)."""
    with ex.fenced() as session:
        return int(
            session.execute(
                update(ITEMS)
                .where(ITEMS.c.run_id == ex.run_id, ITEMS.c.state.in_(_UNFINISHED))
                .values(
                    state=ItemState.BLOCKED.value,
                    error_code="result_unknown",
                    error_message=message,
                    applied_generation=ex.lease.generation,
                )
            ).rowcount
        )


def mark_verifying(ex: StageExecution, items: Sequence[ApplyItem]) -> None:
    """The write returned: its items now wait for read-back (one statement per batch).

    Where each write landed and what read-back must show are recorded with the outcome;
    an execution that dies in between is settled by marker and recomputed hashes.
    """
    with ex.fenced() as session:
        session.execute(
            update(ITEMS)
            .where(
                ITEMS.c.id.in_([item.id for item in items]),
                ITEMS.c.state == ItemState.APPLYING.value,
            )
            .values(state=ItemState.VERIFYING.value)
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
    return [_to_item(row) for row in rows]


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
    with ex.fenced() as session:
        now = driver_datetime(session, utcnow())
        generation = ex.lease.generation
        settled = executemany(
            session,
            "UPDATE run_items SET state = ?, error_code = ?, error_message = ?, "
            "applied_generation = ?, target_identity = ?, representation = ?, action = ?, "
            "expected_target_hash = ?, verify_hash = ?, updated_at = ? "
            f"WHERE id = ? AND state IN ({', '.join(repr(st) for st in from_states)})",
            [
                (
                    outcome.state.value,
                    outcome.error_code,
                    outcome.error_message,
                    generation,
                    outcome.target_identity or outcome.item.target_identity,
                    outcome.representation.value if outcome.state is ItemState.COMPLETED else None,
                    (outcome.replan_action or outcome.item.action).value,
                    outcome.replan_expected_hash
                    if outcome.replan_action is not None
                    else outcome.item.expected_target_hash,
                    outcome.item.verify_hash,
                    now,
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
        elif outcome.error_code == "verify_mismatch":
            unreliable.append(key)
    common = {"binding_id": ex.binding.id, "source_side": ex.source_side}
    write_links(session, run_id=ex.run_id, verified=verified, **common)
    drop_links(session, pairs=dropped, **common)
    mark_unreliable(session, pairs=unreliable, **common)
