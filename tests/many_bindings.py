"""Hundreds of Bindings in every state, written straight into the database: what the
Overview of a large installation shows, without syncing anything. The page tests count
the statements it costs and take its screenshot; ``bench/page_overview.py`` times it.

Each Binding gets a history of Runs (so the Overview has last ended Runs with reports to
read) and, by its index, one of the states an operator meets: in sync, failed, needs
attention, running (with items half settled), queued, catching up, cancelled, blocked on
an unknown write, never synced.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert, select, update

from reposync.models import Binding, Run, RunItem
from reposync.service.context import ServiceContext

#: The states cycled through by index (``seed``'s docstring).
KINDS = (
    "in_sync",
    "failed",
    "attention",
    "running",
    "queued",
    "pending",
    "cancelled",
    "blocked",
    "never",
)
#: A report as large as a real one (its problems and per-type counts), so that loading
#: a whole report would cost what it costs in production.
PER_TYPE = {
    kind: {"created": 12, "updated": 3, "deleted": 0, "unchanged": 400, "scanned": 415}
    for kind in ("git_ref", "label", "milestone", "issue", "issue_comment", "pull_request")
}
CONFLICT = {
    "error_code": "conflict",
    "problem_type": "repository_conflict",
    "category": "conflict",
    "message": "2 git_ref object(s) changed on both sides",
    "suggested_action": "resolve them on the standby or choose a conflict policy",
    "retryable": False,
    "count": 2,
    "object_type": "git_ref",
    "examples": ["branch main", "branch release"],
}
GAP = {
    "error_code": "unsupported_object",
    "problem_type": "sync_failed",
    "category": "data_gap",
    "message": "3 reaction object(s) cannot be written to the target",
    "suggested_action": "none: they are kept in the report",
    "retryable": False,
    "count": 3,
}


def _report(problems: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "counters": {"created": 12, "updated": 3, "deleted": 0},
        "per_type": PER_TYPE,
        "problems": problems,
        "examples": {f"ref-{i}": "x" * 200 for i in range(40)},
    }


def _run(binding_id: int, status: str, at: datetime, **values: Any) -> dict[str, Any]:
    ended = status not in ("queued", "running")
    return {
        "binding_id": binding_id,
        "source_side": "a",
        "target_side": "b",
        "authority_epoch": 1,
        "status": status,
        "stage": values.pop("stage", "completed" if ended else "queued"),
        "plan_complete": ended,
        "counters": {"created": 12, "updated": 3, "deleted": 0},
        "report": _report(values.pop("problems", [])) if ended else {},
        "created_at": at,
        "started_at": at + timedelta(seconds=1),
        "finished_at": at + timedelta(seconds=40) if ended else None,
        **values,
    }


def seed(ctx: ServiceContext, count: int, *, history: int = 3) -> list[int]:
    """``count`` Bindings (``history`` ended Runs each, then the state of ``KINDS`` by
    index); returns their ids."""
    now = datetime.now(UTC)
    with ctx.db.transaction() as session:
        first = session.execute(select(Binding.id).order_by(Binding.id.desc())).first()
        start = (first[0] if first else 0) + 1
        session.execute(
            insert(Binding),
            [
                {
                    "a_provider": "github",
                    "a_repository_id": f"seed-{start + i}-a",
                    "a_locator": f"github:example-org/service-{start + i:04d}",
                    "b_provider": "local",
                    "b_repository_id": f"seed-{start + i}-b",
                    "b_locator": f"local:/srv/mirror/example-org/service-{start + i:04d}.git",
                    "sync_enabled": True,
                    "schedule_cron": "*/15 * * * *",
                    "next_run_at": now + timedelta(minutes=(i % 15) + 1),
                }
                for i in range(count)
            ],
        )
        ids = list(
            session.execute(
                select(Binding.id).where(Binding.id >= start).order_by(Binding.id)
            ).scalars()
        )
        runs = []
        for index, binding_id in enumerate(ids):
            kind = KINDS[index % len(KINDS)]
            if kind == "never":
                continue
            for back in range(history, 0, -1):
                runs.append(_run(binding_id, "completed", now - timedelta(hours=back)))
            last = now - timedelta(minutes=5)
            if kind == "failed":
                runs.append(
                    _run(
                        binding_id,
                        "failed",
                        last,
                        error_code="git_transport_error",
                        error_message="git push failed: the remote hung up",
                    )
                )
            elif kind == "attention":
                runs.append(_run(binding_id, "requires_attention", last, problems=[CONFLICT]))
            elif kind == "pending":
                runs.append(_run(binding_id, "completed_with_pending_changes", last))
            elif kind == "cancelled":
                runs.append(_run(binding_id, "cancelled", last, stage="applying"))
            elif kind == "blocked":
                runs.append(_run(binding_id, "blocked", last, error_code="result_unknown"))
            elif kind == "in_sync":
                runs.append(_run(binding_id, "completed", last, problems=[GAP]))
            elif kind == "running":
                runs.append(_run(binding_id, "running", last, stage="applying"))
            elif kind == "queued":
                runs.append(_run(binding_id, "queued", last))
        session.execute(insert(Run), runs)
        rows = session.execute(
            select(Run.id, Run.binding_id, Run.status).where(Run.binding_id.in_(ids))
        ).all()
        converged: dict[int, int] = {}
        items = []
        for run_id, binding_id, status in rows:
            if status == "completed":
                converged[binding_id] = max(converged.get(binding_id, 0), run_id)
            if status in ("running", "blocked"):
                states = ["completed"] * 30 + ["planned"] * 30 if status == "running" else []
                if status == "blocked":
                    states = ["blocked"]
                for n, state in enumerate(states):
                    items.append(
                        {
                            "run_id": run_id,
                            "phase": 0,
                            "object_type": "git_ref",
                            "object_key": f"branch b{n}",
                            "action": "update",
                            "reason": "changed",
                            "state": state,
                            "error_code": "result_unknown" if state == "blocked" else None,
                            "intent": {},
                        }
                    )
        if items:
            session.execute(insert(RunItem), items)
        if converged:  # one bulk UPDATE by primary key
            session.execute(
                update(Binding),
                [{"id": b, "last_converged_run_id": r} for b, r in converged.items()],
            )
    return ids
