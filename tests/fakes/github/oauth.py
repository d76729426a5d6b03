"""GitHub's OAuth web flow for GitHub Apps, on the web host.

None of these is in the extracted API description (tests/contracts/README.md): they are
implemented from GitHub's documentation ("Generating a user access token for a GitHub
App", "Authorizing OAuth apps", "Troubleshooting OAuth app access token request
errors", "Differences between GitHub Apps and OAuth apps").

* ``GET /login?return_to`` and ``POST /session`` (``login``, ``password``, ``return_to``):
  GitHub's sign-in form, for a real browser. Any login signs in with ``TEST_PASSWORD``
  (the user is created on first use); the ``user_session`` cookie is set and the browser
  goes back to ``return_to`` (a path on this host). A wrong password shows the form again
  with "Incorrect username or password." (HTTP 200, as GitHub).
* ``GET /login/oauth/authorize?client_id&redirect_uri&state``: a browser that is not
  signed in is sent to ``/login``; a ``redirect_uri`` outside the App's registered
  callback URLs (same scheme, host and port; a path under the registered one) sends the
  browser to the registered one with ``error=redirect_uri_mismatch``; a user who declines
  comes back with ``error=access_denied``; otherwise with ``code`` (ten minutes, one use)
  and ``state`` unchanged. A user's first authorization of an App shows GitHub's
  "Authorize <App>" page instead: its Authorize button (``POST /login/oauth/authorize``
  with the same parameters) records the authorization and redirects as above, its Cancel
  button comes back with ``access_denied``. Browsers from ``browser()`` stand for users
  who authorized before and are redirected at once.
* ``GET /apps/<slug>/installations/new?state``: the user installs the App on an account
  (chosen on GitHub's page, ``POST`` with ``account`` (their own) and ``state``, or
  beforehand by ``choose_install``) and the browser comes back to the
  first callback URL with ``installation_id``, ``setup_action=install`` and, when the App
  requests user authorization during installation, ``code`` and ``state``.
* ``POST /login/oauth/access_token`` (``client_id``, ``client_secret``, ``code``,
  optional ``redirect_uri``; form or query parameters): HTTP 200 in every case; refusals
  are ``{"error": "incorrect_client_credentials" | "bad_verification_code" |
  "redirect_uri_mismatch", "error_description", "error_uri"}``. Success: a user access
  token ``ghu_`` (8 hours) and a refresh token ``ghr_``; JSON when ``Accept`` asks for
  it, ``application/x-www-form-urlencoded`` otherwise.

What the flow's tokens then call (``GET /user``, ``GET /user/installations``) is in the
REST API's routes (routes_users.py, routes_meta.py).

The lag after an organization install: ``choose_install(..., lag_seconds=, lag_listings=)``
keeps the new installation out of ``GET /user/installations`` until then.
"""

from __future__ import annotations

import html
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import requests
from werkzeug.wrappers import Request, Response

from tests.fakes.github.models import App, Token, User

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from tests.fakes.github.server import AppInstall, GitHubFake

SESSION_COOKIE = "user_session"
#: The password every test user signs in with on the sign-in form.
TEST_PASSWORD = "test-password"
CODE_LIFETIME = timedelta(minutes=10)
USER_TOKEN_LIFETIME = timedelta(hours=8)
REFRESH_TOKEN_LIFETIME = timedelta(days=184)
INSTALL_NEW = re.compile(r"^/apps/(?P<slug>[a-z0-9-]+)/installations/new$")
PATHS = ("/login/oauth/authorize", "/login/oauth/access_token", "/login", "/session")
TROUBLESHOOTING = (
    "https://docs.github.com/apps/managing-oauth-apps/"
    "troubleshooting-oauth-app-access-token-request-errors/"
)


@dataclass
class InstallChoice:
    """What the user picks on GitHub's install page."""

    account: str
    repositories: list[str] | None = None
    lag_seconds: float = 0.0
    lag_listings: int = 0


@dataclass
class _Code:
    app: App
    user: User
    redirect_uri: str | None
    expires_at: datetime


