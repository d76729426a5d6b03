"""A forge's batch loop obeys the stage's write guard between whole writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from reposync.errors import LeaseLost
from reposync.guards import guarded
from reposync.providers.base import TargetWrite, WriteStatus
from reposync.providers.forge.batch import ForgeWriter
from reposync.sync.canonical import CanonicalObject
from reposync.sync.vocabulary import Action, ObjectType, Representation


@dataclass
class _Context:
    numbers: Any = None
    created: dict[str, str] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)


class _Writer(ForgeWriter[_Context]):
    def current(self, write: TargetWrite) -> CanonicalObject | None:
        return None

    def find_created(self, write: TargetWrite) -> str | None:
        return None

    def representation(self, write: TargetWrite, identity: str) -> Representation | None:
        return None


def _create(ctx: _Context, write: TargetWrite) -> tuple[str, Representation | None]:
    ctx.sent.append(write.marker)
    return f"id-{write.item_id}", None


def _writes(count: int) -> list[TargetWrite]:
    return [
        TargetWrite(
            item_id=n,
            action=Action.CREATE,
            object_type=ObjectType.LABEL,
            target_identity=None,
            payload={"name": f"l{n}"},
            marker=f"m{n}",
        )
        for n in range(count)
    ]


def _writer(ctx: _Context) -> _Writer:
    return _Writer(ctx, "test forge", {(Action.CREATE, ObjectType.LABEL): _create})


def test_a_guard_that_raises_stops_the_batch_before_its_next_write() -> None:
    """The lease lost after the second write: the third is never sent, and the error
    reaches the stage (which reads back what the first two wrote)."""
    ctx = _Context()
    checks = 0

    def lease_check() -> None:
        nonlocal checks
        checks += 1
        if checks > 2:
            raise LeaseLost("generation 1 of binding 1 lost")

    with guarded(lease_check), pytest.raises(LeaseLost):
        _writer(ctx).apply(_writes(5))
    assert ctx.sent == ["m0", "m1"]


def test_outside_any_guard_every_write_is_sent() -> None:
    """No guard (a provider used on its own): the batch runs whole."""
    ctx = _Context()
    results = _writer(ctx).apply(_writes(3))
    assert ctx.sent == ["m0", "m1", "m2"]
    assert [r.status for r in results] == [WriteStatus.OK] * 3


def test_the_guard_is_asked_before_every_write_while_it_allows_them() -> None:
    """A guard that never raises is asked once per write, and changes nothing."""
    ctx = _Context()
    asked: list[int] = []
    with guarded(lambda: asked.append(len(ctx.sent))):
        results = _writer(ctx).apply(_writes(4))
    assert asked == [0, 1, 2, 3]
    assert [r.target_identity for r in results] == ["id-0", "id-1", "id-2", "id-3"]
