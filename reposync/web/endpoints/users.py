"""``/users`` and ``/tokens``: who may use the API, with what, until when; admin only.

A token's secret is answered once, when it is issued; afterwards only what it is for and
its dates are shown. A revoked or expired token is refused (401) at its next request.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.errors import RecordNotFound
from reposync.service.accounts import users
from reposync.web.auth import admin_only, load_user, service_context
from reposync.web.errors import documents
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.users import (
    CreatedUserSchema,
    GrantSchema,
    IssuedTokenSchema,
    TokenCreateSchema,
    TokenSchema,
    UserCreateSchema,
    UserSchema,
    token_fields,
)

blueprint = Blueprint("users", __name__, description="API users, their tokens and grants")
blueprint.before_request(load_user)


@blueprint.route("/users")
class UsersView(MethodView):
    @blueprint.doc(operationId="list_users")
    @admin_only
    @blueprint.response(200, UserSchema(many=True))
    @documents(blueprint, 401, 403)
    def get(self) -> Any:
        """List every user; admin only."""
        return users.list_users(service_context())

    @blueprint.doc(operationId="create_user")
    @admin_only
    @blueprint.arguments(UserCreateSchema)
    @blueprint.response(201, CreatedUserSchema)
    @documents(blueprint, 400, 401, 403)
    def post(self, args: dict[str, Any]) -> Any:
        """Create a user and issue its first token (answered this once); admin only."""
        ctx = service_context()
        user = users.create_user(ctx, args["login"], args["role"])
        token = users.issue_token(ctx, user.id, "initial", days=args["token_days"])
        return {
            "id": user.id,
            "login": user.login,
            "role": user.role,
            "created_at": user.created_at,
            "token": token,
        }


@blueprint.route(f"/users/{id_rule('user_id')}")
class UserView(MethodView):
    @blueprint.doc(operationId="delete_user")
    @admin_only
    @blueprint.response(204)
    @documents(blueprint, 401, 403, 404, 409)
    def delete(self, user_id: int) -> Any:
        """Delete a user with its tokens and grants (409 for the last admin); admin only."""
        users.delete_user(service_context(), user_id)
        return None


@blueprint.route(f"/users/{id_rule('user_id')}/tokens")
class UserTokensView(MethodView):
    @blueprint.doc(operationId="list_user_tokens")
    @admin_only
    @blueprint.response(200, TokenSchema(many=True))
    @documents(blueprint, 401, 403, 404)
    def get(self, user_id: int) -> Any:
        """A user's tokens, never their secrets; admin only."""
        return users.list_tokens(service_context(), user_id)

    @blueprint.doc(operationId="create_user_token")
    @admin_only
    @blueprint.arguments(TokenCreateSchema)
    @blueprint.response(201, IssuedTokenSchema)
    @documents(blueprint, 400, 401, 403, 404)
    def post(self, args: dict[str, Any], user_id: int) -> Any:
        """Issue a token (its secret is answered this once); admin only."""
        record, secret = users.issue_token_record(
            service_context(), user_id, args["name"], days=args["days"]
        )
        return {**token_fields(record), "token": secret}


@blueprint.route(f"/tokens/{id_rule('token_id')}")
class TokenView(MethodView):
    @blueprint.doc(operationId="revoke_token")
    @admin_only
    @blueprint.response(200, TokenSchema)
    @documents(blueprint, 401, 403, 404)
    def delete(self, token_id: int) -> Any:
        """Revoke a token for good (idempotent); admin only."""
        return users.revoke_token(service_context(), token_id)


@blueprint.route(f"/users/{id_rule('user_id')}/grants")
class GrantsView(MethodView):
    @blueprint.doc(operationId="create_user_grant")
    @admin_only
    @blueprint.arguments(GrantSchema)
    @blueprint.response(204)
    @documents(blueprint, 400, 401, 403, 404)
    def post(self, args: dict[str, Any], user_id: int) -> Any:
        """Let the user see the Bindings of one repository; admin only."""
        users.grant(service_context(), user_id, args["provider"], args["repository_id"])
        return None

    @blueprint.doc(operationId="delete_user_grant")
    @admin_only
    @blueprint.arguments(GrantSchema, location="query")
    @blueprint.response(204)
    @documents(blueprint, 401, 403, 404)
    def delete(self, args: dict[str, Any], user_id: int) -> Any:
        """Take a repository grant back; admin only."""
        ctx = service_context()
        if not users.revoke_grant(ctx, user_id, args["provider"], args["repository_id"]):
            raise RecordNotFound(
                f"user {user_id} has no grant on {args['provider']} {args['repository_id']}"
            )
        return None
