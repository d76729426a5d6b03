"""Visibility: never make a repository's data more public without an operator's yes.

When the standby is more public than the authority, a Run (and a handoff) needs a
confirmation: a hash over both immutable repository ids, the direction and both
visibilities. A later visibility change yields another hash, so the old confirmation no
longer counts: the Run is blocked before any write and scheduling is turned off.

The access stage checks here, and a webhook saying a repository's visibility changed
decides here too (``observe``: one rule, two callers); the operator's confirmation is
stored by ``bindings.confirm_visibility``.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import update

from reposync.errors import VisibilityUnconfirmed
from reposync.lifecycle import Side
from reposync.models import Binding
from reposync.providers.base import Provider, VisibilityReporter
from reposync.service.pipeline.execution import StageExecution

RANK = {"private": 0, "internal": 1, "public": 2}


def confirmation_hash(binding: Binding, source: Side, source_vis: str, target_vis: str) -> str:
    target = source.other
    source_repo = ":".join(binding.side(source)[:2])
    target_repo = ":".join(binding.side(target)[:2])
    text = f"{source_repo}->{target_repo}|{source_vis}|{target_vis}"
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def reported_visibility(provider: Provider) -> str | None:
    """What the provider says of its repository, when it can say anything."""
    return provider.visibility() if isinstance(provider, VisibilityReporter) else None


def observe(
    binding: Binding, source: Side, source_vis: str | None, target_vis: str | None
) -> tuple[dict[str, object], bool]:
    """The Binding columns one observation of both sides' visibility sets, and whether
    syncing is refused now: a standby more public than its authority without the
    operator's confirmation of exactly these visibilities (a changed visibility voids an
    older confirmation). A refusal also turns sync and the schedule off."""
    values: dict[str, object] = (
        {"a_visibility": source_vis, "b_visibility": target_vis}
        if source is Side.A
        else {"a_visibility": target_vis, "b_visibility": source_vis}
    )
    exposed = (
        source_vis is not None
        and target_vis is not None
        and RANK.get(target_vis, 2) > RANK.get(source_vis, 2)
    )
    expected = confirmation_hash(binding, source, source_vis or "", target_vis or "")
    refused = exposed and binding.visibility_confirmation != expected
    if refused:  # stop before any write, and stop the schedule too
        values.update(sync_enabled=False, next_run_at=None)
    return values, refused


def check(ex: StageExecution, source: Provider, target: Provider) -> None:
    """Record both sides' visibility; refuse a more public standby without confirmation."""
    source_vis, target_vis = reported_visibility(source), reported_visibility(target)
    values, refused = observe(ex.binding, ex.source_side, source_vis, target_vis)
    with ex.fenced() as session:
        session.execute(update(Binding).where(Binding.id == ex.binding.id).values(**values))
    if refused:
        raise VisibilityUnconfirmed(
            f"{ex.spec('target').display} is {target_vis} but {ex.spec('source').display} is "
            f"{source_vis}: syncing would publish private data; confirm it on the Binding first"
        )
