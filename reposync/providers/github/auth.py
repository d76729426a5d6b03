"""GitHub credentials: an App installation token (refreshed before expiry) or a PAT.

Tokens live in memory only: never in the database, never in a log line, never in a
Git remote URL (Git receives them through environment-only configuration).
"""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import requests

from reposync.config import Settings
from reposync.errors import ConfigurationError, PermissionDenied, ProviderUnavailable
from reposync.providers.base import Clock

#: GitHub rejects a JWT whose ``exp`` is more than 10 minutes after ``iat``.
JWT_LIFETIME = timedelta(minutes=9)
#: Clock drift allowance: ``iat`` is set in the past.
JWT_BACKDATE = timedelta(seconds=60)
#: Refresh an installation token this long before it expires.
REFRESH_MARGIN = timedelta(minutes=5)


class TokenSource(Protocol):
    #: What GitHub counts limits against (the write budget's key).
    account: str

    def token(self) -> str: ...

    def invalidate(self) -> None: ...


class PersonalToken:
    """A personal access token from the environment, for local use."""

    def __init__(self, token: str) -> None:
        self._token = token
        self.account = "github:token:" + hashlib.sha256(token.encode()).hexdigest()[:16]

    def token(self) -> str:
        return self._token

    def invalidate(self) -> None:
        raise PermissionDenied("GitHub refused the personal access token (Bad credentials)")


class AppInstallationToken:
    """JWT (RS256) -> installation access token, cached and refreshed before expiry."""

    def __init__(
        self,
        api_url: str,
        app_id: str,
        private_key: str,
        installation_id: str,
        *,
        session: requests.Session,
        clock: Clock,
        timeout: float,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._app_id = app_id
        self._key = private_key
        self._installation = installation_id
        self._session = session
        self._clock = clock
        self._timeout = timeout
        self._cached: tuple[str, datetime] | None = None
        self._lock = threading.Lock()
        self.account = f"github:installation:{installation_id}"

    def app_jwt(self) -> str:
        now = self._clock.now()
        claims = {
            "iat": int((now - JWT_BACKDATE).timestamp()),
            "exp": int((now + JWT_LIFETIME - JWT_BACKDATE).timestamp()),
            "iss": self._app_id,
        }
        # Imported here: PyJWT brings cryptography (35 ms), which only an App key needs,
        # and every ``reposync`` command that opens a GitHub side would pay it at start.
        import jwt

        return jwt.encode(claims, self._key, algorithm="RS256")

    def token(self) -> str:
        with self._lock:
            now = self._clock.now()
            if self._cached is not None and now < self._cached[1] - REFRESH_MARGIN:
                return self._cached[0]
            url = f"{self._api_url}/app/installations/{self._installation}/access_tokens"
            try:
                response = self._session.post(
                    url,
                    headers={
                        "Authorization": f"Bearer {self.app_jwt()}",
                        "Accept": "application/vnd.github+json",
                        "X-GitHub-Api-Version": "2022-11-28",
                    },
                    timeout=self._timeout,
                )
            except requests.RequestException as exc:
                raise ProviderUnavailable(f"GitHub token exchange failed: {exc}") from exc
            if response.status_code in (401, 403, 404):
                raise PermissionDenied(
                    f"GitHub refused the App's token exchange ({response.status_code}): "
                    "check the App id, its private key and the installation id"
                )
            if response.status_code != 201:
                raise ProviderUnavailable(f"GitHub token exchange answered {response.status_code}")
            body = response.json()
            expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
            token: str = body["token"]
            self._cached = (token, expires)
            return token

    def invalidate(self) -> None:
        with self._lock:
            self._cached = None


def token_source(settings: Settings, session: requests.Session, clock: Clock) -> TokenSource:
    if settings.github_app_id:
        if not settings.github_app_private_key_path or not settings.github_installation_id:
            raise ConfigurationError(
                "REPOSYNC_GITHUB_APP_ID needs REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH and "
                "REPOSYNC_GITHUB_INSTALLATION_ID"
            )
        try:
            key = Path(settings.github_app_private_key_path).read_text()
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH: {exc.strerror}"
            ) from exc
        return AppInstallationToken(
            settings.github_api_url,
            settings.github_app_id,
            key,
            settings.github_installation_id,
            session=session,
            clock=clock,
            timeout=settings.http_timeout,
        )
    if settings.github_token:
        return PersonalToken(settings.github_token)
    raise PermissionDenied(
        "no GitHub credentials: set REPOSYNC_GITHUB_TOKEN, or REPOSYNC_GITHUB_APP_ID with "
        "REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH and REPOSYNC_GITHUB_INSTALLATION_ID"
    )
