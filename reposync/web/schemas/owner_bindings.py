"""Owner bindings: what binding two owners takes, one owner binding with its last pass,
a pass's report, and the Bindings it made."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from marshmallow import Schema, fields, pre_dump, validate

from reposync.models import OwnerBinding, OwnerBindingMember
from reposync.models.owner_binding import OWNER_LENGTH
from reposync.service.owner_pass import Outcome
from reposync.service.owners import DEFAULT_PASS_CRON
from reposync.sync.vocabulary import RefConflictPolicy
from reposync.web.pagination import PageArgsSchema
from reposync.web.schemas.common import no_nul, one_of, record_id, text

POLICIES = [p.value for p in RefConflictPolicy]


def _cron(description: str, **kwargs: Any) -> fields.String:
    return fields.String(
        allow_none=True,
        validate=[validate.Length(min=1, max=255), no_nul],
        metadata={"description": description},
        **kwargs,
    )


class OwnerBindingCreateSchema(Schema):
    """POST /owner-bindings: two owners, source first (its repositories are the
    authorities)."""

    source = text(
        OWNER_LENGTH,
        required=True,
        metadata={
            "description": "an owner: github:ORG_OR_USER, or local:DIRECTORY under a root",
            "example": "local:/srv/forge",
        },
    )
    target = text(OWNER_LENGTH, required=True, metadata={"example": "github:acme"})
    dry_run = fields.Boolean(
        load_default=False,
        metadata={"description": "answer what a pass would do (200) and write nothing"},
    )
    ref_conflict_policy = one_of(POLICIES, load_default=None)
    schedule_cron = _cron(
        "the schedule (cron, UTC) each Binding made gets, its slots spread within the "
        "period; its sync is switched on after its first full apply",
        load_default=None,
    )
    pass_cron = _cron(
        "when passes pick up new source repositories by themselves (cron, UTC); null: "
        f"on demand only; omitted: {DEFAULT_PASS_CRON!r} for a new owner binding, "
        "unchanged for the pair's existing one"
    )
    confirm_visibility = fields.Boolean(
        load_default=False,
        metadata={
            "description": "confirm that existing targets may be more public than their "
            "sources (a created target never is)"
        },
    )
    source_connection_id = text(
        255,
        load_default=None,
        allow_none=True,
        metadata={"description": "the connection that opens the source owner's repositories"},
    )
    target_connection_id = text(
        255,
        load_default=None,
        allow_none=True,
        metadata={"description": "as source_connection_id, for the target owner's"},
    )


class PassCreateSchema(Schema):
    """POST /owner-bindings/{id}/passes."""

    dry_run = fields.Boolean(
        load_default=False,
        metadata={"description": "answer what the pass would do (200) and write nothing"},
    )


class RepositoryOutcomeSchema(Schema):
    """What a pass did (or would do) with one source repository."""

    name = fields.String(required=True)
    source = fields.String(required=True, metadata={"description": "PROVIDER:LOCATOR"})
    target = fields.String(required=True, metadata={"description": "its namesake's locator"})
    outcome = one_of(
        [o.value for o in Outcome],
        required=True,
        metadata={
            "description": "created, bound (an empty target), adopted (the pair's Binding), "
            "already_bound, unbound (its Binding was deleted: not made again), clash (the "
            "target holds data: untouched), cannot_create, failed, gone (no longer in the "
            "source: its Binding is kept); a dry run's would_create, would_bind, would_adopt"
        },
    )
    binding_id = fields.Integer(allow_none=True)
    run_id = fields.Integer(allow_none=True, metadata={"description": "its first Run, queued"})
    error_code = fields.String(allow_none=True)
    message = fields.String(allow_none=True)


class PassReportSchema(Schema):
    """One pass: what it listed and did with each source repository."""

    owner_binding_id = fields.Integer(allow_none=True)
    source = fields.String(required=True)
    target = fields.String(required=True)
    dry_run = fields.Boolean(required=True)
    started_at = fields.DateTime(required=True)
    finished_at = fields.DateTime(allow_none=True)
    found = fields.Integer(required=True, metadata={"description": "source repositories"})
    counts = fields.Dict(
        keys=fields.String(), values=fields.Integer(), required=True, metadata={"example": {}}
    )
    error_code = fields.String(
        allow_none=True, metadata={"description": "why the pass stopped before its end"}
    )
    message = fields.String(allow_none=True)
    repositories = fields.List(fields.Nested(RepositoryOutcomeSchema), required=True)

    @pre_dump
    def _times(self, report: dict[str, Any], **_: Any) -> dict[str, Any]:
        """A report as kept (``PassReport.to_dict``: JSON, times as ISO 8601 text)."""
        return {
            **report,
            **{
                name: datetime.fromisoformat(report[name]) if report.get(name) else None
                for name in ("started_at", "finished_at")
            },
        }


class OwnerBindingSchema(Schema):
    """Two owners kept bound repository by repository."""

    id = fields.Integer(required=True)
    source = fields.String(required=True, metadata={"description": "PROVIDER:OWNER"})
    target = fields.String(required=True)
    source_connection_id = fields.String(allow_none=True)
    target_connection_id = fields.String(allow_none=True)
    ref_conflict_policy = fields.String(allow_none=True)
    schedule_cron = fields.String(allow_none=True)
    confirm_visibility = fields.Boolean(required=True)
    pass_cron = fields.String(allow_none=True)
    next_pass_at = fields.DateTime(allow_none=True)
    pass_running = fields.Boolean(required=True, metadata={"description": "a pass runs now"})
    last_pass_at = fields.DateTime(allow_none=True)
    last_pass = fields.Nested(PassReportSchema, allow_none=True)
    created_at = fields.DateTime()
    updated_at = fields.DateTime()

    @pre_dump
    def _from_model(self, row: OwnerBinding, **_: Any) -> dict[str, Any]:
        return {
            "id": row.id,
            "source": f"{row.source_provider}:{row.source_owner}",
            "target": f"{row.target_provider}:{row.target_owner}",
            "source_connection_id": row.source_connection_id,
            "target_connection_id": row.target_connection_id,
            "ref_conflict_policy": row.ref_conflict_policy,
            "schedule_cron": row.schedule_cron,
            "confirm_visibility": row.confirm_visibility,
            "pass_cron": row.pass_cron,
            "next_pass_at": row.next_pass_at,
            "pass_running": row.pass_started_at is not None,
            "last_pass_at": row.last_pass_at,
            "last_pass": row.last_pass,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        }


class OwnerBindingResultSchema(Schema):
    """POST /owner-bindings: the owner binding and its queued first pass (202), or a dry
    run's report (200, no owner binding)."""

    owner_binding = fields.Nested(OwnerBindingSchema, allow_none=True, required=True)
    pass_report = fields.Nested(
        PassReportSchema,
        allow_none=True,
        required=True,
        data_key="pass",
        metadata={"description": "a dry run's report; null when the pass is queued"},
    )


class OwnerBindingPageSchema(Schema):
    items = fields.List(fields.Nested(OwnerBindingSchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)


class OwnerBindingQueryArgsSchema(PageArgsSchema):
    pass


class OwnerBindingMemberSchema(Schema):
    """A source repository the owner binding bound, and its Binding."""

    name = fields.String(required=True)
    source_repository_id = fields.String(required=True)
    binding_id = fields.Integer(
        allow_none=True, metadata={"description": "null: deleted, and not made again"}
    )
    sync_switched_on = fields.Boolean(required=True)
    created_at = fields.DateTime(required=True)

    @pre_dump
    def _from_model(self, member: OwnerBindingMember, **_: Any) -> dict[str, Any]:
        return {
            "name": member.name,
            "source_repository_id": member.source_repository_id,
            "binding_id": member.binding_id,
            "sync_switched_on": member.sync_switched_on,
            "created_at": member.created_at,
        }


class OwnerBindingMemberListSchema(Schema):
    items = fields.List(fields.Nested(OwnerBindingMemberSchema), required=True)