@dataclass
class OAuthFlow:
    """The web flow's state: signed-in browsers, codes, install choices, exchanges."""

    fake: GitHubFake
    sessions: dict[str, str] = field(default_factory=dict)  # cookie -> login
    codes: dict[str, _Code] = field(default_factory=dict)
    choices: dict[str, InstallChoice] = field(default_factory=dict)
    declines: set[str] = field(default_factory=set)
    #: Every code exchange's outcome: "ok" or GitHub's error code, in order.
    exchanges: list[str] = field(default_factory=list)
    #: Every user access token issued (tests revoke or inspect them).
    issued: list[str] = field(default_factory=list)
    #: (App id, login casefolded) the user authorized on the Authorize page.
    authorized: set[tuple[int, str]] = field(default_factory=set)
    #: Logins that skip the Authorize page (``browser()``: they authorized before).
    authorized_before: set[str] = field(default_factory=set)

    # -- test controls ------------------------------------------------------------------

    def register(self, app: AppInstall | App, callback_url: str) -> str:
        """Register ``callback_url`` with the App and make its client secret (returned)."""
        found = app if isinstance(app, App) else app.app
        with self.fake.state.lock:
            found.callback_urls = [callback_url]
            found.client_secret = secrets.token_hex(20)
            return found.client_secret

    def browser(self, login: str) -> requests.Session:
        """A browser signed in to GitHub as ``login`` (it follows no redirect by itself)."""
        cookie = secrets.token_urlsafe(24)
        with self.fake.state.lock:
            self.fake.state.user(login)
            self.sessions[cookie] = login
            self.authorized_before.add(login.casefold())
        session = requests.Session()
        session.cookies.set(SESSION_COOKIE, cookie, domain=urlsplit(self.fake.git_url).hostname)
        return session

    def choose_install(
        self,
        login: str,
        account: str,
        *,
        repositories: list[str] | None = None,
        lag_seconds: float = 0.0,
        lag_listings: int = 0,
    ) -> None:
        """On ``login``'s next install page, install on ``account`` (GitHub then lists it
        after ``lag_seconds`` and ``lag_listings`` more listings)."""
        self.choices[login.casefold()] = InstallChoice(
            account, repositories, lag_seconds, lag_listings
        )

    def decline(self, login: str) -> None:
        """``login`` clicks Cancel on the authorize page."""
        self.declines.add(login.casefold())

    # -- the web host ---------------------------------------------------------------------

    def matches(self, path: str) -> bool:
        return path in PATHS or INSTALL_NEW.match(path) is not None

    def handle(
        self,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        path: str,
        log: Callable[[int], None],
    ) -> Iterable[bytes]:
        request = Request(environ)
        with self.fake.state.lock:
            if path == "/login/oauth/access_token" and request.method == "POST":
                response = self._exchange(request)
            elif path == "/login/oauth/authorize" and request.method in ("GET", "POST"):
                response = self._authorize(request)
            elif path == "/login" and request.method == "GET":
                response = _sign_in_page(request.args.get("return_to", "/"))
            elif path == "/session" and request.method == "POST":
                response = self._sign_in(request)
            elif request.method in ("GET", "POST") and (found := INSTALL_NEW.match(path)):
                response = self._install(request, found["slug"])
            else:
                response = _page(404, "Not Found")
        log(response.status_code)
        return response(environ, start_response)

    def _signed_in(self, request: Request) -> User | None:
        login = self.sessions.get(request.cookies.get(SESSION_COOKIE, ""))
        return self.fake.state.user(login) if login else None

    def _to_login(self, request: Request) -> Response:
        target = request.full_path.rstrip("?")
        return _redirect(f"{self.fake.git_url}/login?{urlencode({'return_to': target})}")

    def _sign_in(self, request: Request) -> Response:
        login = request.form.get("login", "").strip()
        return_to = request.form.get("return_to", "/")
        password = request.form.get("password", "")
        if not login or not secrets.compare_digest(password.encode(), TEST_PASSWORD.encode()):
            return _sign_in_page(return_to, "Incorrect username or password.")
        user = self.fake.state.user(login)
        cookie = secrets.token_urlsafe(24)
        self.sessions[cookie] = user.login
        if not return_to.startswith("/") or return_to.startswith("//"):
            return_to = "/"  # GitHub goes back to its own pages only
        response = _redirect(f"{self.fake.git_url}{return_to}")
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="Lax", path="/")
        return response

    def _authorize(self, request: Request) -> Response:
        given = request.form if request.method == "POST" else request.args
        app = self._app(client_id=given.get("client_id", ""))
        if app is None:
            return _page(404, "Not Found")
        user = self._signed_in(request)
        if user is None:
            if request.method == "POST":
                return _page(422, "Unprocessable Entity")
            return self._to_login(request)
        state = given.get("state")
        registered = app.callback_urls[0] if app.callback_urls else None
        wanted = given.get("redirect_uri") or registered
        if wanted is None:
            return _page(400, "The application has no callback URL")
        if not _allowed(wanted, app.callback_urls):
            assert registered is not None
            return _redirect(
                _with(
                    registered,
                    error="redirect_uri_mismatch",
                    error_description="The redirect_uri MUST match the registered callback "
                    "URL for this application.",
                    error_uri="https://docs.github.com/apps/managing-oauth-apps/"
                    "troubleshooting-authorization-request-errors/#redirect-uri-mismatch",
                    state=state,
                )
            )
        who = user.login.casefold()
        asked = (app.id, who) not in self.authorized and who not in self.authorized_before
        if request.method == "GET" and asked and who not in self.declines:
            return _authorize_page(app, user, given)
        if request.method == "POST" and given.get("authorize") == "1":
            self.authorized.add((app.id, who))
        if who in self.declines or (request.method == "POST" and given.get("authorize") != "1"):
            return _redirect(
                _with(
                    wanted,
                    error="access_denied",
                    error_description="The user has denied your application access.",
                    error_uri="https://docs.github.com/apps/managing-oauth-apps/"
                    "troubleshooting-authorization-request-errors/#access-denied",
                    state=state,
                )
            )
        code = self._code(app, user, given.get("redirect_uri"))
        return _redirect(_with(wanted, code=code, state=state))

    def _install(self, request: Request, slug: str) -> Response:
        app = self._app(slug=slug)
        if app is None:
            return _page(404, "Not Found")
        user = self._signed_in(request)
        if user is None:
            return self._to_login(request)
        if request.method == "POST":  # the Install button on GitHub's page
            if request.form.get("account", "").casefold() != user.login.casefold():
                return _page(422, "Unprocessable Entity")
            choice: InstallChoice | None = InstallChoice(user.login)
        else:
            choice = self.choices.pop(user.login.casefold(), None)
        if choice is None:  # GitHub's page waits for the user to pick an account
            return _install_page(app, user, request.args.get("state"))
        inst = self.fake.add_installation(
            app, choice.account, repositories=choice.repositories, sender=user.login
        )
        if choice.lag_seconds > 0:
            inst.listed_from = self.fake.state.now() + timedelta(seconds=choice.lag_seconds)
        inst.unlisted_for = choice.lag_listings
        if not app.callback_urls:
            return _page(200, "Installed")
        params: dict[str, Any] = {"installation_id": inst.id, "setup_action": "install"}
        if app.request_oauth_on_install:
            params["code"] = self._code(app, user, None)
            params["state"] = request.values.get("state")
        return _redirect(_with(app.callback_urls[0], **params))

    def _exchange(self, request: Request) -> Response:
        given = {**dict(request.args), **dict(request.form)}
        if request.is_json:
            body = request.get_json(silent=True)
            given.update(body if isinstance(body, dict) else {})
        app = self._app(client_id=str(given.get("client_id", "")))
        code = self.codes.get(str(given.get("code", "")))
        if app is None or not secrets.compare_digest(
            app.client_secret.encode(), str(given.get("client_secret", "")).encode()
        ):
            return self._refused(
                request,
                "incorrect_client_credentials",
                "The client_id and/or client_secret passed are incorrect.",
            )
        now = self.fake.state.now()
        if code is None or code.app.id != app.id or now >= code.expires_at:
            return self._refused(
                request, "bad_verification_code", "The code passed is incorrect or expired."
            )
        redirect_uri = given.get("redirect_uri")
        if redirect_uri and code.redirect_uri and redirect_uri != code.redirect_uri:
            return self._refused(
                request,
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
            )
        del self.codes[str(given["code"])]  # one use
        token = Token(
            value="ghu_" + secrets.token_hex(18),
            kind="user",
            user=code.user,
            created_at=now,
            expires_at=now + USER_TOKEN_LIFETIME,
            app=app,
        )
        self.fake.state.tokens[token.value] = token
        self.issued.append(token.value)
        self.exchanges.append("ok")
        return _answer(
            request,
            {
                "access_token": token.value,
                "expires_in": int(USER_TOKEN_LIFETIME.total_seconds()),
                "refresh_token": "ghr_" + secrets.token_hex(36),
                "refresh_token_expires_in": int(REFRESH_TOKEN_LIFETIME.total_seconds()),
                "scope": "",
                "token_type": "bearer",
            },
        )

    def _refused(self, request: Request, error: str, description: str) -> Response:
        self.exchanges.append(error)
        anchor = error.replace("_", "-")
        body = {"error": error, "error_description": description, "error_uri": TROUBLESHOOTING}
        body["error_uri"] += f"#{anchor}"
        return _answer(request, body)

    def _code(self, app: App, user: User, redirect_uri: str | None) -> str:
        value = secrets.token_hex(10)
        self.codes[value] = _Code(app, user, redirect_uri, self.fake.state.now() + CODE_LIFETIME)
        return value

    def _app(self, *, client_id: str = "", slug: str = "") -> App | None:
        return next(
            (
                a
                for a in self.fake.state.apps.values()
                if (client_id and a.client_id == client_id) or (slug and a.slug == slug)
            ),
            None,
        )


