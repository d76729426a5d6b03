"""Stage ``checking_access``: both repositories reachable, the right ones, and permitted."""

from __future__ import annotations

from reposync.service.execution import StageExecution
from reposync.sync.vocabulary import Stage


def check_access(ex: StageExecution) -> Stage:
    if ex.cancel_requested():
        return ex.advance_now(Stage.FINALIZING, "cancel requested")
    # Opening verifies each locator still leads to the Binding's immutable repository id.
    ex.source().check_access(write=False)
    ex.target().check_access(write=not ex.dry_run)
    return ex.advance_now(Stage.INVENTORY_SOURCE, "both repositories reachable")
