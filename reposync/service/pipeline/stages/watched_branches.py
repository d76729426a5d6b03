"""Where a Run read each watched branch of its source: the cursors a delivery would move.

Branch watches learn of movements from webhook deliveries, and a delivery may be lost;
the Run that syncs the movement reads the source anyway. At the Run's end, in
finalizing's fenced transaction, each watch on a branch of the Run's source takes what
the Run read (``watches.observe_sightings``, by the rules of ``sync.cursors.sight``):
its cursor moves (never backwards) and ``branch.moved`` is emitted once, whether the
delivery came first, later or never.

What the Run read is its source inventory: the snapshot rows (every ref for a full plan;
for a checkpoint the changed ones and those gone, the others being where their link
says). When it read them: after the access stage ended and before the source inventory
did (the Run's own events), the window ``cursors.Sighting`` needs. The revision the
Binding had synced (an empty cursor's origin) is the ref's item's expected revision.

Everything slow happens before the fenced transaction (``prepare``): the reads, opening
the sides to find a repository on this machine, and ``git diff-tree`` for the moves the
cursors as read then would take. The transaction (``observe``) locks the watches and
decides again; only a cursor that moved in between costs a comparison there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reposync.errors import ReposyncError
from reposync.git.diffs import ChangedFiles
from reposync.lifecycle import Side, Stage
from reposync.models import BranchWatch, InventoryEntry, ObjectLink, Run, RunEvent, RunItem
from reposync.service.pipeline.execution import StageExecution
from reposync.service.webhooks.watches import (
    FilesOf,
    cursor_of,
    files_in,
    local_git_dir,
    observe_sightings,
)
from reposync.sync.canonical import BRANCH_PREFIX
from reposync.sync.cursors import Sighting, moved, sight
from reposync.sync.planner import PlanMode
from reposync.sync.vocabulary import ObjectType

log = logging.getLogger(__name__)

#: Git's id of "no such ref": where a branch stands that the source does not have.
ABSENT = "0" * 40
#: Plans of a Binding's first Run: nothing was synced before, so no movement is known.
FIRST_PLANS = (PlanMode.EMPTY_TARGET.value, PlanMode.BASELINE.value)
_REF = ObjectType.GIT_REF.value


@dataclass(frozen=True, slots=True)
class Prepared:
    """What ``observe`` needs: the sightings, and the changed files of their moves."""

    sightings: dict[str, Sighting]
    files_of: FilesOf


def prepare(ex: StageExecution) -> Prepared | None:
    """The sightings of the watched branches of the Run's source (None: nothing watched
    there, or no source read), with the changed files of the moves they would make of
    the cursors as they are now already computed."""
    found = sightings(ex)
    if not found:
        return None
    provider, repository_id = ex.binding.side(ex.source_side)[:2]
    with ex.ctx.db.session() as session:
        watched = session.execute(
            select(BranchWatch).where(
                BranchWatch.provider == provider,
                BranchWatch.repository_id == repository_id,
                BranchWatch.branch.in_(sorted(found)),
            )
        ).scalars()
        moves = []
        for watch in watched:
            old = cursor_of(watch)
            new = sight(old, found[watch.branch])
            if moved(old, new) and new.before and new.after:
                moves.append((new.before, new.after))
    files = files_of(ex)
    for before, after in moves:
        files(before, after)  # remembered: the transaction asks again for free
    return Prepared(found, files)


def sightings(ex: StageExecution) -> dict[str, Sighting]:
    """Branch name -> where this Run read it, for the watched branches of its source
    (empty when nothing is watched there or the Run never finished reading the source)."""
    provider, repository_id = ex.binding.side(ex.source_side)[:2]
    with ex.ctx.db.session() as session:
        branches = sorted(
            session.execute(
                select(BranchWatch.branch)
                .where(
                    BranchWatch.provider == provider,
                    BranchWatch.repository_id == repository_id,
                )
                .distinct()
            ).scalars()
        )
        if not branches:
            return {}
        run = session.get(Run, ex.run_id)
        assert run is not None
        window = _read_window(session, ex.run_id)
        if window is None or run.source_digest is None:
            return {}
        names = {BRANCH_PREFIX + branch: branch for branch in branches}
        read = _revisions(session, ex, run, list(names))
        synced = _synced(session, ex.run_id, list(names))
    first = run.plan_mode in FIRST_PLANS
    found = {}
    for ref, branch in names.items():
        revision = read.get(ref, ABSENT)
        before = synced.get(ref, revision)  # no item: the ref did not change since
        if ref in synced and synced[ref] is None:  # created since the last Run
            before = None if first else ABSENT
        found[branch] = Sighting(revision, window[0], window[1], synced=before)
    return found


def _read_window(session: Session, run_id: int) -> tuple[datetime, datetime] | None:
    """(since, until): the access stage's end and the source inventory's end."""
    ends = dict(
        session.execute(
            select(RunEvent.stage, func.max(RunEvent.created_at))
            .where(
                RunEvent.run_id == run_id,
                RunEvent.type == "stage_completed",
                RunEvent.stage.in_([Stage.CHECKING_ACCESS.value, Stage.INVENTORY_SOURCE.value]),
            )
            .group_by(RunEvent.stage)
        ).all()
    )
    since, until = ends.get(Stage.CHECKING_ACCESS.value), ends.get(Stage.INVENTORY_SOURCE.value)
    if since is None or until is None or until < since:
        return None
    return since, until


def _revisions(session: Session, ex: StageExecution, run: Run, refs: list[str]) -> dict[str, str]:
    """Ref -> the revision the Run read (absent refs are left out)."""
    rows = session.execute(
        select(InventoryEntry.side, InventoryEntry.identity, InventoryEntry.revision).where(
            InventoryEntry.run_id == ex.run_id,
            InventoryEntry.object_type == _REF,
            InventoryEntry.identity.in_(refs),
            InventoryEntry.side.in_(["source", "gone"]),
        )
    ).all()
    read = {identity: revision for side, identity, revision in rows if side == "source"}
    if run.plan_mode != PlanMode.CHECKPOINT.value:
        return read  # a full snapshot: what it lacks, the source lacks
    gone = {identity for side, identity, _ in rows if side == "gone"}
    source_is_a = ex.source_side is Side.A
    identity = ObjectLink.a_identity if source_is_a else ObjectLink.b_identity
    revision = ObjectLink.a_revision if source_is_a else ObjectLink.b_revision
    unchanged = session.execute(
        select(identity, revision).where(
            ObjectLink.binding_id == ex.binding.id,
            ObjectLink.object_type == _REF,
            identity.in_([ref for ref in refs if ref not in read and ref not in gone]),
        )
    ).all()
    return {**{ref: rev for ref, rev in unchanged if rev}, **read}


def _synced(session: Session, run_id: int, refs: list[str]) -> dict[str, str | None]:
    """Ref -> the revision the Binding had synced before this Run, for the refs this Run
    planned (None: the ref was new to it)."""
    rows = session.execute(
        select(RunItem.source_identity, RunItem.intent).where(
            RunItem.run_id == run_id,
            RunItem.object_type == _REF,
            RunItem.source_identity.in_(refs),
        )
    ).all()
    return {
        str(ref): (str(intent["expected_revision"]) if intent.get("expected_revision") else None)
        for ref, intent in rows
    }


def files_of(ex: StageExecution) -> FilesOf:
    """The files a movement changed, from the repositories on this machine that may hold
    the Run's revisions: the source's, then (after an apply) the target's. The sides are
    opened at the first question; one that cannot be opened is skipped, never the Run's
    end."""
    ready: list[FilesOf] = []

    def lazy(before: str, after: str) -> ChangedFiles | None:
        if not ready:
            roles = ("source",) if ex.dry_run else ("source", "target")
            git_dirs = []
            for role in roles:
                try:
                    found = local_git_dir(ex.provider(role))
                except ReposyncError as error:
                    log.info("run %s: no changed files from the %s: %s", ex.run_id, role, error)
                    continue
                if found is not None:
                    git_dirs.append(found)
            ready.append(files_in(git_dirs))
        return ready[0](before, after)

    return lazy


def observe(ex: StageExecution, session: Session, prepared: Prepared) -> list[int]:
    """Move the watches' cursors in ``session`` (finalizing's fenced transaction); the
    ids of the watches that moved (their outbox rows are ``outbox.written_in(session)``)."""
    provider, repository_id = ex.binding.side(ex.source_side)[:2]
    return observe_sightings(
        session,
        provider,
        repository_id,
        prepared.sightings,
        run_id=ex.run_id,
        files_of=prepared.files_of,
    )
