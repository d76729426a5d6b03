"""The cases of a fault matrix: each answer a forge may give, at each place a Run asks,
once and from then on.

CI runs every answer once at every place (or at some, rotating), and from then on at one
place per answer (rotating over the places, so each place is struck so too);
``REPOSYNC_SOAK=1`` runs the whole matrix. A rate limit is struck only once: one that
never lifts is waited out, by design (the Run is deferred, never failed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest

from reposync.service.embedded import sync
from reposync.service.recovery import recover_run

SOAK = os.environ.get("REPOSYNC_SOAK", "") not in ("", "0")

#: (answer, place, from then on)
Case = tuple[int | str, str, bool]


def cases(
    answers: Sequence[int | str], places: Sequence[str], *, once_at: int | None = None
) -> list[Case]:
    """The matrix of ``answers`` at ``places``, as this run's profile takes it; with
    ``once_at``, CI strikes each answer once at that many places only (rotating, so
    every place is struck by several answers)."""
    chosen: list[Case] = []
    width = len(places) if SOAK or once_at is None else once_at
    for index, answer in enumerate(answers):
        for offset in range(width):
            chosen.append((answer, places[(index + offset) % len(places)], False))
        for place in places:
            if answer != 429 and (SOAK or place == places[index % len(places)]):
                chosen.append((answer, place, True))
    return chosen


def case_id(case: Case) -> str:
    answer, place, lasting = case
    return f"{answer}-{place}-{'from then on' if lasting else 'once'}"


def parametrized(chosen: list[Case]) -> pytest.MarkDecorator:
    """A test's parameters ``answer``, ``where`` and ``persistent``, one per case."""
    return pytest.mark.parametrize(
        ("answer", "where", "persistent"), chosen, ids=[case_id(case) for case in chosen]
    )


def strike(fake: Any, host: str, method: str, path: str, answer: int | str, lasting: bool) -> Any:
    """The fault of a case on ``fake``'s ``host``, once or from then on (``fault``)."""
    return fault(fake, host, method, path, answer, None if lasting else 1)


def fault(
    fake: Any, host: str, method: str, path: str, answer: int | str, count: int | None
) -> Any:
    """An HTTP error on ``fake``'s ``host`` (a 429 saying to retry after a second; a 403
    saying so would be a rate limit too), or with ``"lost"`` the work done and the
    connection closed before the answer, for ``count`` matching requests (``None``: from
    then on). Returns its rule."""
    if answer == "lost":
        return fake.faults.commit_then_drop(method, path, drop="close", host=host, count=count)
    return fake.faults.error(
        method,
        path,
        status=int(answer),
        host=host,
        count=count,
        retry_after=1 if answer == 429 else None,
    )


def converge(ctx: Any, fake: Any, run: Any, request: Any) -> None:
    """After a case's Run: the forge well again, a recovery where writes were left
    unknown proves every one of them, and one more Run completes."""
    fake.faults.clear()
    if any(p["error_code"] == "result_unknown" for p in run.report["problems"]):
        result = recover_run(ctx, run.id)
        assert result["still_unknown"] == 0, (result, run.report["problems"])
    again = sync(ctx, request)
    assert again.status == "completed", again.report["problems"]
