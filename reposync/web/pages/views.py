"""The web management page: Overview, Binding, Run and Activity, server-rendered.

Every read goes through ``service.queries`` as the signed-in user (a member sees what
the API shows them, no more), every change through ``service.authorization`` then the
operation, exactly as the JSON views do. A change is a POSTed form that redirects back
(so a reload never repeats it); a refused change renders the problem with its suggested
action instead. Live progress: ``static/run.js`` follows the API's own Server-Sent Event
stream with a stream token (``POST /runs/<id>/stream``) and re-renders the Run's live
part (``GET /runs/<id>/live``) as events arrive.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers.response import Response as BaseResponse

from reposync.config import Settings
from reposync.errors import (
    RecordNotFound,
    ReposyncError,
    ResultUnknown,
    Unauthenticated,
    UsageError,
)
from reposync.lifecycle import AuditMode, RunMode, Stage
from reposync.models import User
from reposync.service import github_connect
from reposync.service.authorization import (
    authorize_binding,
    authorize_connections,
    authorize_run,
    require_admin,
)
from reposync.service.bindings import (
    SyncRequest,
    bind_pair,
    confirm_visibility,
    sync_blockers,
    update_binding,
)
from reposync.service.confinement import confine
from reposync.service.handoff import start_handoff
from reposync.service.queries import (
    get_binding_for,
    get_run_for,
    last_event_seq,
    list_runs,
    overview,
    run_events,
    run_items,
    run_progress,
    stage_times,
    unknown_writes,
)
from reposync.service.recovery import recover_run
from reposync.service.runs import enqueue_run, request_cancel, retry_run
from reposync.service.users import grant, issue_stream_token
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web import github as github_api
from reposync.web.pages import session
from reposync.web.redaction import redact_paths

blueprint = Blueprint(
    "pages",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/ui/static",
)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
#: Endpoints open without a session.
PUBLIC = {"pages.signin", "pages.static"}
PAGE_SIZE = 25
#: Events the Run page renders before the live stream takes over.
RECENT_EVENTS = 100
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
ITEM_STATES = ("pending", "applying", "completed", "skipped", "blocked", "failed")


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
    return response


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


def _user() -> User:
    user: User = g.user
    return user


def _problem_page(error: ReposyncError | HTTPException) -> tuple[str, int]:
    if isinstance(error, ReposyncError):
        status, title, detail = error.http_status, error.code, error.message
        action = error.suggested_action
    else:
        status, title, detail = error.code or 500, error.name, error.description or ""
        action = ""
    if status >= 500 and isinstance(error, ReposyncError):
        current_app.logger.exception("the web page failed")
        detail = "an internal error occurred; the server log has details"
    back = request.referrer if _same_site(request.referrer) else url_for("pages.index")
    page = render_template(
        "pages/problem.html", status=status, title=title, detail=detail, action=action, back=back
    )
    return page, status


@blueprint.errorhandler(ReposyncError)
def _reposync_error(error: ReposyncError) -> tuple[str, int]:
    return _problem_page(error)


@blueprint.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> tuple[str, int]:
    return _problem_page(error)


def _same_site(target: str | None) -> bool:
    """Only a path of this site may be a redirect's target (no open redirect)."""
    if not target:
        return False
    if "\\" in target:  # a browser reads a backslash there as a slash (`//host`)
        return False
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return parts.netloc == request.host
    return target.startswith("/") and not target.startswith("//")


# --- signing in and out -----------------------------------------------------------------


