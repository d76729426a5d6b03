"""The web management page: Overview, Binding, Run and Activity, server-rendered.

Every read goes through ``service.queries`` as the signed-in user (a member sees what
the API shows them, no more), every change through ``service.authorization`` then the
operation, exactly as the JSON views do. A change is a POSTed form that redirects back
(so a reload never repeats it); a refused change renders the problem with its suggested
action instead (``common``). The Run page is in ``runs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flask import (
    abort,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.wrappers.response import Response as BaseResponse

from reposync.errors import (
    RecordNotFound,
    TooManyAttempts,
    Unauthenticated,
    UsageError,
)
from reposync.lifecycle import AuditMode, RunMode
from reposync.models import Binding
from reposync.service.accounts import github_connect
from reposync.service.accounts.authorization import (
    authorize_binding,
    authorize_connections,
    require_admin,
)
from reposync.service.accounts.users import grant
from reposync.service.bindings import (
    SyncRequest,
    bind_pair,
    confirm_visibility,
    sync_blockers,
    update_binding,
)
from reposync.service.confinement import confine
from reposync.service.handoff import start_handoff
from reposync.service.overview import OverviewRow, overview, overview_rows, run_history
from reposync.service.queries import get_binding_for, list_runs
from reposync.service.runs import enqueue_run
from reposync.service.scheduling.waits import waiting
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web.endpoints import github as github_api
from reposync.web.errors import retry_headers
from reposync.web.pages import glance, session
from reposync.web.pages.common import PAGE_SIZE, STATUSES, blueprint, same_site, signed_in_user
from reposync.web.pages.runs import last_problem

# --- signing in and out -----------------------------------------------------------------


@blueprint.route("/signin", methods=["GET", "POST"])
def signin() -> BaseResponse | str | tuple[str, int] | tuple[str, int, dict[str, str]]:
    """The sign-in form: an API token in, a session cookie out."""
    target = request.values.get("next", "")
    if same_site(target):
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
    except TooManyAttempts as exc:
        page = render_template("pages/signin.html", next=target, error=exc.message)
        return page, 429, retry_headers(exc)
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


#: The Overview's orders: worst state first (the default), by name, longest out of
#: sync first, next scheduled Run first. Each key puts what has no value last.
SORTS = ("state", "name", "last_sync", "next")
_LATE = datetime.max.replace(tzinfo=UTC)
_EARLY = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Entry:
    """One Overview row as the template shows it."""

    row: OverviewRow
    authority: str
    standby: str
    state: glance.State
    problem: dict[str, Any] | None
    fraction: glance.Fraction

    @property
    def b(self) -> Binding:
        return self.row.binding

    @classmethod
    def of(cls, row: OverviewRow) -> Entry:
        b = row.binding
        authority, standby = (
            (b.a_locator, b.b_locator) if b.authority_side == "a" else (b.b_locator, b.a_locator)
        )
        return cls(
            row,
            authority,
            standby,
            glance.state_of(row),
            last_problem(row),
            glance.settled(row.progress),
        )


def _sort_key(sort: str) -> Callable[[Entry], tuple[Any, ...]]:
    def key(entry: Entry) -> tuple[Any, ...]:
        b = entry.b
        if sort == "name":
            return (entry.authority.casefold(), b.id)
        if sort == "last_sync":
            return (entry.row.last_in_sync_at or _EARLY, b.id)
        if sort == "next":
            return (b.next_run_at or _LATE, b.id)
        return (entry.state.rank, entry.authority.casefold(), b.id)

    return key


def _overview_entries() -> tuple[list[Entry], dict[str, Any]]:
    """The Overview's rows as the query string filters (``q``: text in either side's
    locator; ``state``: one state) and orders them (``sort``), and the count of each
    state over all rows; rows and counts come from one fixed set of statements."""
    ctx, user = session.service_context(), signed_in_user()
    text = request.args.get("q", "").strip()
    state = request.args.get("state", "")
    sort = request.args.get("sort", "state")
    if state and glance.state_named(state) is None:
        raise UsageError(f"state must be one of {', '.join(s.key for s in glance.STATES)}")
    if sort not in SORTS:
        raise UsageError(f"sort must be one of {', '.join(SORTS)}")
    entries = []
    counts = dict.fromkeys((s.key for s in glance.STATES), 0)
    rows = overview_rows(ctx, user)
    waits = waiting(ctx, [row.active for row in rows if row.active is not None])
    for row in rows:
        if row.active is not None and row.active.id in waits:
            row.active = replace(row.active, waiting=waits[row.active.id])
        entry = Entry.of(row)
        counts[entry.state.key] += 1
        if state and entry.state.key != state:
            continue
        if text and text.casefold() not in f"{entry.authority}\n{entry.standby}".casefold():
            continue
        entries.append(entry)
    entries.sort(key=_sort_key(sort))
    query = {"q": text, "state": state, "sort": sort}
    return entries, {"counts": counts, "query": query, "total": sum(counts.values())}


@blueprint.route("/")
def index() -> str:
    """Every Binding the user may see, one row each: its state, when it was last in
    sync, its next scheduled Run, the active Run's progress and the last problem."""
    ctx, user = session.service_context(), signed_in_user()
    entries, summary = _overview_entries()
    return render_template(
        "pages/overview.html",
        entries=entries,
        states=glance.STATES,
        sorts=SORTS,
        **summary,
        policies=[p.value for p in RefConflictPolicy],
        picks=github_connect.repositories(ctx, user.id),
    )


