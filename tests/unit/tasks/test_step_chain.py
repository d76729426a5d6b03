"""A stage task runs the Run's next steps itself while its time budget lasts (issue 26)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reposync.config import Settings
from reposync.lifecycle import Stage
from reposync.service.context import Step
from reposync.tasks import base
from reposync.tasks.settings import BACKGROUND_PRIORITY, INTERACTIVE_PRIORITY

ORDER = [Stage.CHECKING_ACCESS, Stage.INVENTORY_SOURCE, Stage.PLANNING, Stage.FINALIZING]


@pytest.fixture
def pipeline(monkeypatch, tmp_path):
    """A Run of four steps; returns (steps executed, steps sent as messages, set budget)."""
    executed: list[Step] = []
    sent: list[Step] = []

    def execute_step(ctx, step, *, owner=None):
        executed.append(step)
        at = ORDER.index(step.stage)
        if at + 1 == len(ORDER):
            return None
        return Step(step.run_id, ORDER[at + 1], (step.generation or 0) + 1)

    def budget(seconds: float) -> None:
        ctx = SimpleNamespace(
            settings=Settings(data_dir=tmp_path, step_chain_seconds=seconds),
            dispatcher=SimpleNamespace(dispatch=sent.append),
        )
        monkeypatch.setattr(base, "_context", ctx)

    monkeypatch.setattr(base, "execute_step", execute_step)
    return executed, sent, budget


def task(priority: int | None) -> SimpleNamespace:
    return SimpleNamespace(
        request=SimpleNamespace(hostname="w1", id="t1", delivery_info={"priority": priority})
    )


def test_a_run_of_small_steps_finishes_in_the_task_that_started_it(pipeline):
    """Within the budget every next step runs here, each claiming the generation the
    previous one left, and nothing goes back to the queue."""
    executed, sent, budget = pipeline
    budget(5.0)
    base.run_stage(task(INTERACTIVE_PRIORITY), Stage.CHECKING_ACCESS, 7, None)
    assert [step.stage for step in executed] == ORDER
    assert [step.generation for step in executed] == [None, 1, 2, 3]
    assert sent == []


def test_a_spent_budget_sends_the_next_step_keeping_the_background_priority(pipeline):
    """With no budget left the next step becomes a message, and a scheduled Run's
    step stays in the background."""
    executed, sent, budget = pipeline
    budget(0.0)
    base.run_stage(task(BACKGROUND_PRIORITY), Stage.CHECKING_ACCESS, 7, None)
    assert [step.stage for step in executed] == [Stage.CHECKING_ACCESS]
    assert sent == [Step(7, Stage.INVENTORY_SOURCE, 1, background=True)]


def test_an_interactive_runs_next_step_is_sent_interactive(pipeline):
    """A manual or webhook Run's next step is not demoted when it has to be sent."""
    _, sent, budget = pipeline
    budget(0.0)
    base.run_stage(task(INTERACTIVE_PRIORITY), Stage.PLANNING, 7, 2)
    assert sent == [Step(7, Stage.FINALIZING, 3, background=False)]
