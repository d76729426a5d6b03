"""RunItems: one object's planned change and its outcome."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, post_dump

from reposync.sync.vocabulary import ItemState, ObjectType
from reposync.web.pagination import PageArgsSchema
from reposync.web.redaction import for_viewer
from reposync.web.schemas.common import one_of, record_id


class RunItemSchema(Schema):
    @post_dump
    def _for_viewer(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return for_viewer(data, "error_message")  # no server paths for members

    id = fields.Integer(required=True)
    run_id = fields.Integer(required=True)
    phase = fields.Integer(required=True)
    object_type = fields.String(required=True)
    object_key = fields.String(required=True)
    action = fields.String(required=True)
    reason = fields.String(required=True)
    state = fields.String(required=True)
    batch_no = fields.Integer(allow_none=True)
    source_identity = fields.String(allow_none=True)
    target_identity = fields.String(allow_none=True)
    representation = fields.String(allow_none=True)
    error_code = fields.String(allow_none=True)
    error_message = fields.String(allow_none=True)
    attempt_count = fields.Integer()
    updated_at = fields.DateTime()


class RunItemQueryArgsSchema(PageArgsSchema):
    state = one_of([s.value for s in ItemState])
    object_type = one_of([t.value for t in ObjectType])


class RunItemPageSchema(Schema):
    items = fields.List(fields.Nested(RunItemSchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)
