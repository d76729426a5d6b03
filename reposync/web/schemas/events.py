"""RunEvents: the append-only history of a Run, numbered per Run by ``seq``."""

from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, Schema, fields, post_dump, validate

from reposync.web.redaction import for_viewer
from reposync.web.schemas.common import MAX_ID, limit


class RunEventSchema(Schema):
    @post_dump
    def _for_viewer(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return for_viewer(data, "message", "counts")  # no server paths for members

    seq = fields.Integer(required=True)
    type = fields.String(required=True)
    stage = fields.String(required=True)
    generation = fields.Integer(allow_none=True)
    counts = fields.Dict()
    message = fields.String()
    created_at = fields.DateTime()


def _seq(**kwargs: Any) -> fields.Integer:
    return fields.Integer(validate=validate.Range(min=0, max=MAX_ID), **kwargs)


class RunEventQueryArgsSchema(Schema):
    after_seq = _seq(load_default=0, metadata={"description": "continue after this seq"})
    limit = limit()
    access_token = fields.String(
        load_only=True,
        validate=validate.Length(max=128),
        metadata={
            "description": "a stream token of this Run (POST /runs/{id}/stream-token), for "
            "clients that cannot send an Authorization header"
        },
    )


class RunEventHeadersSchema(Schema):
    """Server-Sent Events: a reconnecting client resumes after ``Last-Event-ID``."""

    class Meta:
        unknown = EXCLUDE

    last_event_id = _seq(data_key="Last-Event-ID")


class RunEventPageSchema(Schema):
    items = fields.List(fields.Nested(RunEventSchema), required=True)
    next_after_seq = fields.Integer(
        required=True,
        allow_none=True,
        metadata={
            "description": "ask again after this seq: the last of this page (or the given "
            "after_seq when it is empty) while more events exist or the Run is active, its "
            "history growing; null once the Run has ended and this page holds its last event"
        },
    )


class StreamTokenSchema(Schema):
    """A token for one Run's event stream, for clients that cannot send headers."""

    token = fields.String(required=True, metadata={"description": "shown this once"})
    expires_at = fields.DateTime(required=True)
    url = fields.String(
        required=True, metadata={"description": "the stream's URL with the token in it"}
    )
