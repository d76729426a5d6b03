"""The Run page: stage timeline, progress, problems with their action as a button, items,
and the actions themselves (cancel, retry, recover).

A problem's action follows its kind (``problem_type``, ``ProblemType``): ``KIND_ACTIONS``
says what to do in words and the template offers the button or link that does it; a
notice (a problem whose ``category`` is one of ``NOTICE_CATEGORIES``: nothing failed) is
shown as a note, without one.

Live progress: ``static/run.js`` follows the API's own Server-Sent Event stream with a
stream token (``POST /runs/<id>/stream``) and re-renders the Run's live part
(``GET /runs/<id>/live``) as events arrive.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import (
    Response,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.wrappers.response import Response as BaseResponse

from reposync.config import Settings
from reposync.errors import (
    ProblemType,
    ReposyncError,
    ResultUnknown,
    error_class,
)
from reposync.lifecycle import Stage
from reposync.service.authorization import (
    authorize_run,
)
from reposync.service.queries import (
    get_binding_for,
    get_run_for,
    last_event_seq,
    run_events,
    run_items,
    run_progress,
    stage_times,
    unknown_writes,
)
from reposync.service.recovery import recover_run
from reposync.service.runs import request_cancel, retry_run
from reposync.service.users import issue_stream_token
from reposync.sync.report import NOTICE_CATEGORIES, problem_type_of
from reposync.web.pages import session
from reposync.web.pages.common import PAGE_SIZE, blueprint, signed_in_user

#: Events the Run page renders before the live stream takes over.
RECENT_EVENTS = 100
ITEM_STATES = ("pending", "applying", "completed", "skipped", "blocked", "failed")
#: What to do about each kind of problem (README's "Problem types" says the same); the
#: template puts the button or link beside it.
KIND_ACTIONS: dict[ProblemType, str] = {
    ProblemType.AUTHORIZATION_REQUIRED: (
        "grant reposync's credentials the access named (Grant access), or confirm the "
        "visibility on the Binding"
    ),
    ProblemType.TEMPORARILY_RATE_LIMITED: "nothing: the Run waits for the limit and resumes",
    ProblemType.QUOTA_EXCEEDED: "raise the forge's quota or remove data, then Retry",
    ProblemType.EXTERNAL_RESULT_UNKNOWN: "Recover: read-back proves what each write did",
    ProblemType.REPOSITORY_CONFLICT: (
        "resolve the objects on the standby, or choose the Binding's conflict policy"
    ),
    ProblemType.VERIFICATION_FAILED: "run a Full audit: it reads every managed object back",
    ProblemType.SYNC_FAILED: "read the message and the suggestion, fix the cause, then Retry",
}


def _shown(problem: dict[str, Any]) -> dict[str, Any]:
    """A report's problem as the page shows it: its kind (a report written before kinds
    existed has none: the error tree's, by code), whether it is a notice, and the kind's
    action."""
    stated = problem.get("problem_type")
    kinds = {kind.value for kind in ProblemType}
    kind = ProblemType(stated) if stated in kinds else problem_type_of(problem["error_code"])
    return {
        **problem,
        "problem_type": kind.value,
        "notice": problem.get("category") in NOTICE_CATEGORIES,
        "kind_action": KIND_ACTIONS[kind],
    }


# --- Run ----------------------------------------------------------------------------------


def _live_context(run_id: int) -> dict[str, Any]:
    """What the Run page's live part shows; re-rendered as events arrive."""
    ctx, user = session.service_context(), signed_in_user()
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
                "category": "run_error",
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
                "category": "blocked",
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
        "problems": [_shown(p) for p in problems],
        "unknown": unknown,
        "handoff": handoff_info,
        "reverse": reverse,
        "grant_url": _grant_url(ctx.settings, run.binding_id),
    }


def _suggested(code: str) -> str:
    known = error_class(code)
    return (known or ReposyncError).suggested_action


def _grant_url(settings: Settings, binding_id: int) -> str | None:
    """Where a GitHub App's access is granted (a permission problem's action): this
    page's GitHub page when Connect GitHub is configured (install, authorize, and each
    installation's GitHub page from there), GitHub's installations page otherwise; None
    for a Binding without a GitHub side (an admin grants local access on the server)."""
    binding = get_binding_for(session.service_context(), signed_in_user(), binding_id)
    if "github" not in (binding.a_provider, binding.b_provider):
        return None
    if settings.github_connect_enabled:
        return url_for("pages.github")
    return f"{settings.github_git_url.rstrip('/')}/settings/installations"


@blueprint.route("/runs/<int:run_id>")
def run(run_id: int) -> str:
    """A Run: stage timeline, live progress and events, items, problems and actions."""
    ctx, user = session.service_context(), signed_in_user()
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
    ctx, user = session.service_context(), signed_in_user()
    authorize_run(ctx, user, run_id)
    token, expires_at = issue_stream_token(ctx, user, run_id)
    url = url_for("events.RunEventsView", run_id=run_id, access_token=token)
    return jsonify({"url": url, "expires_at": expires_at.isoformat()})


@blueprint.route("/runs/<int:run_id>/cancel", methods=["POST"])
def cancel(run_id: int) -> BaseResponse:
    ctx = session.service_context()
    authorize_run(ctx, signed_in_user(), run_id)
    request_cancel(ctx, run_id)
    return redirect(url_for("pages.run", run_id=run_id))


@blueprint.route("/runs/<int:run_id>/retry", methods=["POST"])
def retry(run_id: int) -> BaseResponse:
    ctx = session.service_context()
    authorize_run(ctx, signed_in_user(), run_id)
    new = retry_run(ctx, run_id)
    return redirect(url_for("pages.run", run_id=new.id))


@blueprint.route("/runs/<int:run_id>/recover", methods=["POST"])
def recover(run_id: int) -> BaseResponse:
    ctx = session.service_context()
    authorize_run(ctx, signed_in_user(), run_id)
    counts = recover_run(ctx, run_id)
    query = urlencode({f"recovered_{name}": count for name, count in counts.items()})
    return redirect(url_for("pages.run", run_id=run_id) + "?" + query)