@blueprint.route("/overview/rows")
def overview_rows_part() -> str:
    """The Overview's table body alone, as filtered and sorted: ``overview.js`` swaps it
    in every few seconds, so progress and states move without a reload."""
    entries, summary = _overview_entries()
    return render_template("pages/_overview_rows.html", entries=entries, **summary)


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
    (``authorize_connections``), and is granted both, as through the API. A standby more
    public than the authority needs the form's visibility checkbox (the problem page
    says so otherwise, and nothing is written)."""
    ctx, user = session.service_context(), signed_in_user()
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
            confirm_visibility=bool(request.form.get("confirm_visibility")),
        ),
        admit,
    )
    if admit is not None:  # a member: they see (and may run) what they bound
        grant(ctx, user.id, bound.a_provider, bound.a_repository_id)
        grant(ctx, user.id, bound.b_provider, bound.b_repository_id)
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
    ctx, user = session.service_context(), signed_in_user()
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
    ctx, user = session.service_context(), signed_in_user()
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
    ctx, user = session.service_context(), signed_in_user()
    if not github_connect.disconnect(ctx, user.id):
        raise RecordNotFound("you have not connected a GitHub account")
    return redirect(url_for("pages.github", outcome="disconnected"))


# --- Binding ------------------------------------------------------------------------------


#: Runs in the Binding page's history chart.
HISTORY_RUNS = 30


@blueprint.route("/bindings/<int:binding_id>")
def binding(binding_id: int) -> str:
    """A Binding's settings and actions, and why sync can or cannot be enabled."""
    ctx, user = session.service_context(), signed_in_user()
    entries = overview(ctx, user, binding_id=binding_id)
    if not entries:
        raise RecordNotFound(f"binding {binding_id} does not exist")  # not visible: the same
    entry = entries[0]
    recent = list_runs(ctx, user, binding_id=binding_id, limit=10)
    history = run_history(ctx, user, binding_id, limit=HISTORY_RUNS)
    return render_template(
        "pages/binding.html",
        entry=entry,
        b=entry["binding"],
        chart=glance.history_chart(history, slots=HISTORY_RUNS),
        blockers=sync_blockers(ctx, binding_id),
        runs=recent,
        policies=[p.value for p in RefConflictPolicy],
        is_admin=user.role == "admin",
    )


@blueprint.route("/bindings/<int:binding_id>/settings", methods=["POST"])
def binding_settings(binding_id: int) -> BaseResponse:
    """Change what ``PATCH /bindings/{id}`` changes (admin); only the fields that moved."""
    ctx, user = session.service_context(), signed_in_user()
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


#: The page's Run buttons: (mode, audit mode) of each.
RUN_ACTIONS = {
    "sync": (RunMode.APPLY, AuditMode.CHECKPOINT),
    "dry_run": (RunMode.DRY_RUN, AuditMode.CHECKPOINT),
    "full_audit": (RunMode.APPLY, AuditMode.FULL),
}


@blueprint.route("/bindings/<int:binding_id>/runs", methods=["POST"])
def start_run(binding_id: int) -> BaseResponse:
    """Sync now, dry-run or full audit (admin, or a grant): then the new Run's page."""
    ctx = session.service_context()
    authorize_binding(ctx, signed_in_user(), binding_id)
    action = RUN_ACTIONS.get(request.form.get("action", ""))
    if action is None:
        raise UsageError(f"action must be one of {', '.join(RUN_ACTIONS)}")
    mode, audit_mode = action
    run = enqueue_run(ctx, binding_id, mode=mode, audit_mode=audit_mode)
    return redirect(url_for("pages.run", run_id=run.id))


@blueprint.route("/bindings/<int:binding_id>/handoff", methods=["POST"])
def handoff(binding_id: int) -> BaseResponse:
    """Hand authority over (admin): the handoff Run's page shows its reverse dry-run.
    The form's box is the word that writes stopped (a GitHub authority needs it)."""
    ctx, user = session.service_context(), signed_in_user()
    require_admin(user)
    authorize_binding(ctx, user, binding_id)
    stopped = bool(request.form.get("confirm_writes_stopped"))
    run = start_handoff(ctx, binding_id, writes_stopped=stopped)
    return redirect(url_for("pages.run", run_id=run.id))


# --- Activity -----------------------------------------------------------------------------


@blueprint.route("/activity")
def activity() -> str:
    """Runs across the visible Bindings, newest first, filtered, a page at a time."""
    ctx, user = session.service_context(), signed_in_user()
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
