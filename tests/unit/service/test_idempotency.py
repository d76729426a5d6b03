"""The rules of idempotency keys (service/idempotency.py), on the embedded database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.exc import IntegrityError

from reposync.errors import IdempotencyKeyInProgress, IdempotencyKeyInvalid, IdempotencyKeyReused
from reposync.models import IdempotencyKey, utcnow
from reposync.service import idempotency
from reposync.service.accounts.users import create_user
from reposync.service.context import ServiceContext
from reposync.service.idempotency import Answer, Claim, begin, parse_key, request_hash

ANSWER = Answer(202, {"run": {"id": 7}}, {"Location": "/runs/7"})


@pytest.fixture
def users(ctx: ServiceContext) -> tuple[int, int]:
    return create_user(ctx, "ada", "admin").id, create_user(ctx, "mel").id


def claim(ctx: ServiceContext, user: int, key: str = "k", request: str = "h", **kw) -> Claim:
    found = begin(ctx, user_id=user, scope="binding:1:reconcile", key=key, request=request, **kw)
    assert isinstance(found, Claim), found
    return found


def again(ctx: ServiceContext, user: int, key: str = "k", request: str = "h", **kw):
    return begin(ctx, user_id=user, scope="binding:1:reconcile", key=key, request=request, **kw)


@pytest.mark.parametrize(
    ("header", "key"),
    [("abc", "abc"), ('"abc"', "abc"), ("  a-b_c.1  ", "a-b_c.1"), ("x" * 255, "x" * 255)],
)
def test_a_key_is_visible_ascii_quotes_taken_off(header, key):
    assert parse_key(header, required=True) == key


@pytest.mark.parametrize("header", ["", " ", '""', "a b", "é", "x" * 256, "tab\there"])
def test_a_malformed_key_is_refused(header):
    with pytest.raises(IdempotencyKeyInvalid):
        parse_key(header, required=False)


def test_a_missing_key_is_refused_only_where_required():
    assert parse_key(None, required=False) is None
    with pytest.raises(IdempotencyKeyInvalid):
        parse_key(None, required=True)


def test_the_request_hash_ignores_key_order_not_values():
    assert request_hash({"a": 1, "b": "x"}) == request_hash({"b": "x", "a": 1})
    assert request_hash({"a": 1}) != request_hash({"a": 2})
    assert request_hash({"a": 1}) != request_hash({"a": "1"})


def test_the_first_request_owns_the_key_and_later_ones_get_its_answer(ctx, users):
    owner = claim(ctx, users[0])
    with pytest.raises(IdempotencyKeyInProgress):
        again(ctx, users[0])  # still being answered
    idempotency.complete_now(ctx, owner, ANSWER)
    assert again(ctx, users[0]) == ANSWER
    assert again(ctx, users[0]) == ANSWER


def test_another_request_with_the_key_is_refused_whatever_its_state(ctx, users):
    owner = claim(ctx, users[0])
    with pytest.raises(IdempotencyKeyReused):
        again(ctx, users[0], request="other")
    idempotency.complete_now(ctx, owner, ANSWER)
    with pytest.raises(IdempotencyKeyReused):
        again(ctx, users[0], request="other")


def test_keys_are_per_user_and_per_scope(ctx, users):
    idempotency.complete_now(ctx, claim(ctx, users[0]), ANSWER)
    assert isinstance(again(ctx, users[1]), Claim)  # the member's "k" is its own
    other = begin(ctx, user_id=users[0], scope="binding:2:reconcile", key="k", request="h")
    assert isinstance(other, Claim)


def test_a_released_key_is_free_again(ctx, users):
    """A failed request stores nothing: its retry runs again."""
    idempotency.release(ctx, claim(ctx, users[0]))
    retry = claim(ctx, users[0], request="anything")  # no trace of the first body either
    idempotency.complete_now(ctx, retry, ANSWER)
    assert again(ctx, users[0], request="anything") == ANSWER


def test_a_key_held_too_long_is_taken_over_and_its_first_owner_cannot_complete(ctx, users):
    now = utcnow()
    first = claim(ctx, users[0], now=now)
    late = now + timedelta(seconds=ctx.settings.idempotency_lock + 1)
    second = claim(ctx, users[0], now=late)
    assert second.id == first.id
    assert second.owner != first.owner
    with pytest.raises(IdempotencyKeyInProgress):
        idempotency.complete_now(ctx, first, Answer(200, {"stale": True}))
    idempotency.release(ctx, first)  # the old owner's cleanup leaves the new claim alone
    idempotency.complete_now(ctx, second, ANSWER)
    assert again(ctx, users[0], now=late) == ANSWER


def test_completion_rolls_back_with_the_effect(ctx, users):
    """``complete`` joins the caller's transaction: if the effect fails, no answer stays."""
    owner = claim(ctx, users[0])

    def effect_that_fails() -> None:
        with ctx.db.transaction() as session:
            idempotency.complete(session, owner, ANSWER)
            raise RuntimeError("the effect failed")

    with pytest.raises(RuntimeError):
        effect_that_fails()
    with pytest.raises(IdempotencyKeyInProgress):
        again(ctx, users[0])  # still the first request's, unanswered


def test_keys_expire_after_their_ttl_and_are_purged(ctx, users):
    now = utcnow()
    ttl = timedelta(seconds=ctx.settings.idempotency_ttl)
    idempotency.complete_now(ctx, claim(ctx, users[0], now=now), ANSWER)
    idempotency.complete_now(ctx, claim(ctx, users[1], now=now + ttl / 2), ANSWER)
    assert idempotency.purge_expired(ctx, now + ttl - timedelta(seconds=1)) == 0
    assert idempotency.purge_expired(ctx, now + ttl) == 1
    with ctx.db.session() as session:
        assert [k.user_id for k in session.query(IdempotencyKey)] == [users[1]]
    # An expired key met before the purge is a new key: a new request owns it.
    later = now + ttl * 2
    assert isinstance(again(ctx, users[1], request="new", now=later), Claim)


def test_the_database_refuses_a_second_row_for_one_key(ctx, users):
    claim(ctx, users[0])
    with pytest.raises(IntegrityError), ctx.db.transaction() as session:
        session.add(
            IdempotencyKey(
                user_id=users[0],
                scope="binding:1:reconcile",
                key="k",
                request_hash="h",
                owner="x",
                expires_at=utcnow(),
            )
        )