def _allowed(uri: str, registered: list[str]) -> bool:
    """GitHub: scheme, host and port exactly as registered, the path under its path."""
    wanted = urlsplit(uri)
    for url in registered:
        base = urlsplit(url)
        if (wanted.scheme, wanted.netloc) == (base.scheme, base.netloc) and (
            wanted.path == base.path or wanted.path.startswith(base.path.rstrip("/") + "/")
        ):
            return True
    return False


def _with(url: str, **params: Any) -> str:
    query = [(k, str(v)) for k, v in params.items() if v is not None]
    parts = urlsplit(url)
    existing = parse_qsl(parts.query, keep_blank_values=True)
    return parts._replace(query=urlencode(existing + query)).geturl()


def _redirect(location: str) -> Response:
    return Response("", status=302, headers={"Location": location})


def _page(status: int, title: str) -> Response:
    html = f"<!DOCTYPE html><html><head><title>{title}</title></head><body></body></html>"
    return Response(html, status=status, content_type="text/html; charset=utf-8")


def _form_page(title: str, body: str) -> Response:
    page = (
        f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return Response(page, status=200, content_type="text/html; charset=utf-8")


def _sign_in_page(return_to: str, error: str = "") -> Response:
    """GitHub's sign-in form (``TEST_PASSWORD`` for every test user)."""
    flash = f'<p id="js-flash-container" role="alert">{html.escape(error)}</p>' if error else ""
    return _form_page(
        "Sign in to GitHub",
        f'{flash}<form action="/session" method="post" id="login">'
        f'<input type="hidden" name="return_to" value="{html.escape(return_to)}">'
        '<label for="login_field">Username or email address</label>'
        '<input type="text" name="login" id="login_field" autocomplete="username">'
        '<label for="password">Password</label>'
        '<input type="password" name="password" id="password" autocomplete="current-password">'
        '<input type="submit" name="commit" value="Sign in" id="sign-in"></form>',
    )


def _authorize_page(app: App, user: User, given: Any) -> Response:
    """GitHub's "Authorize <App>" page on a user's first authorization of the App."""
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(str(given[name]))}">'
        for name in ("client_id", "redirect_uri", "state")
        if given.get(name) is not None
    )
    return _form_page(
        f"Authorize {app.name}",
        f'<p id="signed-in-as">Signed in as {html.escape(user.login)}</p>'
        f'<form action="/login/oauth/authorize" method="post" id="authorize-form">{hidden}'
        '<button type="submit" name="authorize" value="0" id="js-oauth-authorize-cancel">'
        "Cancel</button>"
        '<button type="submit" name="authorize" value="1" id="js-oauth-authorize-btn">'
        f"Authorize {html.escape(app.name)}</button></form>",
    )


def _install_page(app: App, user: User, state: str | None) -> Response:
    """GitHub's "Install <App>" page: the user's own account, all repositories."""
    hidden = f'<input type="hidden" name="state" value="{html.escape(state)}">' if state else ""
    return _form_page(
        f"Install {app.name}",
        f"<p>Where do you want to install {html.escape(app.name)}?</p>"
        f'<form action="/apps/{app.slug}/installations/new" method="post" id="install-form">'
        f'{hidden}<label><input type="radio" name="account" value="{html.escape(user.login)}"'
        f' id="account-{html.escape(user.login)}" checked> {html.escape(user.login)}</label>'
        '<button type="submit" id="install">Install</button></form>',
    )


def _answer(request: Request, body: dict[str, Any]) -> Response:
    if "application/json" in request.headers.get("Accept", ""):
        return Response(json.dumps(body), status=200, content_type="application/json")
    return Response(urlencode(body), status=200, content_type="application/x-www-form-urlencoded")
