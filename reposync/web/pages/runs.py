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

from datetime import datetime
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
from reposync.models import Run
from reposync.service.accounts.authorization import (
    authorize_run,
)
from reposync.service.accounts.users import issue_stream_token
from reposync.service.overview import OverviewRow
from reposync.service.pipeline.leases import interrupted
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
from reposync.service.scheduling.waits import waiting
from reposync.sync.report import NOTICE_CATEGORIES, problem_type_of
from reposync.web.pages import glance, session
from reposync.web.pages.common import PAGE_SIZE, blueprint, signed_in_user
from reposync.web.pages.glance import ITEM_STATES, settled

#: Events the Run page renders before the live stream takes over.
RECENT_EVENTS = 100
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


#: The same actions in two or three words, for the Overview's one-line rows (the whole
#: sentence is the link's title).
SHORT_ACTIONS: dict[ProblemType, str] = {
    ProblemType.AUTHORIZATION_REQUIRED: "grant access",
    ProblemType.TEMPORARILY_RATE_LIMITED: "wait",
    ProblemType.QUOTA_EXCEEDED: "raise quota",
    ProblemType.EXTERNAL_RESULT_UNKNOWN: "Recover",
    ProblemType.REPOSITORY_CONFLICT: "resolve",
    ProblemType.VERIFICATION_FAILED: "Full audit",
    ProblemType.SYNC_FAILED: "fix, Retry",
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
        "short_action": SHORT_ACTIONS[kind],
    }


def last_problem(row: OverviewRow) -> dict[str, Any] | None:
    """What the Overview row says went wrong, with its kind's action: unknown writes
    first (they block the Binding), then the last ended Run's own error, then its first
    failure; notices (nothing failed) are not problems, and a Run that ended well has none
    even when an older one failed (it is history by then)."""
    last = row.last_finished
    if row.result_unknown:
        kind = ProblemType.EXTERNAL_RESULT_UNKNOWN
        return {
            "error_code": ResultUnknown.code,
            "message": f"{row.result_unknown} write(s) whose outcome nobody observed",
            "kind_action": KIND_ACTIONS[kind],
            "short_action": SHORT_ACTIONS[kind],
            "run_id": last.id if last else None,
        }
    if last is None or last.status == "completed":
        return None
    if last.error_code:
        kind = problem_type_of(last.error_code)
        return {
            "error_code": last.error_code,
            "message": last.error_message or "",
            "kind_action": KIND_ACTIONS[kind],
            "short_action": SHORT_ACTIONS[kind],
            "run_id": last.id,
        }
    for problem in last.problems:
        if isinstance(problem, dict) and problem.get("error_code"):
            shown = _shown(problem)
            if not shown["notice"]:
                return {**shown, "run_id": last.id}
    return None


# --- Run ----------------------------------------------------------------------------------


def _live_context(run_id: int) -> dict[str, Any]:
    """What the Run page's live part shows; re-rendered as events arrive."""
    ctx, user = session.service_context(), signed_in_user()
    run = get_run_for(ctx, user, run_id)
    progress = run_progress(ctx, user, run_id)
    timeline = _timeline(run, stage_times(ctx, user, run_id))
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
    shown = [_shown(p) for p in problems]
    return {
        "run": run,
        "waiting": waiting(ctx, [run]).get(run.id),
        "interrupted": interrupted(run),
        "progress": progress,
        "fraction": settled(progress),
        "transfer": progress.get("transfer"),
        "timeline": timeline,
        "span": sum(step["seconds"] or 0.0 for step in timeline),
        "problems": [p for p in shown if not p["notice"]],
        "notes": [p for p in shown if p["notice"]],
        "retry_helps": _retry_helps(run, shown),
        "unknown": unknown,
        "handoff": handoff_info,
        "reverse": reverse,
        "grant_url": _grant_url(ctx.settings, run.binding_id),
    }


def _timeline(run: Run, reached: dict[str, datetime]) -> list[dict[str, Any]]:
    """Each stage with when the Run first reached it and how long it stayed: until the
    next stage it reached, or until it ended (or now, for the stage it is in). A stage
    skipped (no event there) has no duration."""
    order = [stage.value for stage in Stage]
    current = order.index(run.stage) if run.stage in order else 0
    starts = sorted((at, stage) for stage, at in reached.items() if stage in order)
    ends: dict[str, datetime | None] = {}
    for index, (_, stage) in enumerate(starts):
        following = starts[index + 1][0] if index + 1 < len(starts) else None
        ends[stage] = following or run.finished_at or glance.now()
    steps = []
    for i, stage in enumerate(order):
        at, end = reached.get(stage), ends.get(stage)
        seconds = (end - at).total_seconds() if at and end and stage != "completed" else None
        steps.append(
            {
                "stage": stage,
                "state": "done" if i < current else "current" if i == current else "pending",
                "at": at,
                "seconds": max(0.0, seconds) if seconds is not None else None,
            }
        )
    return steps


def _retry_helps(run: Run, problems: list[dict[str, Any]]) -> bool:
    """Retry is offered where running again may end otherwise: a Run that failed or was
    cancelled, or one that ended on a failure marked retryable. Not after a completed
    Run (nothing to redo; pending changes get a follow-up Run of their own), nor for
    unknown writes (Recover settles those) or conflicts (they need a decision first)."""
    if run.is_active:
        return False
    if run.status in ("failed", "cancelled"):
        return True
    if run.status in ("completed", "completed_with_pending_changes"):
        return False
    return any(
        p.get("retryable") and p["error_code"] != ResultUnknown.code
        for p in problems
        if not p["notice"]
    )


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
    return render_template(
        "pages/run.html",
        **live,
        **_items_context(run_id),
        events=events,
        last_seq=events[-1].seq if events else last,
        item_states=ITEM_STATES,
    )


def _items_context(run_id: int) -> dict[str, Any]:
    """A page of the Run's items as the query string filters it (``state``, ``type``,
    ``after_id``)."""
    ctx, user = session.service_context(), signed_in_user()
    state = request.args.get("state") or None
    object_type = request.args.get("type") or None
    after = request.args.get("after_id", type=int)
    items = run_items(
        ctx, user, run_id, state=state, object_type=object_type, after_id=after, limit=PAGE_SIZE
    )
    return {
        "run_id": run_id,
        "items": items,
        "item_filter": {"state": state or "", "type": object_type or ""},
        "after_id": after,
        "next_items": items[-1].id if len(items) == PAGE_SIZE else None,
    }


@blueprint.route("/runs/<int:run_id>/items")
def items_part(run_id: int) -> str:
    """The Run page's items table alone (same filters): ``run.js`` fetches it with the
    live part, so the states move until the Run's last event."""
    return render_template("pages/_run_items.html", **_items_context(run_id))


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