@blueprint.route("/signin", methods=["GET", "POST"])
def signin() -> BaseResponse | str | tuple[str, int]:
    """The sign-in form: an API token in, a session cookie out."""
    target = request.values.get("next", "")
    if _same_site(target):
        parts = urlsplit(target)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    else:
        target = "/"
    if request.method == "GET":
        return render_template("pages/signin.html", next=target, error=None)
    if not session.csrf_valid(request.cookies.get(session.SIGNIN_COOKIE)):
        abort(400, "the sign-in form's CSRF token is missing or wrong: reload the page")
    try:
        _, secret = session.sign_in(request.form.get("token", "").strip())
    except Unauthenticated as exc:
        return render_template("pages/signin.html", next=target, error=exc.message), 401
    response = redirect(target)
    session.set_cookie(
        response, session.SESSION_COOKIE, secret, max_age=session.SESSION_DAYS * 86400
    )
    session.clear_cookie(response, session.SIGNIN_COOKIE)
    return response


@blueprint.route("/signout", methods=["POST"])
def signout() -> BaseResponse:
    session.sign_out()
    response = redirect(url_for("pages.signin"))
    session.clear_cookie(response, session.SESSION_COOKIE)
    return response


# --- Overview -----------------------------------------------------------------------------


@blueprint.route("/")
def index() -> str:
    """Every Binding the user may see, with health, authority, schedule and Runs."""
    ctx, user = session.service_context(), _user()
    entries = overview(ctx, user)
    return render_template(
        "pages/overview.html",
        entries=entries,
        policies=[p.value for p in RefConflictPolicy],
        picks=github_connect.repositories(ctx, user.id),
    )


def _side(form_prefix: str) -> tuple[str, str | None]:
    """A side of the New Binding form: a picked repository (``<connection id> <locator>``,
    from the user's Connect GitHub grants) wins over the typed locator."""
    picked = request.form.get(f"{form_prefix}_pick", "").strip()
    if picked:
        connection, _, locator = picked.partition(" ")
        return locator.strip(), connection
    return request.form.get(form_prefix, "").strip(), None


@blueprint.route("/bindings", methods=["POST"])
def create_binding() -> BaseResponse:
    """Bind two repositories as ``POST /bindings`` does; then its page. An admin binds
    any locators; a member binds repositories picked from their Connect GitHub grants
    (``authorize_connections``), and is granted both, as through the API."""
    ctx, user = session.service_context(), _user()
    (source, source_connection), (target, target_connection) = _side("source"), _side("target")
    if not source or not target:
        raise UsageError("a Binding needs a source and a target")
    admit = authorize_connections(
        ctx, user, ((source, source_connection), (target, target_connection))
    )
    policy = request.form.get("ref_conflict_policy") or None
    bound, _ = bind_pair(
        ctx,
        SyncRequest(
            confine(source, ctx.settings),
            confine(target, ctx.settings),
            conflict_policy=RefConflictPolicy(policy) if policy else None,
            source_connection=source_connection,
            target_connection=target_connection,
            create_target=admit is None,
        ),
        admit,
    )
    if admit is not None:  # a member: they see (and may run) what they bound
        grant(ctx, user.id, bound.a_provider, bound.a_repository_id)
        grant(ctx, user.id, bound.b_provider, bound.b_repository_id)
    if request.form.get("confirm_visibility"):
        confirm_visibility(ctx, bound.id)
    return redirect(url_for("pages.binding", binding_id=bound.id))


# --- GitHub (Connect GitHub) -----------------------------------------------------------

#: What the GitHub page says after the callback sent the browser back.
OUTCOMES = {
    "connected": "Connected: GitHub showed your installations and repositories.",
    "installation_pending": (
        "Installed, but GitHub has not listed the new installation yet: "
        "Connect GitHub again in a minute to add it."
    ),
    "refused": "GitHub did not connect (the authorization was declined); nothing changed.",
    "disconnected": "Disconnected: your GitHub identity and grants are forgotten here.",
}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@blueprint.route("/github")
def github() -> str:
    """The user's GitHub identity, their installations (with GitHub's page to manage
    each) and the repositories they may bind; the buttons that start Connect GitHub."""
    ctx, user = session.service_context(), _user()
    enabled = ctx.settings.github_connect_enabled
    if enabled:
        g.form_action = _origin(ctx.settings.github_oauth_url)
    found = github_connect.connection(ctx, user.id)
    return render_template(
        "pages/github.html",
        enabled=enabled,
        account=found.account,
        installations=found.installations,
        repositories=github_connect.repositories(ctx, user.id),
        connection_id=github_connect.connection_id,
        outcome=OUTCOMES.get(request.args.get("outcome", "")),
        outcome_key=request.args.get("outcome", ""),
    )


