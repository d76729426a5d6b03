"""API users, their tokens and grants: who may see and do what.

Tokens are random, shown once, and stored as SHA-256: a leaked database cannot be
replayed against the API. A token is of a kind (``models.user.TOKEN_KINDS``): an API
token lives its days and stays listed; a web page session (at most
``MAX_SESSIONS_PER_USER`` live per user: a new one revokes the oldest) and a stream token
are removed by the tick once expired (``purge_expired``).

**The throttle.** Refused tokens are counted per client (what the web layer names the
client: its address, ``web/auth.py: client_address``) in ``auth_failures``, in the
database every API process shares: beyond ``auth_failure_limit`` within
``auth_failure_window`` seconds, every attempt from that client, valid or not, is
``TooManyAttempts`` until the window ends (a valid token passing would tell a guesser it
guessed right). A request with a valid token pays nothing for it: whether its client is
throttled rides in the token's own query; a refusal costs one upsert.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, ScalarSelect, case, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from reposync.errors import (
    NotAllowedNow,
    RecordNotFound,
    TooManyAttempts,
    Unauthenticated,
    UsageError,
)
from reposync.models import ApiToken, AuthFailure, RepositoryGrant, User, utcnow
from reposync.service.context import ServiceContext

ROLES = ("admin", "member")
TOKEN_PREFIX = "rs_"
STREAM_TOKEN_PREFIX = "rs_stream_"
#: A stream token opens its stream within this time (the stream then runs its course).
STREAM_TOKEN_LIFETIME = timedelta(minutes=5)
#: How stale ``last_used_at`` may get: a busy token costs one write per period, not per call.
LAST_USED_RESOLUTION = timedelta(minutes=5)
#: Web page sessions one user holds at once; signing in once more revokes the oldest (a
#: browser left signed in somewhere is signed out there, not kept for ever).
MAX_SESSIONS_PER_USER = 10
#: The kinds the tick removes once expired (an API token stays listed as expired).
EPHEMERAL_KINDS = ("session", "stream")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_user(ctx: ServiceContext, login: str, role: str = "member") -> User:
    if role not in ROLES:
        raise UsageError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    try:
        with ctx.db.transaction() as session:
            user = User(login=login, role=role)
            session.add(user)
            session.flush()
    except IntegrityError as exc:
        raise UsageError(f"a user named {login!r} exists already") from exc
    return user


def operator() -> User:
    """The command line's user: whoever can open the database acts with their own rights,
    which are every right (the CLI binds, syncs and manages users without a token). An
    admin that is no row: it holds no token and no grant, and reads see everything."""
    return User(id=0, login="(command line)", role="admin")


def find_user(ctx: ServiceContext, login: str) -> User:
    with ctx.db.session() as session:
        user = session.execute(select(User).where(User.login == login)).scalar_one_or_none()
        if user is None:
            raise RecordNotFound(f"no user named {login!r}")
        session.expunge(user)
        return user


def issue_token(
    ctx: ServiceContext, user_id: int, name: str = "", *, days: int | None = None
) -> str:
    """A new token for a user; the only time it is ever visible.

    It lives ``days`` (default: the ``api_token_days`` setting; 0: until revoked).
    """
    return issue_token_record(ctx, user_id, name, days=days)[1]


def issue_token_record(
    ctx: ServiceContext, user_id: int, name: str = "", *, days: int | None = None
) -> tuple[ApiToken, str]:
    """``issue_token``, also answering the stored record (its id revokes it)."""
    days = ctx.settings.api_token_days if days is None else days
    if days < 0:
        raise UsageError("a token's lifetime is a number of days, 0 for no expiry")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = utcnow() + timedelta(days=days) if days else None
    with ctx.db.transaction() as session:
        if session.get(User, user_id) is None:
            raise RecordNotFound(f"user {user_id} does not exist")
        record = ApiToken(
            user_id=user_id, name=name, token_hash=hash_token(token), expires_at=expires_at
        )
        session.add(record)
        session.flush()
        session.expunge(record)
    return record, token


def issue_session_token(ctx: ServiceContext, user_id: int, name: str, *, days: int) -> str:
    """A web page session token for ``user_id``, living ``days``; the user's live sessions
    beyond the newest ``MAX_SESSIONS_PER_USER`` are revoked in the same transaction (the
    user's row is locked, so two sign-ins at once cannot both keep one too many)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    with ctx.db.transaction() as session:
        if session.get(User, user_id, with_for_update=True) is None:
            raise RecordNotFound(f"user {user_id} does not exist")
        session.add(
            ApiToken(
                user_id=user_id,
                name=name,
                token_hash=hash_token(token),
                expires_at=now + timedelta(days=days),
                kind="session",
            )
        )
        session.flush()
        beyond = list(
            session.execute(
                select(ApiToken.id)
                .where(
                    ApiToken.user_id == user_id,
                    ApiToken.kind == "session",
                    ApiToken.revoked_at.is_(None),
                    ApiToken.expires_at > now,
                )
                .order_by(ApiToken.id.desc())
                .offset(MAX_SESSIONS_PER_USER)
            ).scalars()
        )
        if beyond:
            session.execute(update(ApiToken).where(ApiToken.id.in_(beyond)).values(revoked_at=now))
    return token


def issue_stream_token(ctx: ServiceContext, user: User, run_id: int) -> tuple[str, datetime]:
    """A token that opens one Run's event stream for ``STREAM_TOKEN_LIFETIME``: for a
    browser's EventSource, which cannot send an Authorization header (the token travels
    in the URL, so it is short-lived and good for nothing else). The caller has
    authorized ``user`` on the Run (``authorization.authorize_run``)."""
    token = STREAM_TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = utcnow() + STREAM_TOKEN_LIFETIME
    with ctx.db.transaction() as session:
        session.add(
            ApiToken(
                user_id=user.id,
                name=f"event stream of run {run_id}",
                token_hash=hash_token(token),
                expires_at=expires_at,
                run_id=run_id,
                kind="stream",
            )
        )
    return token, expires_at


def authenticate(
    ctx: ServiceContext,
    token: str | None,
    *,
    run_id: int | None = None,
    client: str | None = None,
) -> User:
    """The token's user; a revoked or expired token is refused at once.

    ``run_id``: the request opens that Run's event stream, which a stream token of that
    Run may do too; everything else takes an API token. ``client``: who sent it, for the
    throttle (module): ``TooManyAttempts`` once that client's refusals are over the limit.
    """
    user, scope = _authenticate(ctx, token, client)
    if scope is not None and scope != run_id:
        raise Unauthenticated("a stream token opens only the event stream of its Run")
    return user


def _authenticate(
    ctx: ServiceContext, token: str | None, client: str | None
) -> tuple[User, int | None]:
    if not token:
        raise Unauthenticated("no API token: send Authorization: Bearer <token>")
    now = utcnow()
    blocked = None if client is None else _blocked_until(ctx, client, now)
    until: datetime | None = None
    with ctx.db.session() as session:
        row = session.execute(
            select(
                User,
                ApiToken.id,
                ApiToken.last_used_at,
                ApiToken.run_id,
                *(() if blocked is None else (blocked,)),
            )
            .join(ApiToken, ApiToken.user_id == User.id)
            .where(
                ApiToken.token_hash == hash_token(token),
                ApiToken.revoked_at.is_(None),
                or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
            )
        ).one_or_none()
        if row is not None:
            user, token_id, last_used, scope, *throttled = row
            until = throttled[0] if throttled else None
            session.expunge(user)
        elif blocked is not None:
            until = session.execute(select(blocked)).scalar_one_or_none()
    if until is not None:  # valid or not: a throttled client learns nothing (module)
        raise _too_many(until, now)
    if row is None:
        if client is not None:
            count_refusal(ctx, client, now)
        raise Unauthenticated("the API token is not valid (unknown, revoked or expired)")
    if last_used is None or now - last_used > LAST_USED_RESOLUTION:
        with ctx.db.transaction() as session:
            session.execute(
                update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=now)
            )
    return user, scope


