"""Stage ``verifying``: every item settled and proven before the Run may finish.

Items are verified by read-back inside their batch already; this stage closes the gaps a
crash can leave between the last batch and here, and sends the Run back to applying if
anything is still planned (a batch whose claim was lost).
"""

from __future__ import annotations

from sqlalchemy import func, select

from reposync.lifecycle import Stage
from reposync.models import RunItem
from reposync.service.pipeline.execution import StageExecution
from reposync.service.pipeline.stages.applying import next_batch, settle_unfinished
from reposync.sync.vocabulary import ItemState


def verify(ex: StageExecution) -> Stage:
    settle_unfinished(ex)
    if next_batch(ex) is not None:
        return ex.advance_now(Stage.APPLYING, "items still planned; back to applying")
    with ex.ctx.db.session() as session:
        open_items = session.execute(
            select(func.count()).where(
                RunItem.run_id == ex.run_id,
                RunItem.state.in_([ItemState.APPLYING.value, ItemState.VERIFYING.value]),
            )
        ).scalar_one()
    if open_items:
        return Stage.VERIFYING  # settle_unfinished raced a writer; look again
    return ex.advance_now(Stage.FINALIZING, "every item settled")
