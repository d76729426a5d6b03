"""Who may act on what, asked by every entry point that acts for a user.

One convention (issue 11): the API (and the web page after it) authorizes a change here
first, then calls an operation that takes no user (``bindings``, ``runs``, ``handoff``,
``recovery``), exactly as the CLI (acting with its own user's rights) and the tasks (the
system) call them. Reads are the other half: they take the user and show only what that
user may see (``queries``). Not visible is not found: a member learns nothing of
Bindings outside their grants, not even that an id exists.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select

from reposync.errors import ConnectionNotGranted, Forbidden, RecordNotFound, RepositoryNotFound
from reposync.models import Binding, BranchWatch, Run, User, WebhookSubscription
from reposync.providers.base import EndpointInfo
from reposync.providers.registry import parse_locator, provider_class
from reposync.service.context import ServiceContext
from reposync.service.queries import (
    granted_connection,
    repository_visible,
    subscription_visible,
    visible,
    watch_visible,
)


def require_admin(user: User) -> None:
    if user.role != "admin":
        raise Forbidden("this needs the admin role")


def authorize_binding(ctx: ServiceContext, user: User, binding_id: int) -> None:
    """Raise ``RecordNotFound`` unless ``user`` may act on the Binding."""
    with ctx.db.session() as session:
        found = session.execute(
            select(Binding.id).where(Binding.id == binding_id, visible(user))
        ).scalar_one_or_none()
    if found is None:
        raise RecordNotFound(f"binding {binding_id} does not exist")


def authorize_run(ctx: ServiceContext, user: User, run_id: int) -> None:
    """Raise ``RecordNotFound`` unless ``user`` may act on the Run (through its Binding)."""
    with ctx.db.session() as session:
        found = session.execute(
            select(Run.id)
            .join(Binding, Binding.id == Run.binding_id)
            .where(Run.id == run_id, visible(user))
        ).scalar_one_or_none()
    if found is None:
        raise RecordNotFound(f"run {run_id} does not exist")


def authorize_watch(ctx: ServiceContext, user: User, watch_id: int) -> None:
    """Raise ``RecordNotFound`` unless ``user`` may act on the watch (it can see it)."""
    with ctx.db.session() as session:
        found = session.execute(
            select(BranchWatch.id).where(BranchWatch.id == watch_id, watch_visible(user))
        ).scalar_one_or_none()
    if found is None:
        raise RecordNotFound(f"watch {watch_id} does not exist")


def authorize_repository(
    ctx: ServiceContext, user: User, provider: str, repository_id: str, locator: str
) -> None:
    """Raise ``RepositoryNotFound`` unless ``user`` may see the repository (admin, or a
    grant on it), with the same answer as for a repository that does not exist."""
    if not repository_visible(ctx, user, provider, repository_id):
        raise RepositoryNotFound.or_hidden(locator)


def authorize_subscription(ctx: ServiceContext, user: User, subscription_id: int) -> None:
    """Raise ``RecordNotFound`` unless ``user`` owns the subscription or is an admin.

    Its Binding filter was authorized when it was set (``authorize_binding``); a member
    who lost the grant since keeps the subscription (to delete it) but receives nothing.
    """
    with ctx.db.session() as session:
        found = session.execute(
            select(WebhookSubscription.id).where(
                WebhookSubscription.id == subscription_id, subscription_visible(user)
            )
        ).scalar_one_or_none()
    if found is None:
        raise RecordNotFound(f"subscription {subscription_id} does not exist")


def authorize_connections(
    ctx: ServiceContext,
    user: User,
    sides: tuple[tuple[str, str | None], tuple[str, str | None]],
) -> Callable[[EndpointInfo, EndpointInfo], None] | None:
    """May ``user`` create the Binding of these (locator, connection id) sides?

    An admin may name any connection (the App's installations: the provider's access
    stage checks what it reaches); answers None, nothing more to check. A member binds
    only through Connect GitHub: every side must name a connection granted to them
    (``Forbidden`` otherwise, as creating Bindings was admin-only before connections)
    whose grant lists the repository (``ConnectionNotGranted``, 404: an installation or a
    repository outside the member's grants is not visible to them). This reads no forge:
    a member's request never spends an installation's token on a repository they were
    not shown. The answer is the check ``bind_pair`` runs once both sides are open: the
    repository behind each name must be the one the grant recorded (a name can be
    reused after a rename or a deletion; GitHub's id cannot).
    """
    if user.role == "admin":
        return None
    expected: list[tuple[str, str]] = []
    for locator, connection in sides:
        if connection is None:
            raise Forbidden(
                "a member binds repositories through Connect GitHub: give each side the "
                "connection_id GET /github/repositories lists for it (other Bindings need "
                "an admin)"
            )
        spec = parse_locator(locator)
        normalized = provider_class(spec.provider).normalize_connection(connection)
        reached = granted_connection(ctx, user.id, normalized)
        refused = ConnectionNotGranted(
            f"{normalized} is not one of your Connect GitHub connections, or does not reach "
            f"{spec.display}"
        )
        if reached is None or spec.locator.casefold() not in reached:
            raise refused
        expected.append((reached[spec.locator.casefold()], spec.display))

    def admit(source: EndpointInfo, target: EndpointInfo) -> None:
        for info, (repository_id, display) in zip((source, target), expected, strict=True):
            if info.repository_id != repository_id:
                raise ConnectionNotGranted(
                    f"{display} is not the repository your Connect GitHub grant lists under "
                    "that name (renamed or replaced since): connect GitHub again"
                )

    return admit
