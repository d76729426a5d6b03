"""The write budget, persisted: sliding windows per account, counted under a row lock,
and shared fairly among the account's Bindings.

Fair share: a write is reserved for a claimant (the Binding whose Run writes, set by the
pipeline's runner with ``claiming``). The claimants that asked within the last
``CONTENDING_FOR`` are the account's contenders; while there are several, none may hold
more than its share of a window (the window's limit divided among them, rounded up), so
the first Binding of fifty that reaches its applying stage cannot spend the whole
account: once the window is full, the writes that leave it go to those under their
share first. Alone, a claimant may use the whole window (nobody waits for it). A write
without a claimant (outside a Run) counts in the window and claims no share.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync import metrics
from reposync.models import WriteBudgetAccount, WriteBudgetClaimant, WriteBudgetEvent
from reposync.models.db import Database

#: GitHub's content-creation limits (../shared/notes/github-api.md §2): (seconds, writes).
DEFAULT_LIMITS: tuple[tuple[int, int], ...] = ((60, 80), (3600, 500))
#: How long a claimant that asked stays one of the account's contenders: a Run between
#: two batches, or waiting out its share, is still contending; one that finished stops
#: taking a share of the others' within a minute.
CONTENDING_FOR = timedelta(seconds=60)

_CLAIMANT: ContextVar[str | None] = ContextVar("reposync_budget_claimant", default=None)


@contextmanager
def claiming(claimant: str) -> Iterator[None]:
    """Reserve every write of this context for ``claimant`` (``binding:12``)."""
    token = _CLAIMANT.set(claimant)
    try:
        yield
    finally:
        _CLAIMANT.reset(token)


class DatabaseWriteBudget:
    """``WriteBudget`` for providers, shared by every worker of the deployment."""

    def __init__(self, db: Database, limits: Sequence[tuple[int, int]] = DEFAULT_LIMITS) -> None:
        self._db = db
        self._limits = tuple(limits)
        self._longest = timedelta(seconds=max(seconds for seconds, _ in self._limits))

    def reserve(self, key: str, now: datetime) -> datetime | None:
        """Count one write at ``now`` for the current claimant, or say when it may go: when
        the oldest write leaves a full window, or one of the claimant's own leaves its
        share."""
        claimant = _CLAIMANT.get()
        self._ensure_account(key)
        with self._db.transaction() as session:
            session.execute(  # the per-account mutex: counting and inserting never race
                select(WriteBudgetAccount.account)
                .where(WriteBudgetAccount.account == key)
                .with_for_update()
            ).scalar_one()
            session.execute(
                delete(WriteBudgetEvent).where(
                    WriteBudgetEvent.account == key, WriteBudgetEvent.at <= now - self._longest
                )
            )
            contenders = _contend(session, key, claimant, now)
            retry_at: datetime | None = None
            used_now: dict[int, tuple[int, int]] = {}
            for seconds, limit in self._limits:
                since = now - timedelta(seconds=seconds)
                used = _count(session, key, since)
                used_now[seconds] = (used, limit)
                free_at: datetime | None = None
                if used >= limit:
                    free_at = _leaves(session, key, since, used - limit, seconds)
                elif claimant is not None and contenders > 1:
                    share = -(-limit // contenders)
                    mine = _count(session, key, since, claimant)
                    if mine >= share:
                        free_at = _leaves(session, key, since, mine - share, seconds, claimant)
                if free_at is not None:
                    retry_at = free_at if retry_at is None else max(retry_at, free_at)
            if retry_at is None:
                session.add(WriteBudgetEvent(account=key, at=now, claimant=claimant))
                used_now = {window: (n + 1, cap) for window, (n, cap) in used_now.items()}
        metrics.record_write_budget(key, used_now, granted=retry_at is None)
        return retry_at

    def _ensure_account(self, key: str) -> None:
        with self._db.session() as session:
            if session.get(WriteBudgetAccount, key) is not None:
                return
        try:
            with self._db.transaction() as session:
                session.add(WriteBudgetAccount(account=key))
        except IntegrityError:
            pass  # another worker created it first


def _contend(session: Session, key: str, claimant: str | None, now: datetime) -> int:
    """Record that ``claimant`` asks now (under the account's lock) and count the
    account's contenders; those that stopped asking are forgotten."""
    session.execute(
        delete(WriteBudgetClaimant).where(
            WriteBudgetClaimant.account == key,
            WriteBudgetClaimant.asked_at <= now - CONTENDING_FOR,
        )
    )
    if claimant is not None:
        row = session.get(WriteBudgetClaimant, (key, claimant))
        if row is None:
            session.add(WriteBudgetClaimant(account=key, claimant=claimant, asked_at=now))
        elif row.asked_at < now:
            row.asked_at = now
        session.flush()
    return int(
        session.execute(select(func.count()).where(WriteBudgetClaimant.account == key)).scalar_one()
    )


def _count(session: Session, key: str, since: datetime, claimant: str | None = None) -> int:
    query = select(func.count()).where(WriteBudgetEvent.account == key, WriteBudgetEvent.at > since)
    if claimant is not None:
        query = query.where(WriteBudgetEvent.claimant == claimant)
    return int(session.execute(query).scalar_one())


def _leaves(
    session: Session,
    key: str,
    since: datetime,
    offset: int,
    seconds: int,
    claimant: str | None = None,
) -> datetime:
    """When the write at ``offset`` (oldest first) in the window leaves it: one more may
    go then."""
    query = select(WriteBudgetEvent.at).where(
        WriteBudgetEvent.account == key, WriteBudgetEvent.at > since
    )
    if claimant is not None:
        query = query.where(WriteBudgetEvent.claimant == claimant)
    oldest: datetime = session.execute(
        query.order_by(WriteBudgetEvent.at).offset(offset).limit(1)
    ).scalar_one()
    return oldest + timedelta(seconds=seconds)
