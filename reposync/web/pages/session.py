"""Who is looking at the web page: a session cookie made from an API token, and CSRF.

Signing in exchanges an API token (shown once by ``reposync user token``) for a
*session token*: an API token of its own (``web page session``, one day), whose secret
the cookie holds. So a session is checked exactly as the API checks a bearer token
(``service.users.authenticate``: revoked, expired, unknown are refused), every gunicorn
worker recognizes it without a shared signing key, and signing out revokes it on the
server, not merely in the browser. The API token typed in is never stored.

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's
page sends it) and ``Secure`` when the request came over HTTPS or
``REPOSYNC_WEB_SECURE_COOKIE`` says the browser uses HTTPS in front of a proxy.

A user holds at most ``service.users.MAX_SESSIONS_PER_USER`` live sessions: signing in
once more revokes the oldest; the tick removes expired ones. A refused session cookie, as
a refused sign-in token, counts toward the client's throttle as a bearer token does (the
cookie is an API token too: uncounted, it would be a way around the throttle), and is
cleared from the browser, so a session that merely ended counts once.

CSRF: every form carries ``csrf`` = HMAC-SHA256 keyed by the session secret, which a
forging page cannot compute (it cannot read the cookie). The sign-in form has no session
yet: a random ``reposync_signin`` cookie (same attributes) keys its token instead, so a
foreign page cannot sign a browser into someone else's account either.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from flask import current_app, g, request
from werkzeug.wrappers.response import Response

from reposync.config import Settings
from reposync.errors import Unauthenticated
from reposync.models import User
from reposync.service.accounts.users import (
    authenticate,
    issue_session_token,
    revoke_token_secret,
)
from reposync.service.context import ServiceContext
from reposync.web.auth import client_address

SESSION_COOKIE = "reposync_session"
SIGNIN_COOKIE = "reposync_signin"
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"
#: How long a page session lasts (days): sign in again tomorrow.
SESSION_DAYS = 1
SESSION_NAME = "web page session"


def service_context() -> ServiceContext:
    ctx: ServiceContext = current_app.extensions["reposync.ctx"]
    return ctx


def _settings() -> Settings:
    settings: Settings = current_app.extensions["reposync.settings"]
    return settings


def csrf_token(secret: str) -> str:
    """The form token of a session (or sign-in nonce): an HMAC only its holder can make."""
    return hmac.new(secret.encode(), b"reposync-csrf", hashlib.sha256).hexdigest()


def csrf_valid(secret: str | None) -> bool:
    """Whether this POST carries the CSRF token of ``secret`` (form field or header)."""
    if not secret:
        return False
    sent = request.form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER) or ""
    return hmac.compare_digest(sent, csrf_token(secret))


def page_user() -> User | None:
    """The signed-in user, or None (no cookie, or a session that ended: the response then
    clears the cookie). ``TooManyAttempts`` for a throttled client."""
    secret = request.cookies.get(SESSION_COOKIE)
    if not secret:
        return None
    try:
        return authenticate(service_context(), secret, client=client_address())
    except Unauthenticated:
        g.stale_session = True
        return None


def session_secret() -> str:
    """The current session's secret (only after ``page_user`` found a user)."""
    return request.cookies.get(SESSION_COOKIE, "")


def sign_in(token: str) -> tuple[User, str]:
    """Check an API token; answer its user and a new session secret for the cookie.

    Raises ``Unauthenticated`` for a token the API would refuse (a stream token, good for
    one Run's events only, too) and ``TooManyAttempts`` for a throttled client.
    """
    ctx = service_context()
    user = authenticate(ctx, token, client=client_address())
    return user, issue_session_token(ctx, user.id, SESSION_NAME, days=SESSION_DAYS)


def sign_out() -> None:
    secret = request.cookies.get(SESSION_COOKIE)
    if secret:
        revoke_token_secret(service_context(), secret)


def _secure() -> bool:
    return request.is_secure or _settings().web_secure_cookie


def set_cookie(response: Response, name: str, value: str, *, max_age: int | None) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=_secure(),
    )


def clear_cookie(response: Response, name: str) -> None:
    response.delete_cookie(name, path="/", httponly=True, samesite="Strict", secure=_secure())


def signin_nonce() -> str:
    """The sign-in form's CSRF key: the browser's ``reposync_signin`` cookie, or a new one
    (remembered in ``g`` so the response sets it)."""
    nonce = request.cookies.get(SIGNIN_COOKIE)
    if not nonce:
        nonce = secrets.token_urlsafe(32)
        g.new_signin_nonce = nonce
    return nonce
