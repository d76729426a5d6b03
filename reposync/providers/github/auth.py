"""GitHub credentials: an App installation token (refreshed before expiry) or a PAT.

Which credentials open a side: the side's ``connection_id`` (``github:installation:<id>``,
what Connect GitHub's picker lists) names the App installation whose token it uses, with
the App id and private key from the settings; without one, the configured installation
(``REPOSYNC_GITHUB_INSTALLATION_ID``) or the personal access token, as before connections
existed. Installation tokens are cached per installation for the whole process (not per
opened provider): every stage of every Run opens its sides again, and one exchange serves
them all until the token nears its expiry.

Tokens live in memory only: never in the database, never in a log line, never in a
Git remote URL (Git receives them through environment-only configuration).
"""

from __future__ import annotations

import hashlib
import re
import threading
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import requests

from reposync.config import Settings
from reposync.errors import (
    ConfigurationError,
    InvalidConnection,
    PermissionDenied,
    ProviderUnavailable,
)
from reposync.providers.base import Clock

#: GitHub rejects a JWT whose ``exp`` is more than 10 minutes after ``iat``.
JWT_LIFETIME = timedelta(minutes=9)
#: Clock drift allowance: ``iat`` is set in the past.
JWT_BACKDATE = timedelta(seconds=60)
#: Refresh an installation token this long before it expires.
REFRESH_MARGIN = timedelta(minutes=5)
#: A side's ``connection_id``: an installation of the configured App.
CONNECTION = re.compile(r"^github:installation:(?P<id>[1-9][0-9]{0,19})$")


def installation_of(connection_id: str) -> str:
    """The installation id a ``connection_id`` names (``InvalidConnection`` otherwise)."""
    match = CONNECTION.match(connection_id.strip())
    if match is None:
        raise InvalidConnection(
            f"{connection_id!r} is not a GitHub connection; expected github:installation:<id>"
        )
    return match["id"]


class _TokenCache:
    """Installation tokens by (API, App, key, installation), shared by a process's sources.

    Keyed by the private key's digest too, so a rotated key (or another App in the same
    process: the tests) never gets a token the other one fetched.
    """

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str, str, str], tuple[str, datetime]] = {}
        self._locks: dict[tuple[str, str, str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, key: tuple[str, str, str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, key: tuple[str, str, str, str]) -> tuple[str, datetime] | None:
        with self._guard:
            return self._tokens.get(key)

    def put(self, key: tuple[str, str, str, str], token: str, expires: datetime) -> None:
        with self._guard:
            self._tokens[key] = (token, expires)

    def forget(self, key: tuple[str, str, str, str]) -> None:
        with self._guard:
            self._tokens.pop(key, None)


_CACHE = _TokenCache()


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
    """JWT (RS256) -> installation access token, cached per installation (process-wide)
    and refreshed before expiry."""

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
        key_digest = hashlib.sha256(private_key.encode()).hexdigest()
        self._key_id = (self._api_url, app_id, key_digest, installation_id)
        self._lock = _CACHE.lock(self._key_id)
        self.account = f"github:installation:{installation_id}"
        self.installation_id = installation_id

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
            cached = _CACHE.get(self._key_id)
            if cached is not None and now < cached[1] - REFRESH_MARGIN:
                return cached[0]
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
            _CACHE.put(self._key_id, token, expires)
            return token

    def invalidate(self) -> None:
        with self._lock:
            _CACHE.forget(self._key_id)


def _app_key(settings: Settings) -> str:
    try:
        return Path(settings.github_app_private_key_path).read_text()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH: {exc.strerror}"
        ) from exc


def token_source(
    settings: Settings,
    session: requests.Session,
    clock: Clock,
    connection_id: str | None = None,
) -> TokenSource:
    """The credentials of one side: its connection's installation, else the defaults."""
    if connection_id is not None:
        installation = installation_of(connection_id)
        if not settings.github_app_id or not settings.github_app_private_key_path:
            raise ConfigurationError(
                f"the connection {connection_id} is an installation of reposync's GitHub "
                "App: set REPOSYNC_GITHUB_APP_ID and REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH"
            )
        return AppInstallationToken(
            settings.github_api_url,
            settings.github_app_id,
            _app_key(settings),
            installation,
            session=session,
            clock=clock,
            timeout=settings.http_timeout,
        )
    if settings.github_app_id and settings.github_installation_id:
        if not settings.github_app_private_key_path:
            raise ConfigurationError(
                "REPOSYNC_GITHUB_APP_ID needs REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH and "
                "REPOSYNC_GITHUB_INSTALLATION_ID"
            )
        return AppInstallationToken(
            settings.github_api_url,
            settings.github_app_id,
            _app_key(settings),
            settings.github_installation_id,
            session=session,
            clock=clock,
            timeout=settings.http_timeout,
        )
    if settings.github_token:
        return PersonalToken(settings.github_token)
    if settings.github_app_id:
        raise ConfigurationError(
            "REPOSYNC_GITHUB_APP_ID without REPOSYNC_GITHUB_INSTALLATION_ID (or "
            "REPOSYNC_GITHUB_TOKEN) only opens sides whose Binding names a connection_id "
            "(github:installation:<id>)"
        )
    raise PermissionDenied(
        "no GitHub credentials: set REPOSYNC_GITHUB_TOKEN, or REPOSYNC_GITHUB_APP_ID with "
        "REPOSYNC_GITHUB_APP_PRIVATE_KEY_PATH and REPOSYNC_GITHUB_INSTALLATION_ID"
    )
