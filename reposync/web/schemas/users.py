"""Users, their API tokens (never the secrets, except once at issue) and their grants."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, pre_dump, validate

from reposync.models import ApiToken
from reposync.service.accounts.users import token_state
from reposync.web.schemas.common import one_of, text

ROLES = ["admin", "member"]
#: A token lives at most ten years; 0 means until revoked.
MAX_TOKEN_DAYS = 3650


def token_days(**kwargs: Any) -> fields.Integer:
    return fields.Integer(
        validate=validate.Range(min=0, max=MAX_TOKEN_DAYS),
        metadata={"description": "lifetime in days (default: the server's; 0: until revoked)"},
        **kwargs,
    )


class UserSchema(Schema):
    id = fields.Integer(required=True)
    login = fields.String(required=True)
    role = fields.String(required=True)
    created_at = fields.DateTime()


class UserCreateSchema(Schema):
    login = text(255, required=True)
    role = one_of(ROLES, load_default="member")
    token_days = token_days(load_default=None)


class _TokenFields(Schema):
    id = fields.Integer(required=True)
    user_id = fields.Integer(required=True)
    name = fields.String(required=True)
    state = one_of(["active", "expired", "revoked"], required=True)
    created_at = fields.DateTime()
    expires_at = fields.DateTime(allow_none=True)
    last_used_at = fields.DateTime(allow_none=True)
    revoked_at = fields.DateTime(allow_none=True)


def token_fields(token: ApiToken) -> dict[str, Any]:
    names = ("id", "user_id", "name", "created_at", "expires_at", "last_used_at", "revoked_at")
    return {**{name: getattr(token, name) for name in names}, "state": token_state(token)}


class TokenSchema(_TokenFields):
    """A token as it is stored: what it is for and its dates, never its secret."""

    @pre_dump
    def _from_model(self, token: ApiToken, **_: Any) -> dict[str, Any]:
        return token_fields(token)


class IssuedTokenSchema(_TokenFields):
    """A token just issued: the only answer that carries its secret."""

    token = fields.String(
        required=True, metadata={"description": "the secret: shown this once, never again"}
    )


class CreatedUserSchema(UserSchema):
    token = fields.String(
        required=True, metadata={"description": "its first token: shown this once"}
    )


class TokenCreateSchema(Schema):
    name = fields.String(load_default="", validate=validate.Length(max=255))
    days = token_days(load_default=None)


class GrantSchema(Schema):
    provider = text(32, required=True, metadata={"example": "github"})
    repository_id = text(
        255, required=True, metadata={"description": "the immutable id a Binding shows"}
    )