@blueprint.route("/github/start", methods=["POST"])
def github_start() -> BaseResponse:
    """Connect GitHub (``authorize``) or Install the App (``install``), as the API's
    ``POST /github/*/start`` but remembered as started here: the callback sends the
    browser back to this page. The browser goes to GitHub at once (303)."""
    ctx, user = session.service_context(), _user()
    flow = request.form.get("flow", "")
    if flow not in github_connect.FLOWS:
        raise UsageError(f"flow must be one of {', '.join(github_connect.FLOWS)}")
    started = github_connect.start(ctx, user.id, flow, github_api.redirect_uri(), origin="page")
    response = redirect(started.url, code=303)
    github_api.set_flow_cookie(response, started)
    return response


@blueprint.route("/github/disconnect", methods=["POST"])
def github_disconnect() -> BaseResponse:
    """Disconnect, as ``DELETE /github/account``: the identity and grants are forgotten;
    Bindings made through them keep working (the installation's token opens them)."""
    ctx, user = session.service_context(), _user()
    if not github_connect.disconnect(ctx, user.id):
        raise RecordNotFound("you have not connected a GitHub account")
    return redirect(url_for("pages.github", outcome="disconnected"))


# --- Binding ------------------------------------------------------------------------------


@blueprint.route("/bindings/<int:binding_id>")
def binding(binding_id: int) -> str:
    """A Binding's settings and actions, and why sync can or cannot be enabled."""
    ctx, user = session.service_context(), _user()
    entries = overview(ctx, user, binding_id=binding_id)
    if not entries:
        raise RecordNotFound(f"binding {binding_id} does not exist")  # not visible: the same
    entry = entries[0]
    recent = list_runs(ctx, user, binding_id=binding_id, limit=10)
    return render_template(
        "pages/binding.html",
        entry=entry,
        b=entry["binding"],
        blockers=sync_blockers(ctx, binding_id),
        runs=recent,
        policies=[p.value for p in RefConflictPolicy],
        is_admin=user.role == "admin",
    )


@blueprint.route("/bindings/<int:binding_id>/settings", methods=["POST"])
def binding_settings(binding_id: int) -> BaseResponse:
    """Change what ``PATCH /bindings/{id}`` changes (admin); only the fields that moved."""
    ctx, user = session.service_context(), _user()
    require_admin(user)
    authorize_binding(ctx, user, binding_id)
    current = get_binding_for(ctx, user, binding_id)
    form = request.form
    changes: dict[str, Any] = {}
    cron = form.get("schedule_cron", "").strip() or None
    if cron != current.schedule_cron:
        changes["schedule_cron"] = cron
    policy = form.get("ref_conflict_policy") or current.ref_conflict_policy
    if policy != current.ref_conflict_policy:
        changes["ref_conflict_policy"] = RefConflictPolicy(policy)
    interval = form.get("full_audit_interval", "").strip()
    if interval and interval != str(current.full_audit_interval):
        try:
            changes["full_audit_interval"] = int(interval)
        except ValueError as exc:
            raise UsageError("full_audit_interval is a number of seconds") from exc
    confirm = bool(form.get("confirm_visibility"))
    if confirm and current.visibility_confirmation is None:
        confirm_visibility(ctx, binding_id)
    elif not confirm and current.visibility_confirmation is not None:
        changes["visibility_confirmation"] = None
    enabled = bool(form.get("sync_enabled"))
    if enabled != current.sync_enabled:
        changes["sync_enabled"] = enabled
    if changes:
        update_binding(ctx, binding_id, **changes)
    return redirect(url_for("pages.binding", binding_id=binding_id))


