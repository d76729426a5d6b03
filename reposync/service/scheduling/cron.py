"""Cron expressions: whether one parses and fires again, and its next slot (UTC).

Apart from ``schedules`` (the tick that creates scheduled Runs) because a Binding's update
validates its cron too, and Bindings come before the Runs a schedule creates.

croniter is imported where a cron is read, not with the module: every ``reposync sync``
imports this module (through the Bindings' service) and most never read a cron, and
importing croniter runs ``file`` on the interpreter (``platform.architecture``), a child
process of every command's start-up.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from reposync.errors import UnschedulableCron, UsageError


def validate_cron(expression: str, now: datetime) -> str:
    """A cron expression that parses and fires again after ``now``; one that never does
    would leave the Binding's schedule with no next slot."""
    from croniter import CroniterBadCronError, croniter

    expression = expression.strip()
    try:
        croniter(expression)
    except (CroniterBadCronError, ValueError) as exc:
        raise UsageError(f"{expression!r} is not a cron expression: {exc}") from exc
    next_slot(expression, now)
    return expression


def next_slot(expression: str, after: datetime, offset: int = 0) -> datetime:
    """The first occurrence strictly after ``after`` (UTC), each occurrence moved by
    ``offset`` seconds (a Binding's ``schedule_offset``: an owner binding spreads the slots
    of its Bindings' one schedule).

    Raises ``UnschedulableCron`` when there is none (croniter gives up after searching
    the years ahead: ``0 0 31 2 *``, a year field in the past).
    """
    from croniter import CroniterBadDateError, croniter

    shift = timedelta(seconds=offset)
    try:
        value: datetime = croniter(expression, after - shift).get_next(datetime)
    except CroniterBadDateError as exc:
        raise UnschedulableCron(
            f"{expression!r} has no time after {after.isoformat()} at which it fires"
        ) from exc
    return value + shift


def period(expression: str, after: datetime) -> timedelta:
    """The time between the cron's next two occurrences after ``after``: how far apart
    its slots are (``UnschedulableCron`` when it does not fire twice more)."""
    first = next_slot(expression, after)
    return next_slot(expression, first) - first
