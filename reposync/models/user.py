"""Users of the API, their tokens (stored hashed), the repositories they may see, and the
refused tokens per client that throttle guessing."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, utcnow


class User(Base):
    __tablename__ = "users"
    __table_args__ = (CheckConstraint("role IN ('admin', 'member')", name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    login: Mapped[str] = mapped_column(String(255), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="member")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


#: What a token is for: ``api`` (issued by an admin or the CLI, listed, lives its days),
#: ``session`` (the web page's sign-in; a user holds a bounded number) and ``stream`` (one
#: Run's event stream for minutes). The last two are removed once expired.
TOKEN_KINDS = ("api", "session", "stream")


class ApiToken(Base):
    """Only the SHA-256 of a token is kept; the token itself is shown once."""

    __tablename__ = "api_tokens"
    __table_args__ = (
        CheckConstraint("kind IN ('api', 'session', 'stream')", name="kind"),
        # The tick's purge of expired sessions and stream tokens.
        Index("ix_api_tokens_kind_expires_at", "kind", "expires_at"),
    )

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
    #: One of ``TOKEN_KINDS``.
    kind: Mapped[str] = mapped_column(String(16), default="api", server_default="api")


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


class AuthFailure(Base):
    """Refused API tokens from one client (an address, or an IPv6 /64) in the current
    window: what throttles guessing across every API process (``service.users``).

    One row per client, counted by a single upsert; a row whose window ended counts
    nothing and is removed by the tick.
    """

    __tablename__ = "auth_failures"

    client: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int]
    window_ends_at: Mapped[datetime] = mapped_column(index=True)