RUN_ACTIONS = {
    "sync": {"mode": RunMode.APPLY, "audit_mode": AuditMode.CHECKPOINT},
    "dry_run": {"mode": RunMode.DRY_RUN, "audit_mode": AuditMode.CHECKPOINT},
    "full_audit": {"mode": RunMode.APPLY, "audit_mode": AuditMode.FULL},
}


@blueprint.route("/bindings/<int:binding_id>/runs", methods=["POST"])
def start_run(binding_id: int) -> BaseResponse:
    """Sync now, dry-run or full audit (admin, or a grant): then the new Run's page."""
    ctx = session.service_context()
    authorize_binding(ctx, _user(), binding_id)
    options = RUN_ACTIONS.get(request.form.get("action", ""))
    if options is None:
        raise UsageError(f"action must be one of {', '.join(RUN_ACTIONS)}")
    run = enqueue_run(ctx, binding_id, **options)
    return redirect(url_for("pages.run", run_id=run.id))


@blueprint.route("/bindings/<int:binding_id>/handoff", methods=["POST"])
def handoff(binding_id: int) -> BaseResponse:
    """Hand authority over (admin): the handoff Run's page shows its reverse dry-run."""
    ctx, user = session.service_context(), _user()
    require_admin(user)
    authorize_binding(ctx, user, binding_id)
    run = start_handoff(ctx, binding_id)
    return redirect(url_for("pages.run", run_id=run.id))


# --- Run ----------------------------------------------------------------------------------


def _live_context(run_id: int) -> dict[str, Any]:
    """What the Run page's live part shows; re-rendered as events arrive."""
    ctx, user = session.service_context(), _user()
    run = get_run_for(ctx, user, run_id)
    progress = run_progress(ctx, user, run_id)
    reached = stage_times(ctx, user, run_id)
    order = [stage.value for stage in Stage]
    current = order.index(run.stage) if run.stage in order else 0
    timeline = [
        {
            "stage": stage,
            "state": "done" if i < current else "current" if i == current else "pending",
            "at": reached.get(stage),
        }
        for i, stage in enumerate(order)
    ]
    problems = list((run.report or {}).get("problems", []))
    if run.error_code and not any(p.get("error_code") == run.error_code for p in problems):
        problems.insert(
            0,
            {
                "error_code": run.error_code,
                "message": run.error_message or "",
                "suggested_action": _suggested(run.error_code),
                "retryable": True,
                "count": 1,
            },
        )
    unknown = unknown_writes(ctx, user, run_id)
    problems = [p for p in problems if p.get("error_code") != ResultUnknown.code]
    if unknown:
        problems.insert(
            0,
            {
                "error_code": ResultUnknown.code,
                "message": f"{unknown} write(s) whose outcome nobody observed",
                "suggested_action": ResultUnknown.suggested_action,
                "retryable": False,
                "count": unknown,
            },
        )
    handoff_info = (run.report or {}).get("handoff")
    reverse = None
    if handoff_info and handoff_info.get("reverse_run_id"):
        reverse = get_run_for(ctx, user, handoff_info["reverse_run_id"])
    return {
        "run": run,
        "progress": progress,
        "timeline": timeline,
        "problems": problems,
        "unknown": unknown,
        "handoff": handoff_info,
        "reverse": reverse,
        "grant_url": _grant_url(ctx.settings, run.binding_id),
    }


def _suggested(code: str) -> str:
    from reposync import errors

    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, ReposyncError) and value.code == code:
            return value.suggested_action
    return ReposyncError.suggested_action


def _grant_url(settings: Settings, binding_id: int) -> str | None:
    """Where a GitHub App's access is granted (a permission problem's action): this
    page's GitHub page when Connect GitHub is configured (install, authorize, and each
    installation's GitHub page from there), GitHub's installations page otherwise; None
    for a Binding without a GitHub side (an admin grants local access on the server)."""
    binding = get_binding_for(session.service_context(), _user(), binding_id)
    if "github" not in (binding.a_provider, binding.b_provider):
        return None
    if settings.github_connect_enabled:
        return url_for("pages.github")
    return f"{settings.github_git_url.rstrip('/')}/settings/installations"


