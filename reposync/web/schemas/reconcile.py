"""Reconcile: the request, the proposal of a dry run, and the answer of both modes."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from reposync.lifecycle import AuditMode, RunMode
from reposync.service.reconcile import DEFAULT_ITEMS, MAX_ITEMS
from reposync.web.schemas.common import one_of
from reposync.web.schemas.runs import RunSchema


def _counts() -> fields.Dict:
    return fields.Dict(keys=fields.String(), values=fields.Integer())


class ReconcileSchema(Schema):
    """POST /bindings/{id}/reconcile."""

    mode = one_of(
        [m.value for m in RunMode],
        required=True,
        metadata={"description": "dry_run: answer the proposal; apply: queue the Run"},
    )
    audit_mode = one_of([a.value for a in AuditMode], load_default=AuditMode.CHECKPOINT.value)
    item_limit = fields.Integer(
        load_default=DEFAULT_ITEMS,
        validate=validate.Range(min=1, max=MAX_ITEMS),
        metadata={"description": f"items a proposal lists, 1 to {MAX_ITEMS} (counts cover all)"},
    )


class IdempotencyHeadersSchema(Schema):
    """The request's Idempotency-Key (required for apply)."""

    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        metadata={
            "description": "1 to 255 visible ASCII characters (a UUID). Retrying with the same "
            "key and body answers the first answer again (header Idempotent-Replayed: true); "
            "with another body 422 idempotency_key_reused; while the first request is still "
            "being answered 409 idempotency_key_in_progress. Keys are per user and Binding and "
            "kept REPOSYNC_IDEMPOTENCY_TTL seconds (24 h); only successful answers are kept."
        },
    )


class ProposedItemSchema(Schema):
    object_type = fields.String(required=True)
    object_key = fields.String(required=True)
    action = fields.String(
        required=True, metadata={"description": "create, update, delete, conflict"}
    )
    reason = fields.String(required=True)
    source_identity = fields.String(allow_none=True)
    target_identity = fields.String(allow_none=True)
    source_revision = fields.String(allow_none=True)


class BlockerSchema(Schema):
    code = fields.String(required=True, metadata={"description": "the error an apply would meet"})
    message = fields.String(required=True)


class ProposalSchema(Schema):
    """What a normal Run would change now, as the planner decides it; nothing was written."""

    binding_id = fields.Integer(required=True)
    audit_mode = fields.String(required=True)
    plan_mode = fields.String(
        required=True, metadata={"description": "empty_target, baseline, checkpoint or full_audit"}
    )
    source_side = fields.String(required=True)
    target_side = fields.String(required=True)
    source_digest = fields.String(
        required=True, metadata={"description": "the source inventory the proposal was made from"}
    )
    object_types = fields.Dict(
        keys=fields.String(),
        values=_counts(),
        required=True,
        metadata={"description": "object type -> action -> items"},
    )
    totals = _counts()
    scanned = _counts()
    checkpoint_skipped = _counts()
    unchanged = _counts()
    unsupported = _counts()
    rejected = fields.Dict()
    items = fields.List(
        fields.Nested(ProposedItemSchema),
        required=True,
        metadata={"description": "the changes in execution order, at most item_limit"},
    )
    items_total = fields.Integer(required=True, metadata={"description": "changes in all"})
    truncated = fields.Boolean(required=True)
    blockers = fields.List(fields.Nested(BlockerSchema), required=True)
    active_run_id = fields.Integer(allow_none=True)
    computed_at = fields.DateTime(required=True)


class ReconcileResultSchema(Schema):
    """dry_run: 200 with ``proposal``; apply: 202 with the queued ``run`` (as first answered)."""

    mode = fields.String(required=True)
    binding_id = fields.Integer(required=True)
    proposal = fields.Nested(ProposalSchema, allow_none=True)
    run = fields.Nested(RunSchema, allow_none=True)