def _blocked_until(ctx: ServiceContext, client: str, now: datetime) -> ScalarSelect[datetime]:
    """When ``client``'s window ends, if it is over the limit (else NULL): a column the
    token's query carries."""
    return (
        select(AuthFailure.window_ends_at)
        .where(
            AuthFailure.client == client,
            AuthFailure.failures >= ctx.settings.auth_failure_limit,
            AuthFailure.window_ends_at > now,
        )
        .scalar_subquery()
    )


def _too_many(until: datetime, now: datetime) -> TooManyAttempts:
    seconds = max(1, math.ceil((until - now).total_seconds()))
    return TooManyAttempts(
        f"too many refused API tokens from this client; try again in {seconds} s",
        retry_after=seconds,
    )


def refuse_if_throttled(ctx: ServiceContext, client: str, now: datetime | None = None) -> None:
    """``TooManyAttempts`` when ``client`` is over the limit (for a secret checked without
    ``authenticate``: ``/metrics``' token)."""
    now = now or utcnow()
    with ctx.db.session() as session:
        until = session.execute(select(_blocked_until(ctx, client, now))).scalar_one_or_none()
    if until is not None:
        raise _too_many(until, now)


def count_refusal(ctx: ServiceContext, client: str, now: datetime | None = None) -> None:
    """Count one refused token of ``client`` (one upsert, atomic on both databases: a
    window that ended starts over); ``TooManyAttempts`` once it is over the limit."""
    now = now or utcnow()
    settings = ctx.settings
    insert = sqlite.insert if ctx.db.is_sqlite else postgresql.insert
    new = insert(AuthFailure).values(
        client=client,
        failures=1,
        window_ends_at=now + timedelta(seconds=settings.auth_failure_window),
    )
    ended = AuthFailure.window_ends_at <= now
    counted = new.on_conflict_do_update(
        index_elements=[AuthFailure.client],
        set_={
            "failures": case((ended, 1), else_=AuthFailure.failures + 1),
            "window_ends_at": case(
                (ended, new.excluded.window_ends_at), else_=AuthFailure.window_ends_at
            ),
        },
    ).returning(AuthFailure.failures, AuthFailure.window_ends_at)
    with ctx.db.transaction() as session:
        failures, until = session.execute(counted).one()
    if failures > settings.auth_failure_limit:
        raise _too_many(until, now)


