"""The overview: every visible Binding with its health and its latest and active Run."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from reposync.web.schemas.bindings import BindingSchema
from reposync.web.schemas.common import MAX_PAGE, record_id
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


class OverviewArgsSchema(Schema):
    """Paging is optional: without ``limit`` every visible Binding comes in one answer (as
    before); a fleet of a thousand reads pages of up to ``MAX_PAGE`` (issue 26)."""

    after_id = record_id(metadata={"description": "continue after this Binding id"})
    limit = fields.Integer(
        validate=validate.Range(min=1, max=MAX_PAGE),
        metadata={"description": f"page size, 1 to {MAX_PAGE}; every Binding when absent"},
    )


class OverviewSchema(Schema):
    bindings = fields.List(fields.Nested(OverviewEntrySchema), required=True)
    next_after_id = fields.Integer(
        allow_none=True,
        metadata={"description": "the cursor of the next page; null on the last (or only) one"},
    )
