"""Connect GitHub: the GitHub App's OAuth web flow and what a user's token shows.

GitHub's documentation ("Generating a user access token for a GitHub App", web
application flow): the browser goes to ``<web>/login/oauth/authorize`` (or, to install
the App, ``<web>/apps/<slug>/installations/new``, which comes back with a code when the
App requests user authorization during installation) and returns to the callback with
``code`` and ``state``; the code is exchanged at ``POST <web>/login/oauth/access_token``
with the client id and secret. That endpoint answers 200 even for a refused code, with an
``error`` field (``bad_verification_code``, ``incorrect_client_credentials``, ...).

The user access token (and the refresh token GitHub returns with it) live in one
``GitHubUserSession``, in memory, for the callback's few reads, and ``close`` drops them;
the refresh token is never used: the next authorization gets a new pair.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlencode

import requests

from reposync.errors import GitHubCodeRefused, PermissionDenied, ProviderUnavailable
from reposync.providers.accounts import (
    AccountIdentity,
    AccountInstallation,
    AccountRepository,
)
from reposync.providers.base import ProviderEnvironment
from reposync.providers.github.client import EtagCache, GitHubClient


class UserToken:
    """A user access token as the client's ``TokenSource`` (in memory, until closed)."""

    def __init__(self, token: str) -> None:
        self._token: str | None = token
        self.account = "github:user:" + hashlib.sha256(token.encode()).hexdigest()[:16]

    def token(self) -> str:
        if self._token is None:
            raise PermissionDenied("the GitHub user session was closed")
        return self._token

    def invalidate(self) -> None:
        raise PermissionDenied("GitHub refused the user access token it had just issued")

    def forget(self) -> None:
        self._token = None


class GitHubUserSession:
    """``/user``, ``/user/installations`` and their repositories, as this user sees them."""

    def __init__(self, client: GitHubClient, token: UserToken) -> None:
        self._client = client
        self._token = token

    def identity(self) -> AccountIdentity:
        body = self._client.get("/user")
        return AccountIdentity(
            user_id=str(body["id"]),
            login=str(body["login"]),
            name=body.get("name") or None,
            html_url=str(body.get("html_url") or ""),
        )

    def installations(self) -> list[AccountInstallation]:
        """The App's installations this user may use (GitHub lists only those of the App
        whose token this is: a user token is bound to its App)."""
        return [
            _installation(item)
            for item in self._client.paginate("/user/installations", key="installations")
        ]

    def repositories(self, installation_id: str) -> list[AccountRepository]:
        path = f"/user/installations/{int(installation_id)}/repositories"
        return [
            AccountRepository(
                repository_id=str(item["id"]),
                full_name=str(item["full_name"]),
                private=bool(item.get("private")),
                html_url=str(item.get("html_url") or ""),
            )
            for item in self._client.paginate(path, key="repositories")
        ]

    def close(self) -> None:
        self._token.forget()
        self._client.etags = EtagCache()  # bodies read with the token go with it


def _installation(item: dict[str, Any]) -> AccountInstallation:
    account = item.get("account") or {}
    login = str(account.get("login") or "")
    kind = str(item.get("target_type") or account.get("type") or "User")
    return AccountInstallation(
        installation_id=str(item["id"]),
        account_login=login,
        account_type=kind,
        repository_selection=str(item.get("repository_selection") or "selected"),
        manage_url=str(item.get("html_url") or ""),
    )


class GitHubConnector:
    """The OAuth web flow of the GitHub App named by the settings."""

    def __init__(self, env: ProviderEnvironment) -> None:
        settings = env.settings
        self._env = env
        self._settings = settings
        self._web = settings.github_oauth_url.rstrip("/")

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        query = {
            "client_id": self._settings.github_client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "allow_signup": "false",
        }
        return f"{self._web}/login/oauth/authorize?{urlencode(query)}"

    def install_url(self, state: str) -> str:
        slug = self._settings.github_app_slug
        return f"{self._web}/apps/{slug}/installations/new?{urlencode({'state': state})}"

    def exchange(self, code: str, redirect_uri: str) -> GitHubUserSession:
        session = self._session()
        try:
            response = session.post(
                f"{self._web}/login/oauth/access_token",
                data={
                    "client_id": self._settings.github_client_id,
                    "client_secret": self._settings.github_client_secret,
                    "code": code,
                    "redirect_uri": redirect_uri,
                },
                headers={"Accept": "application/json", "User-Agent": "reposync"},
                timeout=self._settings.http_timeout,
            )
        except requests.RequestException as exc:
            raise ProviderUnavailable(f"GitHub's OAuth endpoint did not answer: {exc}") from exc
        if response.status_code != 200:
            raise ProviderUnavailable(
                f"GitHub's OAuth endpoint answered {response.status_code} to the code exchange"
            )
        try:
            body = response.json()
        except ValueError as exc:
            raise ProviderUnavailable("GitHub's OAuth endpoint answered no JSON") from exc
        if not isinstance(body, dict) or "error" in body or not body.get("access_token"):
            error = body.get("error", "no access_token") if isinstance(body, dict) else "?"
            detail = body.get("error_description", "") if isinstance(body, dict) else ""
            raise GitHubCodeRefused(f"GitHub refused the authorization code: {error} {detail}")
        token = UserToken(str(body["access_token"]))
        client = GitHubClient(
            self._settings.github_api_url,
            token,
            clock=self._env.clock,
            timeout=self._settings.http_timeout,
            session=session,
        )
        return GitHubUserSession(client, token)

    def _session(self) -> requests.Session:
        made = self._env.http_session() if self._env.http_session else requests.Session()
        assert isinstance(made, requests.Session)
        return made
