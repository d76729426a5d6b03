"""Connect GitHub: one user's GitHub identity, the installations they authorized, and the
one-time states of flows in progress.

What is kept is deliberately what is not secret: GitHub's user id and login, installation
metadata (account, selection, management URL) and the repositories each installation
showed this user. The user access token the callback obtained is used in memory and
forgotten; no column could hold it. Everything hangs off ``users.id`` with ``ON DELETE
CASCADE``, and every read is by the asking user's id: one user's picker never shows what
another authorized.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, JSONType, utcnow


class GitHubConnectState(Base):
    """A Connect GitHub flow between its start and GitHub's redirect back: one use.

    Only SHA-256 digests of the state and of the browser's flow cookie are stored, so a
    reader of the database cannot complete someone's flow. ``baseline`` holds the ids of
    the installations the user had authorized when the flow started: the callback waits
    for one that is not among them. ``origin`` is where the flow started: ``api`` (the
    callback answers JSON) or ``page`` (it sends the browser back to the web page's
    GitHub page with the outcome); the state, not a parameter of the callback URL, says
    so, because GitHub's redirect carries only what GitHub appends.
    """

    __tablename__ = "github_connect_states"
    __table_args__ = (CheckConstraint("flow IN ('authorize', 'install')", name="flow"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    browser_hash: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    flow: Mapped[str] = mapped_column(String(16))
    baseline: Mapped[Any] = mapped_column(JSONType, default=list)
    origin: Mapped[str] = mapped_column(String(8), default="api", server_default="api")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]


class GitHubAccount(Base):
    """The GitHub identity a reposync user connected (GitHub's numeric id never changes;
    the login may, and is refreshed by each authorization)."""

    __tablename__ = "github_accounts"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    github_user_id: Mapped[str] = mapped_column(String(64))
    login: Mapped[str] = mapped_column(String(255))
    name: Mapped[str | None] = mapped_column(String(255))
    html_url: Mapped[str] = mapped_column(String(1024))
    connected_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class GitHubInstallationGrant(Base):
    """An installation of the GitHub App this user authorized (their picker's source)."""

    __tablename__ = "github_installation_grants"
    __table_args__ = (
        UniqueConstraint(
            "user_id", "installation_id", name="uq_github_installation_grants_user_installation"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    installation_id: Mapped[str] = mapped_column(String(64))
    account_login: Mapped[str] = mapped_column(String(255))
    account_type: Mapped[str] = mapped_column(String(32))
    #: ``all`` or ``selected``, as GitHub reports it.
    repository_selection: Mapped[str] = mapped_column(String(16))
    #: GitHub's page where the installation's owner changes or removes it.
    manage_url: Mapped[str] = mapped_column(String(1024))
    granted_at: Mapped[datetime] = mapped_column(default=utcnow)


class GitHubGrantRepository(Base):
    """A repository an installation showed this user when they authorized it."""

    __tablename__ = "github_grant_repositories"
    __table_args__ = (
        UniqueConstraint(
            "grant_id", "repository_id", name="uq_github_grant_repositories_grant_repository"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    grant_id: Mapped[int] = mapped_column(
        ForeignKey("github_installation_grants.id", ondelete="CASCADE"), index=True
    )
    repository_id: Mapped[str] = mapped_column(String(64))
    full_name: Mapped[str] = mapped_column(String(255))
    private: Mapped[bool]
    html_url: Mapped[str] = mapped_column(String(1024))
