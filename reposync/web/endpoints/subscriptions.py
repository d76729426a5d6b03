"""``/subscriptions``: webhooks out, and each subscription's deliveries.

Anyone with a token may subscribe; a subscription is seen and changed by its owner and
the admins (others: 404). A Binding filter needs the Binding to be visible to the caller
(404 otherwise), and a member's subscription only ever receives events of Bindings the
member may see. The secret is accepted, sealed, and never answered.
"""

from __future__ import annotations

from typing import Any

from flask import url_for
from flask.views import MethodView
from flask_smorest import Blueprint

from reposync.service.accounts.authorization import authorize_binding, authorize_subscription
from reposync.service.queries import get_subscription_for, list_deliveries, list_subscriptions
from reposync.service.webhooks.subscriptions import (
    create_subscription,
    delete_subscription,
    redeliver,
    update_subscription,
)
from reposync.web.auth import current_user, load_user, service_context
from reposync.web.errors import documents
from reposync.web.pagination import page
from reposync.web.schemas.common import id_rule
from reposync.web.schemas.subscriptions import (
    DeliveryPageSchema,
    DeliveryQueryArgsSchema,
    DeliverySchema,
    SubscriptionCreateSchema,
    SubscriptionPageSchema,
    SubscriptionQueryArgsSchema,
    SubscriptionSchema,
    SubscriptionUpdateSchema,
)

blueprint = Blueprint(
    "subscriptions", __name__, description="Webhooks out: subscriptions and their deliveries"
)
blueprint.before_request(load_user)

LOCATION = {"Location": {"schema": {"type": "string"}}}


@blueprint.route("/subscriptions")
class SubscriptionsView(MethodView):
    @blueprint.doc(operationId="list_subscriptions")
    @blueprint.arguments(SubscriptionQueryArgsSchema, location="query")
    @blueprint.response(200, SubscriptionPageSchema)
    @documents(blueprint, 401)
    def get(self, args: dict[str, Any]) -> Any:
        """List the subscriptions the caller owns (an admin: every one), oldest first."""
        rows = list_subscriptions(service_context(), current_user(), **args)
        return page(rows, args["limit"])

    @blueprint.doc(operationId="create_subscription")
    @blueprint.arguments(SubscriptionCreateSchema)
    @blueprint.response(201, SubscriptionSchema, headers=LOCATION)
    @documents(blueprint, 401, 404, 422, 503)
    def post(self, args: dict[str, Any]) -> Any:
        """Subscribe a URL to events, optionally of one Binding and branch.

        The URL is refused (422 ``webhook_target_refused``) when it resolves to a
        non-public address the operator did not allow. 503 ``secret_key_missing`` when the
        server has no REPOSYNC_SECRET_KEY to seal the secret with.
        """
        ctx, user = service_context(), current_user()
        if args["binding_id"] is not None:
            authorize_binding(ctx, user, args["binding_id"])
        subscription = create_subscription(ctx, user.id, **args)
        location = url_for("subscriptions.SubscriptionView", subscription_id=subscription.id)
        return subscription, 201, {"Location": location}


@blueprint.route(f"/subscriptions/{id_rule('subscription_id')}")
class SubscriptionView(MethodView):
    @blueprint.doc(operationId="get_subscription")
    @blueprint.response(200, SubscriptionSchema)
    @documents(blueprint, 401, 404)
    def get(self, subscription_id: int) -> Any:
        """Show one subscription (never its secret)."""
        return get_subscription_for(service_context(), current_user(), subscription_id)

    @blueprint.doc(operationId="update_subscription")
    @blueprint.arguments(SubscriptionUpdateSchema)
    @blueprint.response(200, SubscriptionSchema)
    @documents(blueprint, 401, 404, 422, 503)
    def patch(self, changes: dict[str, Any], subscription_id: int) -> Any:
        """Change the URL, events, filters, secret, description, or pause it (``active``).

        A paused subscription keeps its pending deliveries until it is active again.
        """
        ctx, user = service_context(), current_user()
        authorize_subscription(ctx, user, subscription_id)
        if changes.get("binding_id") is not None:
            authorize_binding(ctx, user, changes["binding_id"])
        return update_subscription(ctx, subscription_id, **changes)

    @blueprint.doc(operationId="delete_subscription")
    @blueprint.response(204)
    @documents(blueprint, 401, 404)
    def delete(self, subscription_id: int) -> Any:
        """Delete a subscription with its deliveries (pending ones are not sent)."""
        ctx = service_context()
        authorize_subscription(ctx, current_user(), subscription_id)
        delete_subscription(ctx, subscription_id)
        return None


@blueprint.route(f"/subscriptions/{id_rule('subscription_id')}/deliveries")
class DeliveriesView(MethodView):
    @blueprint.doc(operationId="list_subscription_deliveries")
    @blueprint.arguments(DeliveryQueryArgsSchema, location="query")
    @blueprint.response(200, DeliveryPageSchema)
    @documents(blueprint, 401, 404)
    def get(self, args: dict[str, Any], subscription_id: int) -> Any:
        """A subscription's deliveries, newest first: status, attempts, the last response
        and when a pending one is tried next."""
        rows = list_deliveries(service_context(), current_user(), subscription_id, **args)
        return page(rows, args["limit"])


@blueprint.route(
    f"/subscriptions/{id_rule('subscription_id')}/deliveries/{id_rule('delivery_id')}/redeliver"
)
class RedeliverView(MethodView):
    @blueprint.doc(operationId="redeliver_subscription_delivery")
    @blueprint.response(202, DeliverySchema)
    @documents(blueprint, 401, 404, 409)
    def post(self, subscription_id: int, delivery_id: int) -> Any:
        """Send a delivered or failed delivery again: a new delivery with the same
        ``guid`` (X-Reposync-Delivery) and body; 409 while it is still pending."""
        ctx = service_context()
        authorize_subscription(ctx, current_user(), subscription_id)
        return redeliver(ctx, subscription_id, delivery_id), 202
