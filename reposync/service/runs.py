"""Runs: create, enqueue, retry, cancel."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reposync.errors import BindingBusy
from reposync.lifecycle import ACTIVE_RUN_STATUSES, AuditMode, RunKind, RunMode, Stage, Trigger
from reposync.models import Binding, Run, utcnow
from reposync.service.context import ServiceContext, Step
from reposync.service.events import emit
from reposync.service.lookups import get_binding, get_run
from reposync.service.unknown_outcomes import require_no_unknown


def new_run(
    session: Session,
    binding: Binding,
    *,
    mode: RunMode = RunMode.APPLY,
    audit_mode: AuditMode = AuditMode.CHECKPOINT,
    trigger: Trigger = Trigger.MANUAL,
    kind: RunKind = RunKind.NORMAL,
    parent_run_id: int | None = None,
    attempt: int = 1,
    reverse: bool = False,
) -> Run:
    """Insert a queued Run in ``session`` (the caller's transaction decides its fate).

    ``reverse`` runs from the standby to the authority: only a handoff's dry-run does.
    """
    source = binding.authority.other if reverse else binding.authority
    run = Run(
        binding_id=binding.id,
        kind=kind.value,
        mode=mode.value,
        audit_mode=audit_mode.value,
        trigger=trigger.value,
        source_side=source.value,
        target_side=source.other.value,
        authority_epoch=binding.authority_epoch,
        parent_run_id=parent_run_id,
        attempt=attempt,
    )
    session.add(run)
    session.flush()
    emit(
        session,
        run.id,
        "run_created",
        Stage.QUEUED.value,
        message=f"{mode.value} run, {audit_mode.value} audit, trigger {trigger.value}",
    )
    return run


def create_run(
    ctx: ServiceContext,
    binding_id: int,
    *,
    mode: RunMode = RunMode.APPLY,
    audit_mode: AuditMode = AuditMode.CHECKPOINT,
    trigger: Trigger = Trigger.MANUAL,
    kind: RunKind = RunKind.NORMAL,
    parent_run_id: int | None = None,
    attempt: int = 1,
    reverse: bool = False,
    recorded: Callable[[Session, Run], None] | None = None,
) -> Run:
    """A queued Run from the Binding's authority to its standby.

    Raises ``BindingBusy`` when the Binding already has an active Run (the database's
    partial unique index decides, so two concurrent callers cannot both succeed).
    ``recorded`` runs in the Run's own transaction once it has its id: what must commit
    with the Run or not at all (the answer an idempotency key stores for it).
    """
    try:
        with ctx.db.transaction() as session:
            require_no_unknown(session, binding_id, "a new Run")
            run = new_run(
                session,
                get_binding(session, binding_id),
                mode=mode,
                audit_mode=audit_mode,
                trigger=trigger,
                kind=kind,
                parent_run_id=parent_run_id,
                attempt=attempt,
                reverse=reverse,
            )
            if recorded is not None:
                recorded(session, run)
    except IntegrityError as exc:
        raise BindingBusy(f"binding {binding_id} already has an active run") from exc
    return run


def enqueue_run(
    ctx: ServiceContext, binding_id: int, *, background: bool = False, **options: object
) -> Run:
    """Create a Run and hand its first stage to the dispatcher after the commit.

    ``background``: a Run nobody waits for (a scheduled owner pass's new members), whose
    steps go after an operator's or a webhook's, as the scheduler's do.
    """
    run = create_run(ctx, binding_id, **options)  # type: ignore[arg-type]
    ctx.dispatcher.dispatch(Step(run.id, Stage.CHECKING_ACCESS, None, background=background))
    return run


def retry_run(ctx: ServiceContext, run_id: int) -> Run:
    """A new Run of the same Binding, mode and audit, remembering what it retries."""
    with ctx.db.session() as session:
        run = get_run(session, run_id)
    new = create_run(
        ctx,
        run.binding_id,
        mode=RunMode(run.mode),
        audit_mode=AuditMode(run.audit_mode),
        trigger=Trigger.RETRY,
        parent_run_id=run.id,
        attempt=run.attempt + 1,
    )
    ctx.dispatcher.dispatch(Step(new.id, Stage.CHECKING_ACCESS, None))
    return new


def request_cancel(ctx: ServiceContext, run_id: int) -> Run:
    """Ask a Run to stop; its execution honours it between steps, and its heartbeat passes
    it to a running git push or fetch within about a second (``pipeline.leases``)."""
    with ctx.db.transaction() as session:
        run = get_run(session, run_id)
        mark_cancel_requested(session, run)
    return run


def mark_cancel_requested(session: Session, run: Run, reason: str = "") -> bool:
    """Ask ``run`` to stop in the caller's transaction; False if it ended or was asked."""
    if run.status not in ACTIVE_RUN_STATUSES or run.cancel_requested_at is not None:
        return False
    run.cancel_requested_at = utcnow()
    emit(session, run.id, "cancel_requested", run.stage, message=reason)
    return True
