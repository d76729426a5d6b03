"""Webhook subscriptions and their deliveries: what the API shows and what it takes.

A subscription's secret goes in (create, change) and never comes out.
"""

from __future__ import annotations

import json
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_dump, validate

from reposync.models import DeliveryStatus, WebhookDelivery
from reposync.service.webhooks.outbox import EVENTS
from reposync.service.webhooks.watches import CHANGE_KINDS, FILES_LISTED
from reposync.service.webhooks.webhook_transport import standard_secret_problem
from reposync.web.pagination import PageArgsSchema
from reposync.web.schemas.common import MAX_ID, no_nul, one_of, record_id, text

EVENT_NAMES = list(EVENTS)
STATUSES = [s.value for s in DeliveryStatus]
MIN_SECRET = 16


def _events(**kwargs: Any) -> fields.List[Any]:
    return fields.List(
        one_of(EVENT_NAMES),
        validate=validate.Length(min=1, max=len(EVENT_NAMES)),
        metadata={"description": "the events to deliver"},
        **kwargs,
    )


def _standard_secret(secret: str) -> None:
    problem = standard_secret_problem(secret)
    if problem is not None:
        raise ValidationError(problem)


def _secret(**kwargs: Any) -> fields.String:
    return fields.String(
        load_only=True,
        validate=[validate.Length(min=MIN_SECRET, max=255), no_nul, _standard_secret],
        metadata={
            "description": "the HMAC key of X-Reposync-Signature-256 (its UTF-8 bytes) and "
            "of the Standard Webhooks webhook-signature: a whsec_<base64> secret (24 to 64 "
            "bytes) is the key it encodes, any other secret its UTF-8 bytes; stored sealed, "
            "never shown again",
        },
        **kwargs,
    )


def _binding_id(**kwargs: Any) -> fields.Integer:
    return fields.Integer(
        allow_none=True,
        validate=validate.Range(min=1, max=MAX_ID),
        metadata={"description": "only events of this Binding (null: every visible one)"},
        **kwargs,
    )


def _branch(**kwargs: Any) -> fields.String:
    return fields.String(
        allow_none=True,
        validate=[validate.Length(min=1, max=255), no_nul],
        metadata={
            "description": "only events naming this branch (main or refs/heads/main); "
            "events about no branch are not narrowed by it"
        },
        **kwargs,
    )


def _description(**kwargs: Any) -> fields.String:
    return fields.String(validate=[validate.Length(max=255), no_nul], **kwargs)


_URL_DOC = {
    "description": "http(s) URL that receives POSTs; refused (422) when it resolves to a "
    "loopback, private, link-local, unique-local, multicast or unspecified address that "
    "REPOSYNC_WEBHOOK_ALLOWED_NETWORKS does not allow",
    "example": "https://hooks.example.com/reposync",
}


class SubscriptionSchema(Schema):
    """Where events go, which ones, and for what; never the secret."""

    id = fields.Integer(required=True)
    owner_id = fields.Integer(required=True)
    url = fields.String(required=True)
    events = fields.List(fields.String(), required=True)
    binding_id = fields.Integer(allow_none=True)
    branch = fields.String(allow_none=True)
    active = fields.Boolean(required=True)
    description = fields.String(required=True)
    created_at = fields.DateTime()
    updated_at = fields.DateTime()


class SubscriptionCreateSchema(Schema):
    """POST /subscriptions."""

    url = text(2048, required=True, metadata=_URL_DOC)
    events = _events(required=True)
    secret = _secret(required=True)
    binding_id = _binding_id(load_default=None)
    branch = _branch(load_default=None)
    active = fields.Boolean(load_default=True)
    description = _description(load_default="")


class SubscriptionUpdateSchema(Schema):
    """PATCH /subscriptions/{id}: only the fields sent change."""

    url = text(2048, metadata=_URL_DOC)
    events = _events()
    secret = _secret()
    binding_id = _binding_id()
    branch = _branch()
    active = fields.Boolean(metadata={"description": "false pauses deliveries (kept pending)"})
    description = _description()


class SubscriptionQueryArgsSchema(PageArgsSchema):
    binding_id = record_id(metadata={"description": "subscriptions filtered on this Binding"})


