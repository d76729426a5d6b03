"""RunEvents: the append-only history of a Run, numbered per Run.

Sequence numbers come from a counter on the Run row (``UPDATE … RETURNING``), so two
writers can never hand out the same number and readers can follow ``after_seq``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from reposync.models import Run, RunEvent


def emit(
    session: Session,
    run_id: int,
    event_type: str,
    stage: str,
    *,
    generation: int | None = None,
    counts: dict[str, Any] | None = None,
    message: str = "",
) -> int:
    seq = session.execute(
        update(Run)
        .where(Run.id == run_id)
        .values(event_seq=Run.event_seq + 1)
        .returning(Run.event_seq)
    ).scalar_one()
    session.execute(
        insert(RunEvent).values(
            run_id=run_id,
            seq=seq,
            type=event_type,
            stage=stage,
            generation=generation,
            counts=counts or {},
            message=message,
        )
    )
    return seq