def purge_expired(ctx: ServiceContext, now: datetime | None = None) -> tuple[int, int]:
    """Remove web page sessions and stream tokens past their expiry (revoked or not), and
    throttle windows that ended: (tokens, clients) removed. The tick calls it."""
    now = now or utcnow()
    with ctx.db.transaction() as session:
        tokens = session.execute(
            delete(ApiToken).where(ApiToken.kind.in_(EPHEMERAL_KINDS), ApiToken.expires_at <= now)
        )
        clients = session.execute(delete(AuthFailure).where(AuthFailure.window_ends_at <= now))
        return (
            cast(CursorResult[Any], tokens).rowcount,
            cast(CursorResult[Any], clients).rowcount,
        )


def token_state(token: ApiToken, now: datetime | None = None) -> str:
    """``active``, ``expired`` or ``revoked``: what a listing says of a token."""
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= (now or utcnow()):
        return "expired"
    return "active"


def list_tokens(ctx: ServiceContext, user_id: int) -> list[ApiToken]:
    """A user's tokens (never their secrets), oldest first."""
    with ctx.db.session() as session:
        if session.get(User, user_id) is None:
            raise RecordNotFound(f"user {user_id} does not exist")
        tokens = list(
            session.execute(
                select(ApiToken).where(ApiToken.user_id == user_id).order_by(ApiToken.id)
            ).scalars()
        )
        session.expunge_all()
    return tokens


def revoke_token(ctx: ServiceContext, token_id: int) -> ApiToken:
    """Revoke a token for good (idempotent: a revoked one keeps its first revocation)."""
    with ctx.db.transaction() as session:
        token = session.get(ApiToken, token_id)
        if token is None:
            raise RecordNotFound(f"token {token_id} does not exist")
        if token.revoked_at is None:
            token.revoked_at = utcnow()
        session.flush()
        session.expunge(token)
    return token


def revoke_token_secret(ctx: ServiceContext, token: str) -> None:
    """Revoke a token given by its secret (the web page's sign-out: the session cookie
    holds the secret, never the record's id). Unknown or revoked already: nothing."""
    with ctx.db.transaction() as session:
        session.execute(
            update(ApiToken)
            .where(ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )


def list_users(ctx: ServiceContext) -> list[User]:
    with ctx.db.session() as session:
        users = list(session.execute(select(User).order_by(User.id)).scalars())
        session.expunge_all()
    return users


def delete_user(ctx: ServiceContext, user_id: int) -> None:
    """Delete a user with its tokens and grants; the last admin stays."""
    with ctx.db.transaction() as session:
        user = session.get(User, user_id, with_for_update=True)
        if user is None:
            raise RecordNotFound(f"user {user_id} does not exist")
        if user.role == "admin":
            admins = session.execute(
                select(func.count()).select_from(User).where(User.role == "admin")
            ).scalar_one()
            if admins <= 1:
                raise NotAllowedNow(f"{user.login} is the last admin; create another first")
        session.execute(delete(ApiToken).where(ApiToken.user_id == user_id))
        session.execute(delete(RepositoryGrant).where(RepositoryGrant.user_id == user_id))
        session.delete(user)


def revoke_grant(ctx: ServiceContext, user_id: int, provider: str, repository_id: str) -> bool:
    """Remove one grant; whether it existed."""
    with ctx.db.transaction() as session:
        removed = cast(
            CursorResult[Any],
            session.execute(
                delete(RepositoryGrant).where(
                    RepositoryGrant.user_id == user_id,
                    RepositoryGrant.provider == provider,
                    RepositoryGrant.repository_id == repository_id,
                )
            ),
        ).rowcount
    return bool(removed)


def grant(ctx: ServiceContext, user_id: int, provider: str, repository_id: str) -> None:
    with ctx.db.transaction() as session:
        if session.get(User, user_id) is None:
            raise RecordNotFound(f"user {user_id} does not exist")
        exists = session.execute(
            select(RepositoryGrant.id).where(
                RepositoryGrant.user_id == user_id,
                RepositoryGrant.provider == provider,
                RepositoryGrant.repository_id == repository_id,
            )
        ).first()
        if exists is None:
            session.add(
                RepositoryGrant(user_id=user_id, provider=provider, repository_id=repository_id)
            )
