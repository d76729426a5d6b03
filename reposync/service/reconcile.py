"""Reconcile a Binding: see what a Run would change (dry run), or queue that Run (apply),
safely retried with an ``Idempotency-Key``.

* ``dry_run`` answers a proposal (``pipeline.proposal``): computed in the request and
  written nowhere, so a dry-run reconcile leaves no Run, RunItem, event or snapshot
  behind (only the key's record, when the request carries a key).
* ``apply`` queues a normal Run exactly as ``POST /bindings/{id}/runs`` does
  (``runs.enqueue_run``: refused with ``binding_busy`` while a Run is active), and
  stores the answer in the Run's own transaction, so a retried request can never queue
  a second Run. An apply needs a key: without one a retry after a lost response cannot
  be told from a new request.

How each answer looks is the caller's business (``render``): the service stores what
the caller would answer, and gives the stored answer back on a retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from reposync.errors import IdempotencyKeyInvalid
from reposync.lifecycle import AuditMode, RunMode, Trigger
from reposync.models import Run
from reposync.service import idempotency
from reposync.service.context import ServiceContext
from reposync.service.idempotency import Answer, Claim
from reposync.service.pipeline.proposal import Proposal, propose
from reposync.service.runs import enqueue_run

log = logging.getLogger(__name__)

#: Items a proposal lists by default, and at most (the counts always cover everything).
DEFAULT_ITEMS = 100
MAX_ITEMS = 1000


@dataclass(frozen=True, slots=True)
class ReconcileRequest:
    mode: RunMode
    audit_mode: AuditMode = AuditMode.CHECKPOINT
    item_limit: int = DEFAULT_ITEMS

    def fingerprint(self) -> str:
        """The hash a key's retries must match: the normalized request, defaults filled."""
        return idempotency.request_hash(
            {
                "mode": self.mode.value,
                "audit_mode": self.audit_mode.value,
                "item_limit": self.item_limit,
            }
        )


@dataclass(frozen=True, slots=True)
class Reconciled:
    answer: Answer
    #: True when the answer is the stored one of an earlier request with the key.
    replayed: bool


Render = Callable[[Run | Proposal], Answer]


def scope(binding_id: int) -> str:
    return f"binding:{binding_id}:reconcile"


def reconcile(
    ctx: ServiceContext,
    binding_id: int,
    request: ReconcileRequest,
    *,
    user_id: int,
    key: str | None,
    render: Render,
) -> Reconciled:
    """Answer one reconcile request (the caller authorized it), or replay its answer.

    ``user_id`` scopes the key: it is not an authorization.
    """
    if key is None and request.mode is RunMode.APPLY:
        raise IdempotencyKeyInvalid("an apply needs an Idempotency-Key header")
    claim: Claim | None = None
    if key is not None:
        found = idempotency.begin(
            ctx,
            user_id=user_id,
            scope=scope(binding_id),
            key=key,
            request=request.fingerprint(),
            binding_id=binding_id,
        )
        if isinstance(found, Answer):
            return Reconciled(found, replayed=True)
        claim = found
    try:
        if request.mode is RunMode.DRY_RUN:
            answer = render(
                propose(
                    ctx, binding_id, audit_mode=request.audit_mode, item_limit=request.item_limit
                )
            )
            if claim is not None:
                idempotency.complete_now(ctx, claim, answer)
        else:
            answer = _apply(ctx, binding_id, request, claim, render)
    except BaseException:
        if claim is not None:
            try:
                idempotency.release(ctx, claim)
            except Exception:  # the request's own error is the answer; the key frees itself
                log.exception("could not release Idempotency-Key %r", key)
        raise
    return Reconciled(answer, replayed=False)


def _apply(
    ctx: ServiceContext,
    binding_id: int,
    request: ReconcileRequest,
    claim: Claim | None,
    render: Render,
) -> Answer:
    answers: list[Answer] = []

    def record(session: Session, run: Run) -> None:
        answer = render(run)
        if claim is not None:
            idempotency.complete(session, claim, answer)
        answers.append(answer)

    enqueue_run(
        ctx,
        binding_id,
        mode=RunMode.APPLY,
        audit_mode=request.audit_mode,
        trigger=Trigger.MANUAL,
        recorded=record,
    )
    return answers[0]
