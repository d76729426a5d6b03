"""Bindings: what the API shows of one, and what creating, changing and listing take."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, pre_dump, validate

from reposync.lifecycle import Side
from reposync.models import Binding, utcnow
from reposync.service.scheduling.schedules import schedule_problem
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web.pagination import PageArgsSchema
from reposync.web.schemas.common import MAX_ID, no_nul, one_of, record_id, text

POLICIES = [p.value for p in RefConflictPolicy]


class EndpointSchema(Schema):
    """One side of a Binding."""

    provider = fields.String(required=True)
    repository_id = fields.String(required=True, metadata={"description": "immutable id"})
    locator = fields.String(required=True, metadata={"description": "follows renames"})
    visibility = fields.String(allow_none=True)
    connection_id = fields.String(
        allow_none=True,
        metadata={
            "description": "the credentials that open this side (github:installation:<id>); "
            "null: the configured ones"
        },
    )


_COLUMNS = (
    "id",
    "authority_side",
    "authority_epoch",
    "sync_enabled",
    "ref_conflict_policy",
    "schedule_cron",
    "schedule_offset",
    "next_run_at",
    "full_audit_interval",
    "last_full_apply_at",
    "event_run_due_at",
    "access_notice",
    "created_at",
    "updated_at",
)


def _endpoint(binding: Binding, side: Side) -> dict[str, str | None]:
    provider, repository_id, locator, connection_id = binding.side(side)
    return {
        "provider": provider,
        "repository_id": repository_id,
        "locator": locator,
        "visibility": binding.a_visibility if side is Side.A else binding.b_visibility,
        "connection_id": connection_id,
    }


def _display(binding: Binding, side: Side) -> str:
    provider, _, locator, _ = binding.side(side)
    return f"{provider}:{locator}"


class BindingSchema(Schema):
    """A pair of repositories kept in sync, authority -> standby."""

    id = fields.Integer(required=True)
    a = fields.Nested(EndpointSchema, required=True)
    b = fields.Nested(EndpointSchema, required=True)
    source = fields.String(required=True, metadata={"description": "the authority's locator"})
    target = fields.String(required=True, metadata={"description": "the standby's locator"})
    authority_side = fields.String(required=True)
    authority_epoch = fields.Integer(required=True)
    sync_enabled = fields.Boolean(required=True)
    ref_conflict_policy = fields.String(required=True)
    schedule_cron = fields.String(allow_none=True)
    schedule_offset = fields.Integer(
        required=True,
        metadata={
            "description": "seconds each slot of the cron is moved by (an owner binding "
            "spreads its Bindings' slots)"
        },
    )
    next_run_at = fields.DateTime(allow_none=True)
    full_audit_interval = fields.Integer(required=True, metadata={"description": "seconds"})
    last_full_apply_at = fields.DateTime(allow_none=True)
    visibility_confirmed = fields.Boolean(required=True)
    schedule_problem = fields.String(
        allow_none=True,
        metadata={"description": "why an enabled schedule has no next slot (paused)"},
    )
    event_run_due_at = fields.DateTime(
        allow_none=True,
        metadata={
            "description": "a webhook asked for a Run: when it starts (during an active Run: "
            "right after it)"
        },
    )
    access_notice = fields.String(
        allow_none=True,
        metadata={"description": "what the forge last said about reposync's access"},
    )
    created_at = fields.DateTime()
    updated_at = fields.DateTime()

    @pre_dump
    def _from_model(self, binding: Binding, **_: Any) -> dict[str, Any]:
        return {
            **{name: getattr(binding, name) for name in _COLUMNS},
            "a": _endpoint(binding, Side.A),
            "b": _endpoint(binding, Side.B),
            "source": _display(binding, binding.authority),
            "target": _display(binding, binding.authority.other),
            "visibility_confirmed": binding.visibility_confirmation is not None,
            "schedule_problem": schedule_problem(binding, utcnow()),
        }


class BindingCreateSchema(Schema):
    """POST /bindings: two locators, source first (it becomes the authority)."""

    source = text(1024, required=True, metadata={"example": "local:/srv/forge/app.git"})
    target = text(1024, required=True, metadata={"example": "github:acme/app"})
    ref_conflict_policy = one_of(POLICIES, load_default=None)
    confirm_visibility = fields.Boolean(
        load_default=False,
        metadata={
            "description": "confirm that the target may be more public than the source: "
            "required to bind such a pair (409 visibility_unconfirmed without it, nothing "
            "written); stores a confirmation of the current visibilities"
        },
    )
    source_connection_id = text(
        255,
        load_default=None,
        allow_none=True,
        metadata={
            "description": "the connection that opens the source (GET /github/repositories "
            "lists it per repository); omitted: the configured credentials",
            "example": "github:installation:42",
        },
    )
    target_connection_id = text(
        255,
        load_default=None,
        allow_none=True,
        metadata={"description": "as source_connection_id, for the target"},
    )


class BindingUpdateSchema(Schema):
    """PATCH /bindings/{id}: only the fields sent change."""

    schedule_cron = fields.String(
        allow_none=True,
        validate=[validate.Length(max=255), no_nul],
        metadata={"description": "cron expression (UTC); null removes the schedule"},
    )
    sync_enabled = fields.Boolean()
    ref_conflict_policy = one_of(POLICIES)
    full_audit_interval = fields.Integer(
        validate=validate.Range(min=3600, max=MAX_ID), metadata={"description": "seconds"}
    )
    confirm_visibility = fields.Boolean(
        metadata={
            "description": "true stores a confirmation for the current visibilities; "
            "false withdraws it"
        }
    )


class HandoffSchema(Schema):
    """POST /bindings/{id}/handoff: the operator's word, where reposync cannot freeze the
    authority."""

    confirm_writes_stopped = fields.Boolean(
        load_default=False,
        metadata={
            "description": "nobody writes to the authority any more: required when reposync "
            "cannot freeze it (a GitHub authority; 409 writes_not_stopped without it)"
        },
    )


class BindingQueryArgsSchema(PageArgsSchema):
    repository_id = text(255, metadata={"description": "either side's repository id"})


class BindingPageSchema(Schema):
    items = fields.List(fields.Nested(BindingSchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)
