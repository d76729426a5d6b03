"""Webhook subscriptions: create, change, delete; send a delivery again.

Operations take no user (the entry point authorized the caller through
``service.authorization`` first): a subscription's owner is an id given by the caller.
A target URL is checked against the request-forgery guard when it is saved, so a bad
one is a 422 now rather than a dead letter later; the secret is sealed before it is
stored and never read back out through here. A secret in the Standard Webhooks form
(``whsec_<base64>``) must be one its receiver's library reads as meant, or deliveries
would be signed with a key nobody holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from reposync.errors import NotAllowedNow, RecordNotFound, UsageError
from reposync.models import (
    Binding,
    DeliveryStatus,
    WebhookDelivery,
    WebhookSubscription,
    utcnow,
)
from reposync.service.accounts.sealing import seal
from reposync.service.context import ServiceContext
from reposync.service.webhooks.outbox import EVENTS, dispatch_deliveries
from reposync.service.webhooks.webhook_transport import (
    Resolver,
    check_target,
    standard_secret_problem,
    system_resolver,
)

#: What PATCH may change (``secret`` is sealed on its way in).
CHANGEABLE = ("url", "events", "binding_id", "branch", "secret", "active", "description")


def _events(events: Sequence[str]) -> list[str]:
    unknown = sorted(set(events) - set(EVENTS))
    if unknown or not events:
        raise UsageError(
            f"events must be a non-empty list of {', '.join(EVENTS)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    return [event for event in EVENTS if event in events]  # one order, no duplicates


def _branch(branch: str | None) -> str | None:
    if branch is None:
        return None
    branch = branch.strip()
    if not branch or branch in ("refs/heads/", "refs/"):
        raise UsageError("branch must name a branch (main, or refs/heads/main), or be null")
    return branch


def _sealed_secret(ctx: ServiceContext, secret: str) -> str:
    problem = standard_secret_problem(secret)
    if problem is not None:
        raise UsageError(problem)
    return seal(ctx.settings, secret)


def create_subscription(
    ctx: ServiceContext,
    owner_id: int,
    *,
    url: str,
    events: Sequence[str],
    secret: str,
    binding_id: int | None = None,
    branch: str | None = None,
    active: bool = True,
    description: str = "",
    resolve: Resolver = system_resolver,
) -> WebhookSubscription:
    """Save a subscription after checking its URL; its secret is sealed first."""
    check_target(url, ctx.settings.webhook_allowed_networks, resolve)
    subscription = WebhookSubscription(
        owner_id=owner_id,
        url=url.strip(),
        events=_events(events),
        binding_id=binding_id,
        branch=_branch(branch),
        secret_sealed=_sealed_secret(ctx, secret),
        active=active,
        description=description,
    )
    with ctx.db.transaction() as session:
        if binding_id is not None and session.get(Binding, binding_id) is None:
            raise RecordNotFound(f"binding {binding_id} does not exist")
        session.add(subscription)
        session.flush()
        session.expunge(subscription)
    return subscription


def update_subscription(
    ctx: ServiceContext,
    subscription_id: int,
    *,
    resolve: Resolver = system_resolver,
    **changes: Any,
) -> WebhookSubscription:
    """Change what was sent (``CHANGEABLE``); a new URL is checked, a new secret sealed."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise UsageError(f"cannot change {', '.join(sorted(unknown))}")
    values = dict(changes)
    if "url" in values:
        check_target(values["url"], ctx.settings.webhook_allowed_networks, resolve)
        values["url"] = values["url"].strip()
    if "events" in values:
        values["events"] = _events(values["events"])
    if "branch" in values:
        values["branch"] = _branch(values["branch"])
    if "secret" in values:
        values["secret_sealed"] = _sealed_secret(ctx, values.pop("secret"))
    with ctx.db.transaction() as session:
        subscription = _get(session, subscription_id)
        binding_id = values.get("binding_id")
        if binding_id is not None and session.get(Binding, binding_id) is None:
            raise RecordNotFound(f"binding {binding_id} does not exist")
        for name, value in values.items():
            setattr(subscription, name, value)
        subscription.updated_at = utcnow()
        session.flush()
        session.expunge(subscription)
    return subscription


def delete_subscription(ctx: ServiceContext, subscription_id: int) -> None:
    """Forget a subscription and its deliveries (pending ones are never sent)."""
    with ctx.db.transaction() as session:
        session.delete(_get(session, subscription_id))


def redeliver(ctx: ServiceContext, subscription_id: int, delivery_id: int) -> WebhookDelivery:
    """Send a finished delivery again: a new row, same ``guid`` and the same body.

    The receiver sees the same ``X-Reposync-Delivery`` (so it can tell a redelivery from
    a new event); the new row has attempts of its own. A delivery still pending is being
    retried already (409).
    """
    with ctx.db.transaction() as session:
        original = session.execute(
            select(WebhookDelivery).where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.subscription_id == subscription_id,
            )
        ).scalar_one_or_none()
        if original is None:
            raise RecordNotFound(
                f"delivery {delivery_id} of subscription {subscription_id} does not exist"
            )
        if original.status == DeliveryStatus.PENDING.value:
            raise NotAllowedNow(
                f"delivery {delivery_id} is still pending (attempt {original.attempts}); "
                "it is retried by itself"
            )
        now = utcnow()
        again = WebhookDelivery(
            subscription_id=subscription_id,
            guid=original.guid,
            event=original.event,
            binding_id=original.binding_id,
            branch=original.branch,
            body=original.body,
            status=DeliveryStatus.PENDING.value,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            redelivery_of=original.id,
        )
        session.add(again)
        session.flush()
        session.expunge(again)
    dispatch_deliveries(ctx, [again.id])
    return again


def _get(session: Session, subscription_id: int) -> WebhookSubscription:
    subscription = session.get(WebhookSubscription, subscription_id)
    if subscription is None:
        raise RecordNotFound(f"subscription {subscription_id} does not exist")
    return subscription
