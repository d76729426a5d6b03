"""Idempotency keys: a retried request gets its first answer again, never a second effect.

The rules (after the IETF's Idempotency-Key draft and Stripe's API):

* A key belongs to one user and one scope (an operation on one record,
  ``binding:12:reconcile``): another user's equal key is another key.
* ``begin`` finds the key or takes it. The first request inserts an ``in_progress``
  row and owns the key; the unique constraint (user, scope, key) decides between
  concurrent first requests, so exactly one owns it. A later request with the key:
  another request body (its hash differs) is refused (``IdempotencyKeyReused``, 422);
  a stored answer is given back as it was (same status, body and headers); a request
  still being answered is refused for now (``IdempotencyKeyInProgress``, 409, retry).
* The owner stores its answer with ``complete``, **in the transaction of its effect**
  when it has one (a queued Run commits with its answer or not at all), so a key never
  names an effect without its answer.
* Only successful answers are stored: a request that fails (``release``) leaves the key
  free, and its retry runs again. A failure is not an effect to replay, and a refusal
  such as "the Binding is busy" should not outlive its cause.
* An owner that died leaves its key ``in_progress``; after ``idempotency_lock``
  seconds a retry takes it over (a new ``owner``; the old one can no longer complete).
* Keys live ``idempotency_ttl`` seconds from their first use; ``purge_expired`` (the
  beat's tick) deletes older ones, and an expired key met by ``begin`` is replaced.

Times are this host's clock: the windows are minutes and hours, far above any skew.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.errors import IdempotencyKeyInProgress, IdempotencyKeyInvalid, IdempotencyKeyReused
from reposync.models import IdempotencyKey, utcnow
from reposync.models.idempotency import COMPLETED, IN_PROGRESS
from reposync.service.context import ServiceContext

MAX_KEY_LENGTH = 255


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer as it is stored and given again."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Claim:
    """The right to answer a request: the key's row and who owns it."""

    id: int
    owner: str


def parse_key(header: str | None, *, required: bool) -> str | None:
    """The key of an ``Idempotency-Key`` header: 1 to 255 visible ASCII characters
    (``None``: no header; an empty one is malformed, not absent).

    The draft writes the key as a structured-field string (``"abc"``); the quotes are
    taken off, so ``"abc"`` and ``abc`` are the same key.
    """
    if header is None:
        if required:
            raise IdempotencyKeyInvalid("this request needs an Idempotency-Key header")
        return None
    key = header.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all("!" <= c <= "~" for c in key):
        raise IdempotencyKeyInvalid(
            f"an Idempotency-Key is 1 to {MAX_KEY_LENGTH} visible ASCII characters"
        )
    return key


def request_hash(request: Mapping[str, Any]) -> str:
    """SHA-256 of a request's normalized content (canonical JSON: key order is no change)."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def begin(
    ctx: ServiceContext,
    *,
    user_id: int,
    scope: str,
    key: str,
    request: str,
    binding_id: int | None = None,
    now: datetime | None = None,
) -> Claim | Answer:
    """Own the key for this request (``Claim``), or the stored ``Answer`` of its first use.

    ``request`` is the request's hash. Raises ``IdempotencyKeyReused`` and
    ``IdempotencyKeyInProgress`` as the module says.
    """
    settings = ctx.settings
    for _ in range(3):  # a concurrent first request may win the insert; look again
        now = now or utcnow()
        with ctx.db.transaction() as session:
            row = session.execute(
                select(IdempotencyKey)
                .where(
                    IdempotencyKey.user_id == user_id,
                    IdempotencyKey.scope == scope,
                    IdempotencyKey.key == key,
                )
                .with_for_update()
            ).scalar_one_or_none()
            if row is not None and row.expires_at <= now:
                session.delete(row)
                session.flush()
                row = None
            if row is None:
                owner = uuid.uuid4().hex
                try:
                    with session.begin_nested():
                        record = IdempotencyKey(
                            user_id=user_id,
                            scope=scope,
                            binding_id=binding_id,
                            key=key,
                            request_hash=request,
                            state=IN_PROGRESS,
                            owner=owner,
                            locked_until=now + timedelta(seconds=settings.idempotency_lock),
                            created_at=now,
                            expires_at=now + timedelta(seconds=settings.idempotency_ttl),
                        )
                        session.add(record)
                        session.flush()
                except IntegrityError:
                    continue
                return Claim(record.id, owner)
            if row.request_hash != request:
                raise IdempotencyKeyReused(
                    f"Idempotency-Key {key!r} was used for another request; its answer "
                    "belongs to that request"
                )
            if row.state == COMPLETED:
                assert row.response_status is not None
                assert row.response_body is not None
                return Answer(row.response_status, row.response_body, row.response_headers or {})
            if row.locked_until is not None and row.locked_until > now:
                raise _in_progress(key)
            # Whoever held it stopped answering: this request answers instead.
            row.owner = uuid.uuid4().hex
            row.locked_until = now + timedelta(seconds=settings.idempotency_lock)
            session.flush()
            return Claim(row.id, row.owner)
    raise _in_progress(key)


def _in_progress(key: str) -> IdempotencyKeyInProgress:
    return IdempotencyKeyInProgress(
        f"a request with Idempotency-Key {key!r} is still being answered"
    )


def complete(session: Session, claim: Claim, answer: Answer) -> None:
    """Store ``answer`` for the claimed key, in the caller's transaction (with its effect).

    Raises ``IdempotencyKeyInProgress`` when the claim was taken over meanwhile: the
    caller's transaction must then roll back, its effect with it.
    """
    stored = session.execute(
        update(IdempotencyKey)
        .where(
            IdempotencyKey.id == claim.id,
            IdempotencyKey.owner == claim.owner,
            IdempotencyKey.state == IN_PROGRESS,
        )
        .values(
            state=COMPLETED,
            locked_until=None,
            response_status=answer.status,
            response_body=answer.body,
            response_headers=dict(answer.headers),
        )
        .returning(IdempotencyKey.id)
    ).scalar_one_or_none()
    if stored is None:
        raise IdempotencyKeyInProgress(
            "this request held its Idempotency-Key longer than REPOSYNC_IDEMPOTENCY_LOCK and "
            "a retry took it over; that retry's answer counts"
        )


def complete_now(ctx: ServiceContext, claim: Claim, answer: Answer) -> None:
    """``complete`` in a transaction of its own (an answer without a durable effect)."""
    with ctx.db.transaction() as session:
        complete(session, claim, answer)


def release(ctx: ServiceContext, claim: Claim) -> None:
    """Free the key of a request that failed (only while this claim still owns it)."""
    with ctx.db.transaction() as session:
        session.execute(
            delete(IdempotencyKey).where(
                IdempotencyKey.id == claim.id,
                IdempotencyKey.owner == claim.owner,
                IdempotencyKey.state == IN_PROGRESS,
            )
        )


def purge_expired(ctx: ServiceContext, now: datetime | None = None) -> int:
    """Delete the keys older than ``idempotency_ttl``; returns how many."""
    with ctx.db.transaction() as session:
        result = session.execute(
            delete(IdempotencyKey).where(IdempotencyKey.expires_at <= (now or utcnow()))
        )
        return int(result.rowcount)  # type: ignore[attr-defined]
