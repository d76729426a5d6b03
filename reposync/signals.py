"""SIGTERM and SIGHUP end a command the way Ctrl-C does.

systemd, CI runners, ``timeout`` and ``kill`` send SIGTERM; a closed terminal sends SIGHUP.
Python's default for both is to die on the spot, which leaves the Run's lease held (the
next ``sync`` of the pair was refused ``binding_busy`` until the TTL ran out) and the
``git push`` child running on. SIGINT already unwinds cleanly: ``KeyboardInterrupt``
gives the lease up (``pipeline/runner.py``) and kills every git child with its own
children (``git/transport.py``). So the two signals raise a ``KeyboardInterrupt`` of
their own, and everything that is right for Ctrl-C is right for them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals a command treats as Ctrl-C.
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process was asked to end by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """128 plus the signal's number, as a shell reports a process the signal ended."""
    signum = interrupt.signum if isinstance(interrupt, Terminated) else signal.SIGINT
    return 128 + int(signum)


def describe(interrupt: KeyboardInterrupt) -> str:
    """``interrupted`` for Ctrl-C, ``terminated by SIGTERM`` for the others."""
    if isinstance(interrupt, Terminated):
        return f"terminated by {signal.Signals(interrupt.signum).name}"
    return "interrupted"


@contextmanager
def terminations_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise ``Terminated`` in the main thread.

    The first one raises; a repeat while the command unwinds is ignored, so a supervisor's
    second SIGTERM cannot cut the lease's release short (SIGKILL still ends it). The
    previous handlers come back on the way out (tests call the command in-process).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; there is nothing to unwind here
        return
    raised = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if raised.is_set():
            return
        raised.set()
        raise Terminated(signum)

    previous = {signum: signal.signal(signum, handler) for signum in TERMINATING}
    try:
        yield
    finally:
        for signum, handling in previous.items():
            signal.signal(signum, handling)
