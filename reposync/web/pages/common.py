"""What every page shares: the blueprint, the session and CSRF checks every request
passes, the response headers, and how a refused change is shown.

The views (``views``: sign-in, Overview, Binding, GitHub, Activity; ``runs``: the Run
page and its actions) register their routes on ``blueprint``; ``reposync.web.pages``
imports both, so each route exists once the package is imported.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    send_from_directory,
    url_for,
)
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.wrappers.response import Response as BaseResponse

from reposync.errors import (
    DatabaseUnavailable,
    ReposyncError,
)
from reposync.models import User
from reposync.web.errors import database_unavailable, retry_headers
from reposync.web.pages import glance, session
from reposync.web.redaction import redact_paths

blueprint = Blueprint(
    "pages",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/ui/static",
)

glance.register(blueprint)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
#: Endpoints open without a session.
PUBLIC = {"pages.signin", "pages.static", "pages.favicon"}
PAGE_SIZE = 25
STATUSES = (
    "queued",
    "running",
    "completed",
    "completed_with_pending_changes",
    "requires_attention",
    "blocked",
    "failed",
    "cancelled",
)


@blueprint.before_request
def _require_session() -> BaseResponse | None:
    """No session: to the sign-in form; a POST without its CSRF token: 400."""
    if request.endpoint in PUBLIC:
        return None
    user = session.page_user()
    if user is None:
        if request.method == "GET" and request.endpoint != "pages.live":
            return redirect(url_for("pages.signin", next=request.full_path.rstrip("?")))
        abort(401)
    g.user = user  # redaction (web/redaction.py) reads who is looking from here
    if request.method == "POST" and not session.csrf_valid(session.session_secret()):
        abort(400, "the form's CSRF token is missing or wrong: reload the page and try again")
    return None


@blueprint.after_request
def _no_store(response: Response) -> Response:
    """Pages show one user's data: never cached; the sign-in nonce set when made."""
    response.headers["Cache-Control"] = "no-store"
    response.headers.setdefault("X-Frame-Options", "DENY")
    # Everything the page loads is reposync's own; no inline script runs, no other site
    # frames it or receives its forms.
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    extra = g.get("form_action")
    if extra:  # the GitHub page's forms end at GitHub (a redirect CSP also checks)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.replace(
            "form-action 'self'", f"form-action 'self' {extra}"
        )
    nonce = g.get("new_signin_nonce")
    if nonce:
        session.set_cookie(response, session.SIGNIN_COOKIE, nonce, max_age=3600)
    if g.get("stale_session"):  # counted once toward the throttle, then forgotten
        session.clear_cookie(response, session.SESSION_COOKIE)
    return response


@blueprint.route("/favicon.ico")
def favicon() -> Response:
    """Browsers ask for ``/favicon.ico`` whatever the page links: the same SVG icon."""
    assert blueprint.static_folder is not None
    return send_from_directory(
        blueprint.static_folder, "favicon.svg", mimetype="image/svg+xml", max_age=86400
    )


@blueprint.app_template_global()
def csrf() -> str:
    """The CSRF token of this page's forms."""
    secret = session.session_secret() if g.get("user") else session.signin_nonce()
    return session.csrf_token(secret)


@blueprint.app_template_filter("shown")
def shown(value: Any) -> Any:
    """What the API shows this user of a message: server paths only for admins."""
    user: User | None = g.get("user")
    if value is None or (user is not None and user.role == "admin"):
        return value
    return redact_paths(value)


def signed_in_user() -> User:
    user: User = g.user
    return user


Page = tuple[str, int, dict[str, str]]


def problem_page(error: ReposyncError | HTTPException) -> Page:
    """An error as an HTML page (the status, what happened, what to do, a way back),
    for the page's routes and for any path outside the API that no route matched."""
    headers: dict[str, str] = {}
    if isinstance(error, ReposyncError):
        status, title, detail = error.http_status, error.code, error.message
        action = error.suggested_action
        headers = retry_headers(error)
    else:
        status, title, detail = error.code or 500, error.name, error.description or ""
        action = ""
    # A database outage's message names nothing inside (and its cause is logged already).
    if (
        status >= 500
        and isinstance(error, ReposyncError)
        and not isinstance(error, DatabaseUnavailable)
    ):
        current_app.logger.exception("the web page failed")
        detail = "an internal error occurred; the server log has details"
    back = request.referrer if same_site(request.referrer) else url_for("pages.index")
    page = render_template(
        "pages/problem.html", status=status, title=title, detail=detail, action=action, back=back
    )
    return page, status, headers


@blueprint.errorhandler(ReposyncError)
def _reposync_error(error: ReposyncError) -> Page:
    return problem_page(error)


@blueprint.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Page:
    return problem_page(error)


@blueprint.errorhandler(Exception)
def _unexpected(error: Exception) -> Page:
    """A page's database outage is the problem page's 503 (as the API's), anything else
    its 500, not the API's JSON."""
    unavailable = database_unavailable(error)
    if unavailable is not None:
        return problem_page(unavailable)
    current_app.logger.error("the web page failed", exc_info=error)
    return problem_page(InternalServerError())


def same_site(target: str | None) -> bool:
    """Only a path of this site may be a redirect's target (no open redirect)."""
    if not target:
        return False
    if "\\" in target:  # a browser reads a backslash there as a slash (`//host`)
        return False
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return parts.netloc == request.host
    return target.startswith("/") and not target.startswith("//")
