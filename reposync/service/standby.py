"""The standby's guard: a Binding's standby refuses writes from anyone but reposync.

Where the provider can (``StandbyMarker``: a local forge refuses its authoring API's
edits and, through a ``pre-receive`` hook, every push but reposync's own), the mark
follows the authority: set when a Binding is made and by every applying Run, moved by a
handoff, lifted when the Binding is deleted and no other keeps the repository a standby.
A forge reposync cannot freeze (GitHub) is guarded by nothing: a handoff from it needs
the operator's word that its writes stopped (``can_freeze``).
"""

from __future__ import annotations

import logging

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from reposync.errors import ReposyncError
from reposync.lifecycle import Side
from reposync.models import Binding
from reposync.providers.base import StandbyMarker
from reposync.providers.registry import provider_class
from reposync.service.context import ServiceContext
from reposync.service.lookups import endpoint_spec

log = logging.getLogger(__name__)


def can_freeze(provider: str) -> bool:
    """Whether reposync can keep writes out of a repository of this provider."""
    return issubclass(provider_class(provider), StandbyMarker)


def freeze(ctx: ServiceContext, binding: Binding, side: Side, *, authority: str) -> None:
    """Mark one side as the standby of ``authority``, where its provider can. Raises what
    the provider raises when it cannot lock (``PermissionDenied``, ``UsageError``); a side
    that cannot be opened now is left as it is (logged)."""
    _mark(ctx, binding, side, authority)


def thaw(ctx: ServiceContext, binding: Binding, side: Side) -> None:
    """Lift the mark of one side. Never fails its caller: a mark that stays is logged
    (the side keeps refusing edits until thawed by hand or by the next handoff)."""
    try:
        _mark(ctx, binding, side, None)
    except ReposyncError as exc:
        log.warning("binding %s: side %s still marked: %s", binding.id, side.value, exc.message)


def guard(ctx: ServiceContext, binding: Binding) -> None:
    """Freeze a new Binding's standby as the standby of its authority. A lock that cannot
    be installed is logged, not raised: the Binding exists already, and its first
    applying Run marks the standby again and fails with the reason."""
    authority = binding.authority
    try:
        freeze(ctx, binding, authority.other, authority=endpoint_spec(binding, authority).display)
    except ReposyncError as exc:
        log.warning("binding %s: its standby is not locked yet: %s", binding.id, exc.message)


def release(ctx: ServiceContext, binding: Binding) -> None:
    """Thaw the standby of a Binding that is gone, unless another Binding still has the
    same repository as its standby (its next applying Run marks it for its authority)."""
    standby = binding.authority.other
    provider, repository_id, _, _ = binding.side(standby)
    with ctx.db.session() as session:
        if _standby_elsewhere(session, binding.id, provider, repository_id):
            return
    thaw(ctx, binding, standby)


def _mark(ctx: ServiceContext, binding: Binding, side: Side, authority: str | None) -> None:
    assert ctx.open_provider is not None
    try:
        provider = ctx.open_provider(endpoint_spec(binding, side))
    except ReposyncError as exc:
        log.warning("binding %s: side %s not marked: %s", binding.id, side.value, exc.message)
        return
    try:
        if isinstance(provider, StandbyMarker):
            provider.mark_standby(authority)
    finally:
        provider.close()


def _standby_elsewhere(
    session: Session, binding_id: int, provider: str, repository_id: str
) -> bool:
    on_a = and_(
        Binding.a_provider == provider,
        Binding.a_repository_id == repository_id,
        Binding.authority_side == Side.B.value,
    )
    on_b = and_(
        Binding.b_provider == provider,
        Binding.b_repository_id == repository_id,
        Binding.authority_side == Side.A.value,
    )
    found = session.execute(
        select(Binding.id).where(Binding.id != binding_id, or_(on_a, on_b)).limit(1)
    ).first()
    return found is not None
