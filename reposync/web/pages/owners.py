"""The page's whole owners: bind-all as a form, each owner binding with its last pass.

Admin only, as ``/owner-bindings`` is (a member gets the problem page, 403). The form
binds two owners as ``POST /owner-bindings`` does: both owners listed in the request,
the first pass handed to a worker; its dry run shows the report and writes nothing. An
owner binding's page shows its options, its last pass, repository by repository, and the
Bindings it made; a pass can be asked for, or dry-run, from there.
"""

from __future__ import annotations

from flask import redirect, render_template, request, url_for
from werkzeug.wrappers.response import Response as BaseResponse

from reposync.errors import UsageError
from reposync.service.accounts.authorization import require_admin
from reposync.service.owner_pass import PassReport
from reposync.service.owners import (
    DEFAULT_PASS_CRON,
    OwnerRequest,
    bind_all,
    delete_owner_binding,
    get_owner_binding,
    list_owner_bindings,
    members_of,
    request_pass,
    run_pass,
)
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web.pages import session
from reposync.web.pages.common import PAGE_SIZE, blueprint, signed_in_user


@blueprint.route("/owners")
def owners() -> str:
    """The owner bindings, and the form that binds two more owners."""
    ctx = session.service_context()
    require_admin(signed_in_user())
    return render_template(
        "pages/owners.html",
        rows=list_owner_bindings(ctx, limit=PAGE_SIZE),
        policies=[p.value for p in RefConflictPolicy],
        default_pass_cron=DEFAULT_PASS_CRON,
    )


@blueprint.route("/owners", methods=["POST"])
def bind_owners() -> BaseResponse | str:
    """Bind two owners (then the owner binding's page, its first pass queued), or, with
    the dry-run box, show what a pass would do and write nothing."""
    ctx = session.service_context()
    require_admin(signed_in_user())
    form = request.form
    source, target = form.get("source", "").strip(), form.get("target", "").strip()
    if not source or not target:
        raise UsageError("binding two owners needs a source owner and a target owner")
    policy = form.get("ref_conflict_policy") or None
    row, report = bind_all(
        ctx,
        OwnerRequest(
            source,
            target,
            dry_run=bool(form.get("dry_run")),
            conflict_policy=RefConflictPolicy(policy) if policy else None,
            schedule_cron=form.get("schedule_cron", "").strip() or None,
            pass_cron=form.get("pass_cron", "").strip() or None,
            confirm_visibility=bool(form.get("confirm_visibility")),
            confined=True,
        ),
        run_now=False,
    )
    if row is None:
        assert report is not None
        return _report_page(report)
    return redirect(url_for("pages.owner", owner_binding_id=row.id))


@blueprint.route("/owners/<int:owner_binding_id>")
def owner(owner_binding_id: int) -> str:
    """One owner binding: its options, its last pass and the Bindings it made."""
    ctx = session.service_context()
    require_admin(signed_in_user())
    return render_template(
        "pages/owner.html",
        row=get_owner_binding(ctx, owner_binding_id),
        members=members_of(ctx, owner_binding_id),
    )


@blueprint.route("/owners/<int:owner_binding_id>/passes", methods=["POST"])
def owner_pass(owner_binding_id: int) -> BaseResponse | str:
    """Pass now (handed to a worker; the page shows its report once it ran) or dry run
    (the report at once, nothing written)."""
    ctx = session.service_context()
    require_admin(signed_in_user())
    if request.form.get("action") == "dry_run":
        return _report_page(run_pass(ctx, owner_binding_id, dry_run=True))
    request_pass(ctx, owner_binding_id)
    return redirect(url_for("pages.owner", owner_binding_id=owner_binding_id))


@blueprint.route("/owners/<int:owner_binding_id>/delete", methods=["POST"])
def forget_owner(owner_binding_id: int) -> BaseResponse:
    """Forget the owner binding; its Bindings stay."""
    ctx = session.service_context()
    require_admin(signed_in_user())
    delete_owner_binding(ctx, owner_binding_id)
    return redirect(url_for("pages.owners"))


def _report_page(report: PassReport) -> str:
    return render_template("pages/owner_pass.html", report=report.to_dict())
