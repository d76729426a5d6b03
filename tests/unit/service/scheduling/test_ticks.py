"""The tick (beat's, or the in-process executor's) purges expired idempotency keys,
sessions and throttle windows, whatever happened before it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from reposync.models import ApiToken, AuthFailure, IdempotencyKey, utcnow
from reposync.service import idempotency
from reposync.service.accounts.users import create_user, issue_session_token
from reposync.service.idempotency import Answer, Claim
from reposync.service.scheduling import ticks


def test_the_tick_purges_expired_keys_even_when_scheduling_fails(ctx, monkeypatch):
    user = create_user(ctx, "ada", "admin").id
    old = utcnow() - timedelta(seconds=ctx.settings.idempotency_ttl + 5)
    for key, now in (("old", old), ("fresh", utcnow())):
        found = idempotency.begin(ctx, user_id=user, scope="s", key=key, request="h", now=now)
        assert isinstance(found, Claim)
        idempotency.complete_now(ctx, found, Answer(200, {}))

    def broken(_ctx) -> None:
        raise RuntimeError("a schedule failed")

    redispatched: list[object] = []
    monkeypatch.setattr(ticks.schedules, "tick", broken)
    monkeypatch.setattr(ticks.recovery, "redispatch_stalled", redispatched.append)
    with pytest.raises(RuntimeError, match="a schedule failed"):
        ticks.tick(ctx)
    assert redispatched == [ctx]
    with ctx.db.session() as session:
        keys = session.execute(select(IdempotencyKey.key)).scalars().all()
    assert keys == ["fresh"]


def test_the_tick_purges_expired_sessions_and_throttle_windows(ctx, monkeypatch):
    """Issue 23 #7: the same tick removes expired web page sessions and ended throttle
    windows, after the idempotency keys, whatever happened before."""
    user = create_user(ctx, "ada", "admin").id
    issue_session_token(ctx, user, "web page session", days=1)
    with ctx.db.transaction() as session:
        session.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.add(AuthFailure(client="192.0.2.1", failures=3, window_ends_at=utcnow()))

    def broken(_ctx) -> None:
        raise RuntimeError("a schedule failed")

    monkeypatch.setattr(ticks.schedules, "tick", broken)
    monkeypatch.setattr(ticks.recovery, "redispatch_stalled", lambda _ctx: None)
    with pytest.raises(RuntimeError, match="a schedule failed"):
        ticks.tick(ctx)
    with ctx.db.session() as session:
        assert session.execute(select(ApiToken)).first() is None
        assert session.execute(select(AuthFailure)).first() is None


def test_the_tick_reaches_owner_bindings_even_when_scheduling_fails(ctx, monkeypatch):
    """Issue 24: owner bindings' part of the tick (sync switches, due passes) runs after a
    failed schedule part too, and the parts after it run whatever it did."""
    reached: list[str] = []

    def broken(_ctx) -> None:
        raise RuntimeError("a schedule failed")

    def owners_tick(_ctx) -> list[int]:
        reached.append("owners")
        raise RuntimeError("an owner binding failed")

    monkeypatch.setattr(ticks.schedules, "tick", broken)
    monkeypatch.setattr(ticks.owners, "tick", owners_tick)
    monkeypatch.setattr(
        ticks.recovery, "redispatch_stalled", lambda _ctx: reached.append("stalled")
    )
    with pytest.raises(RuntimeError, match="a schedule failed"):
        ticks.tick(ctx)
    assert reached == ["owners", "stalled"]
