"""The overview: every visible Binding with its health and its latest and active Run."""

from __future__ import annotations

from marshmallow import Schema, fields

from reposync.web.schemas.bindings import BindingSchema
from reposync.web.schemas.runs import ProgressSchema, RunSummarySchema


class OverviewEntrySchema(Schema):
    binding = fields.Nested(BindingSchema, required=True)
    latest_run = fields.Nested(RunSummarySchema, allow_none=True, required=True)
    active_run = fields.Nested(RunSummarySchema, allow_none=True, required=True)
    active_progress = fields.Nested(ProgressSchema, allow_none=True, required=True)
    connection_health = fields.String(
        required=True, metadata={"description": "ok, unknown, rate_limited or failing: <code>"}
    )
    result_unknown = fields.Integer(
        required=True, metadata={"description": "writes whose outcome awaits recovery"}
    )


class OverviewSchema(Schema):
    bindings = fields.List(fields.Nested(OverviewEntrySchema), required=True)