class SubscriptionPageSchema(Schema):
    items = fields.List(fields.Nested(SubscriptionSchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)


class DeliverySchema(Schema):
    """One event for one subscription: its attempts and where they stand."""

    id = fields.Integer(required=True)
    subscription_id = fields.Integer(required=True)
    guid = fields.String(
        required=True,
        metadata={
            "description": "X-Reposync-Delivery and webhook-id: the same on retries and "
            "redeliveries"
        },
    )
    event = fields.String(required=True)
    binding_id = fields.Integer(allow_none=True)
    branch = fields.String(allow_none=True)
    status = one_of(STATUSES, required=True)
    attempts = fields.Integer(required=True)
    response_status = fields.Integer(
        allow_none=True, metadata={"description": "the last attempt's HTTP status"}
    )
    last_error = fields.String(allow_none=True)
    next_attempt_at = fields.DateTime(
        allow_none=True, metadata={"description": "when a pending delivery is tried next"}
    )
    last_attempt_at = fields.DateTime(allow_none=True)
    finished_at = fields.DateTime(allow_none=True)
    redelivery_of = fields.Integer(allow_none=True)
    created_at = fields.DateTime()
    payload = fields.Dict(metadata={"description": "the body sent (JSON)"})

    @pre_dump
    def _from_model(self, delivery: WebhookDelivery, **_: Any) -> dict[str, Any]:
        names = [name for name in self.fields if name != "payload"]
        return {
            **{name: getattr(delivery, name) for name in names},
            "payload": json.loads(delivery.body),
        }


class DeliveryQueryArgsSchema(PageArgsSchema):
    """Newest first: ``after_id`` continues below the last (smallest) id seen."""

    status = one_of(STATUSES)


class DeliveryPageSchema(Schema):
    items = fields.List(fields.Nested(DeliverySchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)


# -- what a delivery's body holds (documented in the OpenAPI, checked by the tests) ------


class WebhookEnvelopeSchema(Schema):
    """The body of every delivery (compact JSON, keys sorted; the same bytes on every
    attempt). Signed: ``X-Reposync-Signature-256: sha256=HMAC-SHA256(secret,
    X-Reposync-Timestamp + "." + body)``, and per Standard Webhooks: ``webhook-signature:
    v1,base64(HMAC-SHA256(key, webhook-id + "." + webhook-timestamp + "." + body))``."""

    id = fields.String(
        required=True, metadata={"description": "= X-Reposync-Delivery = webhook-id"}
    )
    event = one_of(EVENT_NAMES, required=True)
    occurred_at = fields.DateTime(required=True)
    binding_id = fields.Integer(required=True, allow_none=True)
    branch = fields.String(required=True, allow_none=True)
    data = fields.Dict(
        required=True,
        metadata={
            "description": "RunEventData (run.*), ItemBlockedData, DriftDetectedData, "
            "HandoffCompletedData or BranchMovedData, by event"
        },
    )


class EventBindingSchema(Schema):
    id = fields.Integer(required=True)
    source = fields.String(required=True, metadata={"description": "the authority"})
    target = fields.String(required=True, metadata={"description": "the standby"})
    authority_side = fields.String(required=True)
    authority_epoch = fields.Integer(required=True)


class EventRunSchema(Schema):
    id = fields.Integer(required=True)
    binding_id = fields.Integer(required=True)
    kind = fields.String(required=True)
    mode = fields.String(required=True)
    audit_mode = fields.String(required=True)
    plan_mode = fields.String(required=True, allow_none=True)
    trigger = fields.String(required=True)
    status = fields.String(required=True)
    parent_run_id = fields.Integer(required=True, allow_none=True)
    counters = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    started_at = fields.DateTime(required=True, allow_none=True)
    finished_at = fields.DateTime(required=True)
    duration_seconds = fields.Float(required=True, allow_none=True)


class EventItemSchema(Schema):
    id = fields.Integer(required=True)
    object_type = fields.String(required=True)
    object_key = fields.String(required=True)
    action = fields.String(required=True)
    state = fields.String(required=True)
    error_code = fields.String(required=True, allow_none=True)
    error_message = fields.String(required=True, allow_none=True)


class DriftedObjectSchema(EventItemSchema):
    kind = one_of(["modified", "deleted", "conflicting"], required=True)


class RunEventDataSchema(Schema):
    """run.completed (completed, completed_with_pending_changes), run.failed (failed),
    run.requires_attention (requires_attention, blocked); a cancelled Run sends none."""

    run = fields.Nested(EventRunSchema, required=True)
    binding = fields.Nested(EventBindingSchema, required=True)
    error = fields.Dict(
        required=True,
        allow_none=True,
        metadata={"description": "the Run's error: error_code, message, retryable, ..."},
    )
    problems = fields.List(
        fields.Dict(),
        required=True,
        metadata={"description": "the report's first 50 problems"},
    )
    follow_up_run_id = fields.Integer(required=True, allow_none=True)


class ItemBlockedDataSchema(Schema):
    """item.blocked: once per Run whose items ended blocked (conflicts aside)."""

    run = fields.Nested(EventRunSchema, required=True)
    binding = fields.Nested(EventBindingSchema, required=True)
    count = fields.Integer(required=True)
    items = fields.List(fields.Nested(EventItemSchema), required=True)
    truncated = fields.Boolean(required=True)


class DriftDetectedDataSchema(Schema):
    """drift.detected: the standby changed outside reposync (see docs/webhooks.md)."""

    run = fields.Nested(EventRunSchema, required=True)
    binding = fields.Nested(EventBindingSchema, required=True)
    count = fields.Integer(required=True)
    kinds = fields.Dict(
        keys=one_of(["modified", "deleted", "conflicting"]),
        values=fields.Integer(),
        required=True,
    )
    objects = fields.List(fields.Nested(DriftedObjectSchema), required=True)
    truncated = fields.Boolean(required=True)


class HandoffCompletedDataSchema(Schema):
    """handoff.completed: the authority moved (the Binding as it is now)."""

    binding = fields.Nested(EventBindingSchema, required=True)
    previous_authority_side = fields.String(required=True)
    forward_run_id = fields.Integer(required=True)
    reverse_run_id = fields.Integer(required=True)
    sync_enabled = fields.Boolean(required=True)


class EventRepositorySchema(Schema):
    provider = fields.String(required=True)
    repository_id = fields.String(required=True)
    locator = fields.String(required=True)


class ChangedFileSchema(Schema):
    """One file a branch movement changed (``git diff-tree -M --name-status``)."""

    path = fields.String(required=True)
    change = one_of(list(CHANGE_KINDS), required=True)
    previous_path = fields.String(
        required=True, allow_none=True, metadata={"description": "a renamed file's old path"}
    )


class BranchMovedDataSchema(Schema):
    """branch.moved: a watched branch's cursor moved (``service/webhooks/watches.py``), seen in a
    delivery or by a Run that read the branch (a lost delivery is heard of anyway)."""

    watch_id = fields.Integer(required=True)
    repository = fields.Nested(EventRepositorySchema, required=True)
    branch = fields.String(required=True)
    ref = fields.String(required=True)
    before = fields.String(required=True, allow_none=True)
    after = fields.String(required=True)
    moved_at = fields.DateTime(required=True)
    observed_at = fields.DateTime(required=True)
    binding_ids = fields.List(
        fields.Integer(),
        required=True,
        metadata={"description": "the Bindings whose authority this repository is"},
    )
    observed_by = one_of(
        ["delivery", "run"],
        required=True,
        metadata={"description": "a webhook delivery, or a Run that read the branch"},
    )
    run_id = fields.Integer(
        required=True, allow_none=True, metadata={"description": "the Run that saw it"}
    )
    files = fields.List(
        fields.Nested(ChangedFileSchema),
        required=True,
        allow_none=True,
        metadata={
            "description": f"what the movement changed, at most {FILES_LISTED}; null "
            "when no repository on reposync's machine holds both revisions, or the branch "
            "was created or deleted"
        },
    )
    files_truncated = fields.Boolean(
        required=True, metadata={"description": "more files changed than listed"}
    )


#: Documented in the OpenAPI's components under these names.
PAYLOAD_SCHEMAS: dict[str, type[Schema]] = {
    "WebhookEnvelope": WebhookEnvelopeSchema,
    "RunEventData": RunEventDataSchema,
    "ItemBlockedData": ItemBlockedDataSchema,
    "DriftDetectedData": DriftDetectedDataSchema,
    "HandoffCompletedData": HandoffCompletedDataSchema,
    "BranchMovedData": BranchMovedDataSchema,
}
