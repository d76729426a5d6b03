"""Signals delivered to the test process itself, and dropped in a finalizer, as Python
drops an exception raised in ``__del__`` (``reposync.signals``)."""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Iterator

import pytest


class SignalledWhileCollected:
    """An object whose finalizer receives ``signum``: the handler's exception is raised
    inside ``__del__``, where Python prints it and drops it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum

    def __del__(self) -> None:
        signal_self(self.signum)


def signal_self(signum: int) -> None:
    """Send ``signum`` to this process and run on until its handler has run."""
    os.kill(os.getpid(), signum)
    for _ in range(10_000):  # the handler runs between two of these bytecodes
        pass


def lose(signum: int) -> None:
    """Deliver ``signum`` inside a finalizer (its exception dropped there)."""
    doomed = SignalledWhileCollected(signum)
    del doomed
    gc.collect()


#: What Python says of the exception it dropped in ``__del__``: the point of these tests.
DROPPED = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def python_default_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP as a Python started from a terminal has them, whatever
    the test process inherited (a library another test ran may have left SIGINT
    ignored, and the command keeps an ignore it finds); the previous handlers after."""
    defaults = {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: signal.SIG_DFL,
        signal.SIGHUP: signal.SIG_DFL,
    }
    previous = {signum: signal.signal(signum, handler) for signum, handler in defaults.items()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
