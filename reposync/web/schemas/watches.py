"""Branch watches: what creating one takes, and one watch with its revision cursor."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, pre_dump

from reposync.models import BranchWatch
from reposync.service.webhooks.watches import MAX_BRANCH
from reposync.sync.canonical import BRANCH_PREFIX
from reposync.web.pagination import PageArgsSchema
from reposync.web.schemas.common import record_id, text


class WatchCreateSchema(Schema):
    """POST /watches."""

    repository = text(
        1024,
        required=True,
        metadata={"description": "a locator: github:OWNER/NAME, or local:PATH under a root"},
    )
    branch = text(
        MAX_BRANCH + len(BRANCH_PREFIX),
        required=True,
        metadata={"description": "main or refs/heads/main"},
    )


class CursorSchema(Schema):
    """The branch's last movement as observed: never moved backwards by a late delivery."""

    before = fields.String(allow_none=True, metadata={"description": "null until a movement"})
    after = fields.String(allow_none=True, metadata={"description": "all zeros: deleted"})
    moved_at = fields.DateTime(allow_none=True, metadata={"description": "at the forge"})
    observed_at = fields.DateTime(allow_none=True, metadata={"description": "by reposync"})
    movements = fields.Integer(required=True)


class WatchSchema(Schema):
    id = fields.Integer(required=True)
    repository = fields.String(required=True, metadata={"description": "PROVIDER:LOCATOR"})
    provider = fields.String(required=True)
    repository_id = fields.String(required=True, metadata={"description": "immutable id"})
    locator = fields.String(required=True, metadata={"description": "follows renames"})
    branch = fields.String(required=True)
    ref = fields.String(required=True)
    created_by = fields.Integer(required=True, metadata={"description": "the user's id"})
    created_at = fields.DateTime(required=True)
    cursor = fields.Nested(CursorSchema, required=True)

    @pre_dump
    def _from_model(self, watch: BranchWatch, **_: Any) -> dict[str, Any]:
        return {
            "id": watch.id,
            "repository": f"{watch.provider}:{watch.locator}",
            "provider": watch.provider,
            "repository_id": watch.repository_id,
            "locator": watch.locator,
            "branch": watch.branch,
            "ref": BRANCH_PREFIX + watch.branch,
            "created_by": watch.created_by,
            "created_at": watch.created_at,
            "cursor": {
                "before": watch.before,
                "after": watch.after,
                "moved_at": watch.moved_at,
                "observed_at": watch.observed_at,
                "movements": watch.movements,
            },
        }


class WatchQueryArgsSchema(PageArgsSchema):
    repository_id = text(255)
    branch = text(MAX_BRANCH)


class WatchPageSchema(Schema):
    items = fields.List(fields.Nested(WatchSchema), required=True)
    next_after_id = record_id(allow_none=True, required=True)