@blueprint.route("/runs/<int:run_id>")
def run(run_id: int) -> str:
    """A Run: stage timeline, live progress and events, items, problems and actions."""
    ctx, user = session.service_context(), _user()
    live = _live_context(run_id)
    last = last_event_seq(ctx, run_id)
    events = run_events(
        ctx, user, run_id, after_seq=max(0, last - RECENT_EVENTS), limit=RECENT_EVENTS
    ).items
    state = request.args.get("state") or None
    object_type = request.args.get("type") or None
    after = request.args.get("after_id", type=int)
    items = run_items(
        ctx,
        user,
        run_id,
        state=state,
        object_type=object_type,
        after_id=after,
        limit=PAGE_SIZE,
    )
    return render_template(
        "pages/run.html",
        **live,
        events=events,
        last_seq=events[-1].seq if events else last,
        items=items,
        item_states=ITEM_STATES,
        item_filter={"state": state or "", "type": object_type or ""},
        next_items=items[-1].id if len(items) == PAGE_SIZE else None,
    )


@blueprint.route("/runs/<int:run_id>/live")
def live(run_id: int) -> str:
    """The Run page's live part alone (status, timeline, progress, problems, actions)."""
    return render_template("pages/run_live.html", **_live_context(run_id))


@blueprint.route("/runs/<int:run_id>/stream", methods=["POST"])
def stream(run_id: int) -> Response:
    """A stream token for the API's event stream of this Run (the page's EventSource
    cannot send the session as a header, and the cookie is for pages only)."""
    ctx, user = session.service_context(), _user()
    authorize_run(ctx, user, run_id)
    token, expires_at = issue_stream_token(ctx, user, run_id)
    url = url_for("events.RunEventsView", run_id=run_id, access_token=token)
    return jsonify({"url": url, "expires_at": expires_at.isoformat()})


@blueprint.route("/runs/<int:run_id>/cancel", methods=["POST"])
def cancel(run_id: int) -> BaseResponse:
    ctx = session.service_context()
    authorize_run(ctx, _user(), run_id)
    request_cancel(ctx, run_id)
    return redirect(url_for("pages.run", run_id=run_id))


@blueprint.route("/runs/<int:run_id>/retry", methods=["POST"])
def retry(run_id: int) -> BaseResponse:
    ctx = session.service_context()
    authorize_run(ctx, _user(), run_id)
    new = retry_run(ctx, run_id)
    return redirect(url_for("pages.run", run_id=new.id))


@blueprint.route("/runs/<int:run_id>/recover", methods=["POST"])
def recover(run_id: int) -> BaseResponse:
    ctx = session.service_context()
    authorize_run(ctx, _user(), run_id)
    counts = recover_run(ctx, run_id)
    query = urlencode({f"recovered_{name}": count for name, count in counts.items()})
    return redirect(url_for("pages.run", run_id=run_id) + "?" + query)


# --- Activity -----------------------------------------------------------------------------


@blueprint.route("/activity")
def activity() -> str:
    """Runs across the visible Bindings, newest first, filtered, a page at a time."""
    ctx, user = session.service_context(), _user()
    status = request.args.get("status") or None
    if status is not None and status not in STATUSES:
        raise UsageError(f"status must be one of {', '.join(STATUSES)}")
    binding_id = request.args.get("binding_id", type=int)
    after = request.args.get("after_id", type=int)
    runs = list_runs(
        ctx, user, status=status, binding_id=binding_id, after_id=after, limit=PAGE_SIZE
    )
    return render_template(
        "pages/activity.html",
        runs=runs,
        statuses=STATUSES,
        status=status or "",
        binding_id=binding_id or "",
        next_after=runs[-1].id if len(runs) == PAGE_SIZE else None,
    )
