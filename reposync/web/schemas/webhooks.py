"""Webhooks in: what the API answers a forge's delivery."""

from __future__ import annotations

from marshmallow import Schema, fields

from reposync.providers.notifications import Outcome
from reposync.web.schemas.common import one_of


class WebhookReceiptSchema(Schema):
    """What became of one delivery."""

    delivery_id = fields.String(required=True)
    event = fields.String(required=True)
    action = fields.String(allow_none=True)
    outcome = one_of(
        [o.value for o in Outcome],
        required=True,
        metadata={
            "description": "accepted (recorded and acted on), ignored (an event reposync "
            "does not act on), pong (a ping), duplicate (a redelivery: nothing changed)"
        },
    )
    bindings = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        required=True,
        metadata={
            "description": "Binding id -> what the delivery did to it: run_requested, "
            "coalesced, pending_after_active_run, locator_updated, ..."
        },
    )
