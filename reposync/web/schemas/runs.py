"""Runs: summary and detail, progress, what creating one takes, and the listing."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, post_dump

from reposync.lifecycle import AuditMode, RunMode, RunStatus
from reposync.service.pipeline.leases import interrupted
from reposync.web.pagination import PageArgsSchema
from reposync.web.redaction import for_viewer
from reposync.web.schemas.common import one_of, record_id


def _counts() -> fields.Dict:
    return fields.Dict(keys=fields.String(), values=fields.Integer())


class RunSummarySchema(Schema):
    """A Run as listings show it (no report)."""

    @post_dump
    def _for_viewer(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return for_viewer(data, "error_message", "report")  # no server paths for members

    id = fields.Integer(required=True)
    binding_id = fields.Integer(required=True)
    kind = fields.String(required=True, metadata={"description": "normal or handoff"})
    mode = fields.String(required=True, metadata={"description": "apply or dry_run"})
    audit_mode = fields.String(required=True, metadata={"description": "checkpoint or full"})
    trigger = fields.String(required=True)
    source_side = fields.String(required=True)
    target_side = fields.String(required=True)
    authority_epoch = fields.Integer(required=True)
    stage = fields.String(required=True)
    status = fields.String(required=True)
    plan_mode = fields.String(allow_none=True)
    plan_complete = fields.Boolean()
    counters = fields.Dict()
    error_code = fields.String(allow_none=True)
    error_message = fields.String(allow_none=True)
    parent_run_id = fields.Integer(allow_none=True)
    attempt = fields.Integer()
    cancel_requested_at = fields.DateTime(allow_none=True)
    interrupted = fields.Function(
        interrupted,
        dump_only=True,
        metadata={
            "description": "a running Run nobody executes now (its lease expired or was "
            "given up, or its process ended); it goes on where it stopped once resumed"
        },
    )
    scheduled_for = fields.DateTime(allow_none=True)
    retry_at = fields.DateTime(allow_none=True)
    created_at = fields.DateTime()
    started_at = fields.DateTime(allow_none=True)
    finished_at = fields.DateTime(allow_none=True)
    updated_at = fields.DateTime()
    waiting = fields.String(
        metadata={
            "description": "Where a queued Run waits, in words: deferred until when, "
            "behind which Run, at which place of whose queue, or that nothing takes it (no "
            "worker, a broker away). Absent when the Run is not queued or nothing is known."
        }
    )


class RunSchema(RunSummarySchema):
    """A Run with everything it explains about itself."""

    planning_counters = fields.Dict()
    unsupported = fields.Dict()
    rejected = fields.Dict()
    io = fields.Dict()
    report = fields.Dict()
    source_digest = fields.String(allow_none=True)
    target_digest = fields.String(allow_none=True)


class RunCreateSchema(Schema):
    """POST /bindings/{id}/runs."""

    mode = one_of([m.value for m in RunMode], load_default=RunMode.APPLY.value)
    audit_mode = one_of([a.value for a in AuditMode], load_default=AuditMode.CHECKPOINT.value)


class RunQueryArgsSchema(PageArgsSchema):
    """Newest first: ``after_id`` continues below the last (smallest) id seen."""

    status = one_of([s.value for s in RunStatus])
    binding_id = record_id()


class RunPageSchema(Schema):
    items = fields.List(fields.Nested(RunSummarySchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)


class ProgressSchema(Schema):
    """Item counts of a Run: totals by state and by object type and state."""

    totals = _counts()
    object_types = fields.Dict(keys=fields.String(), values=_counts())
    items = fields.Integer(required=True)


class TransferSchema(Schema):
    """What git reports of the push a Run is running (git 2.39's own phases and figures)."""

    phase = fields.String(
        required=True,
        metadata={
            "description": "git's phase in lower case (counting objects, writing objects); "
            "the target's own phases start with 'target: '"
        },
    )
    objects_done = fields.Integer(required=True)
    objects_total = fields.Integer(
        required=True, allow_none=True, metadata={"description": "null while git enumerates"}
    )
    bytes_done = fields.Integer(
        required=True, metadata={"description": "bytes sent so far by this batch's pushes"}
    )


class RunProgressSchema(ProgressSchema):
    run_id = fields.Integer(required=True)
    stage = fields.String(required=True)
    status = fields.String(required=True)
    plan_complete = fields.Boolean(required=True)
    transfer = fields.Nested(
        TransferSchema,
        metadata={"description": "present only while a push runs: what git reports of it"},
    )


class RecoverySchema(Schema):
    """What recovery proved, by outcome."""

    run_id = fields.Integer(required=True)
    counts = fields.Dict(
        keys=fields.String(),
        values=fields.Integer(),
        metadata={"description": "proven_written, proven_absent, still_unknown"},
    )
