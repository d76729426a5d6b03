"""Users of the API, their tokens (stored hashed) and the repositories they may see."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, utcnow


class User(Base):
    __tablename__ = "users"
    __table_args__ = (CheckConstraint("role IN ('admin', 'member')", name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    login: Mapped[str] = mapped_column(String(255), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="member")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiToken(Base):
    """Only the SHA-256 of a token is kept; the token itself is shown once."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]
    #: ``None``: never expires (only the CLI issues such tokens, on request).
    expires_at: Mapped[datetime | None]
    #: Refreshed at most every few minutes, so a token in use costs no write per request.
    last_used_at: Mapped[datetime | None]
    #: A stream token: it opens this Run's event stream and nothing else.
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))


class RepositoryGrant(Base):
    """A member sees the Bindings one of whose sides is a repository granted to it."""

    __tablename__ = "repository_grants"
    __table_args__ = (
        UniqueConstraint(
            "user_id", "provider", "repository_id", name="uq_repository_grants_user_repository"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(32))
    repository_id: Mapped[str] = mapped_column(String(255))
