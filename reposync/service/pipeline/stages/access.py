"""Stage ``checking_access``: both repositories reachable, the right ones, and permitted."""

from __future__ import annotations

from reposync.lifecycle import Stage
from reposync.providers.base import StandbyMarker
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages import visibility


def check_access(ex: StageExecution) -> Stage:
    if ex.cancel_requested():
        return ex.advance_now(Stage.FINALIZING, "cancel requested")
    # Opening verifies each locator still leads to the Binding's immutable repository id.
    source, target = ex.source(), ex.target()
    source.check_access(write=False)
    target.check_access(write=not ex.dry_run)
    visibility.check(ex, source, target)
    if not ex.dry_run and isinstance(target, StandbyMarker):
        target.mark_standby(ex.spec("source").display)  # humans now write to the authority
    return ex.advance_now(Stage.INVENTORY_SOURCE, "both repositories reachable")
