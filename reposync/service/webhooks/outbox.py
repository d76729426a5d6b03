"""The outbox: an event becomes delivery rows in the transaction of the change it reports.

``notify(session, event, payload, ...)`` writes one ``WebhookDelivery`` per active
subscription that wants the event, **in the caller's session**, so the rows commit or
roll back with the state change itself (a Run's final status and its ``run.completed``
rows are one transaction). After the caller committed, ``dispatch_deliveries(ctx, ids)``
hands the rows to a worker; a lost hand-over costs nothing but time, because the
recovery tick dispatches every pending row that is overdue.

Who receives what follows the API's visibility: an admin's subscription gets every
matching event; a member's only events of Bindings (or repositories) the member may see
at the moment the event happens, with server paths taken out of the body as the API
takes them out for members.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, tuple_
from sqlalchemy.orm import Session

from reposync.models import (
    Binding,
    DeliveryStatus,
    RepositoryGrant,
    User,
    WebhookDelivery,
    WebhookSubscription,
    utcnow,
)
from reposync.service.context import ServiceContext

RUN_COMPLETED = "run.completed"
RUN_FAILED = "run.failed"
RUN_REQUIRES_ATTENTION = "run.requires_attention"
ITEM_BLOCKED = "item.blocked"
HANDOFF_COMPLETED = "handoff.completed"
BRANCH_MOVED = "branch.moved"
DRIFT_DETECTED = "drift.detected"

#: Every event a subscription may ask for (docs/webhooks.md describes each payload).
EVENTS = (
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_REQUIRES_ATTENTION,
    ITEM_BLOCKED,
    HANDOFF_COMPLETED,
    BRANCH_MOVED,
    DRIFT_DETECTED,
)

#: An absolute path not inside a URL, a locator or a ref name (``web.redaction`` uses it).
_PATH = re.compile(r"(?<![\w:/.~-])/[^\s'\"<>,;:()\[\]{}|]+")
REDACTED = "<path>"


def redact_paths(value: Any) -> Any:
    """``value`` with every absolute path in its strings replaced (dicts and lists too).

    Messages come from every layer (git, SQLite, the forges) and name the service's
    files; admins operate the server and see them, members never do.
    """
    if isinstance(value, str):
        return _PATH.sub(REDACTED, value)
    if isinstance(value, dict):
        return {key: redact_paths(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_paths(item) for item in value]
    return value


def branch_matches(wanted: str | None, branch: str | None) -> bool:
    """A subscription's branch filter against an event's branch.

    No filter: everything. An event about no branch (a Run's end) is not narrowed by a
    filter. ``main`` and ``refs/heads/main`` name the same branch.
    """
    if wanted is None or branch is None:
        return True
    return _full_branch(wanted) == _full_branch(branch)


def _full_branch(name: str) -> str:
    return name if name.startswith("refs/") else f"refs/heads/{name}"


def envelope(
    guid: str,
    event: str,
    payload: Mapping[str, Any],
    *,
    occurred_at: datetime,
    binding_id: int | None,
    branch: str | None,
) -> str:
    """The body of a delivery: the same bytes on every attempt (sorted, compact JSON)."""
    return json.dumps(
        {
            "id": guid,
            "event": event,
            "occurred_at": occurred_at.isoformat(),
            "binding_id": binding_id,
            "branch": branch,
            "data": payload,
        },
        sort_keys=True,
        separators=(",", ":"),
        default=_jsonable,
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def notify(
    session: Session,
    event: str,
    payload: dict[str, Any],
    *,
    binding_id: int | None = None,
    branch: str | None = None,
    repositories: Sequence[tuple[str, str]] = (),
) -> list[int]:
    """One pending delivery per active subscription that wants ``event``; their ids.

    Written in ``session``'s transaction: nothing is sent before the caller commits, and
    nothing is left behind when it rolls back. Hand the ids to ``dispatch_deliveries``
    after the commit (or leave them to the recovery tick).

    ``binding_id`` and ``branch`` say what the event is about, for the subscriptions'
    filters and for who may see it; an event about a repository rather than a Binding
    (a branch watch's) names it in ``repositories`` as ``(provider, repository_id)``: it
    reaches the subscriptions filtered on a Binding of that repository, and members with
    a grant on it.
    """
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}")
    query = (
        select(
            WebhookSubscription.id,
            WebhookSubscription.events,
            WebhookSubscription.branch,
            WebhookSubscription.owner_id,
            User.role,
        )
        .join(User, User.id == WebhookSubscription.owner_id)
        .where(WebhookSubscription.active.is_(True))
    )
    if binding_id is None:
        # An event about repositories reaches the subscriptions filtered on a Binding one
        # of whose sides is such a repository; an event about nothing in particular
        # reaches only the unfiltered ones.
        involved = _bindings_of(session, repositories)
        query = query.where(
            or_(
                WebhookSubscription.binding_id.is_(None),
                WebhookSubscription.binding_id.in_(involved),
            )
            if involved
            else WebhookSubscription.binding_id.is_(None)
        )
    else:
        query = query.where(
            or_(
                WebhookSubscription.binding_id.is_(None),
                WebhookSubscription.binding_id == binding_id,
            )
        )
    matching = [
        row
        for row in session.execute(query.order_by(WebhookSubscription.id)).all()
        if event in (row.events or []) and branch_matches(row.branch, branch)
    ]
    if not matching:
        return []
    members = {row.owner_id for row in matching if row.role != "admin"}
    seeing = _members_seeing(session, members, binding_id, repositories) if members else set()
    now = utcnow()
    deliveries = []
    for row in matching:
        if row.role != "admin" and row.owner_id not in seeing:
            continue  # not visible to its owner: never tell a member about it
        guid = str(uuid.uuid4())
        body = payload if row.role == "admin" else redact_paths(payload)
        deliveries.append(
            WebhookDelivery(
                subscription_id=row.id,
                guid=guid,
                event=event,
                binding_id=binding_id,
                branch=branch,
                body=envelope(
                    guid, event, body, occurred_at=now, binding_id=binding_id, branch=branch
                ),
                status=DeliveryStatus.PENDING.value,
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
        )
    session.add_all(deliveries)
    session.flush()
    ids = [delivery.id for delivery in deliveries]
    session.info.setdefault(_WRITTEN, []).extend(ids)
    return ids


_WRITTEN = "reposync.outbox.written"


def written_in(session: Session) -> list[int]:
    """Every delivery ``notify`` wrote in ``session`` so far: for a caller whose events are
    written deeper down (``watches.observe_branch_moves``) to dispatch after its commit::

        with ctx.db.transaction() as session:
            observe_branch_moves(session, ...)
            ids = written_in(session)
        dispatch_deliveries(ctx, ids)
    """
    return list(session.info.get(_WRITTEN, []))


def _bindings_of(session: Session, repositories: Sequence[tuple[str, str]]) -> list[int]:
    """The Bindings one of whose sides is one of ``repositories``."""
    if not repositories:
        return []
    pairs = list(repositories)
    return list(
        session.execute(
            select(Binding.id).where(
                or_(
                    tuple_(Binding.a_provider, Binding.a_repository_id).in_(pairs),
                    tuple_(Binding.b_provider, Binding.b_repository_id).in_(pairs),
                )
            )
        ).scalars()
    )


def _members_seeing(
    session: Session,
    members: Iterable[int],
    binding_id: int | None,
    repositories: Sequence[tuple[str, str]],
) -> set[int]:
    """Which of ``members`` hold a grant on the event's Binding or repositories."""
    pairs = list(repositories)
    if binding_id is not None:
        binding = session.get(Binding, binding_id)
        if binding is not None:
            pairs += [
                (binding.a_provider, binding.a_repository_id),
                (binding.b_provider, binding.b_repository_id),
            ]
    if not pairs:
        return set()
    return set(
        session.execute(
            select(RepositoryGrant.user_id).where(
                RepositoryGrant.user_id.in_(list(members)),
                tuple_(RepositoryGrant.provider, RepositoryGrant.repository_id).in_(pairs),
            )
        ).scalars()
    )


def dispatch_deliveries(ctx: ServiceContext, ids: Iterable[int]) -> None:
    """Hand committed delivery rows to a worker (call only after the commit)."""
    for delivery_id in ids:
        ctx.dispatcher.dispatch_delivery(delivery_id)
