"""The contract of a forge's self-service connection: a person authorizes reposync's App.

Separate from ``providers/base.py`` (which is about repositories a Binding syncs): this
is the forge's OAuth web flow and what a person's own token shows of the App's
installations. The service (``service/accounts/github_connect.py``) knows it only through these
types and ``providers/registry.py: account_connector``; GitHub's implementation is
``providers/github/connect.py``.

A ``UserSession`` holds the person's token in memory only, for the few calls a callback
makes; ``close`` forgets it. Nothing here returns a token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class AccountIdentity:
    """Who authorized: the forge's immutable user id, and the current login."""

    user_id: str
    login: str
    name: str | None
    html_url: str


@dataclass(frozen=True, slots=True)
class AccountInstallation:
    """An installation of the App that the person may use."""

    installation_id: str
    account_login: str
    account_type: str  # "User" or "Organization"
    repository_selection: str  # "all" or "selected"
    manage_url: str  # the forge's page to change or remove it


@dataclass(frozen=True, slots=True)
class AccountRepository:
    """A repository an installation lets this person reach."""

    repository_id: str
    full_name: str
    private: bool
    html_url: str


class UserSession(Protocol):
    """What one person's token reads; raises ``ProviderError`` subclasses."""

    def identity(self) -> AccountIdentity: ...

    def installations(self) -> list[AccountInstallation]: ...

    def repositories(self, installation_id: str) -> list[AccountRepository]: ...

    def close(self) -> None:
        """Forget the token (the session is unusable afterwards)."""


class AccountConnector(Protocol):
    """A forge's OAuth web flow for one registered App."""

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        """Where the browser goes to authorize the App (it comes back with a code)."""

    def install_url(self, state: str) -> str:
        """Where the browser goes to install the App on an account it chooses."""

    def exchange(self, code: str, redirect_uri: str) -> UserSession:
        """The person's session for a callback's code (``GitHubCodeRefused`` if refused)."""
