"""API users, their tokens and grants: who may see and do what.

Tokens are random, shown once, and stored as SHA-256: a leaked database cannot be
replayed against the API.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import ColumnElement

from reposync.errors import Forbidden, RecordNotFound, Unauthenticated, UsageError
from reposync.models import ApiToken, Binding, RepositoryGrant, User
from reposync.service.context import ServiceContext

ROLES = ("admin", "member")
TOKEN_PREFIX = "rs_"


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


def find_user(ctx: ServiceContext, login: str) -> User:
    with ctx.db.session() as session:
        user = session.execute(select(User).where(User.login == login)).scalar_one_or_none()
        if user is None:
            raise RecordNotFound(f"no user named {login!r}")
        session.expunge(user)
        return user


def issue_token(ctx: ServiceContext, user_id: int, name: str = "") -> str:
    """A new token for a user; the only time it is ever visible."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with ctx.db.transaction() as session:
        if session.get(User, user_id) is None:
            raise RecordNotFound(f"user {user_id} does not exist")
        session.add(ApiToken(user_id=user_id, name=name, token_hash=hash_token(token)))
    return token


def authenticate(ctx: ServiceContext, token: str | None) -> User:
    if not token:
        raise Unauthenticated("no API token: send Authorization: Bearer <token>")
    with ctx.db.session() as session:
        user = session.execute(
            select(User)
            .join(ApiToken, ApiToken.user_id == User.id)
            .where(ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None))
        ).scalar_one_or_none()
        if user is None:
            raise Unauthenticated("the API token is not valid")
        session.expunge(user)
        return user


def grant(ctx: ServiceContext, user_id: int, provider: str, repository_id: str) -> None:
    with ctx.db.transaction() as session:
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


def require_admin(user: User) -> None:
    if user.role != "admin":
        raise Forbidden("this needs the admin role")


def visible(user: User) -> ColumnElement[bool]:
    """SQL condition on ``Binding``: the Bindings this user may see."""
    if user.role == "admin":
        return Binding.id.is_not(None)
    granted = select(RepositoryGrant.provider, RepositoryGrant.repository_id).where(
        RepositoryGrant.user_id == user.id
    )
    pairs = granted.subquery()
    return or_(
        select(pairs)
        .where(
            pairs.c.provider == Binding.a_provider, pairs.c.repository_id == Binding.a_repository_id
        )
        .exists(),
        select(pairs)
        .where(
            pairs.c.provider == Binding.b_provider, pairs.c.repository_id == Binding.b_repository_id
        )
        .exists(),
    )
