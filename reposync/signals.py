"""SIGTERM and SIGHUP end a command the way Ctrl-C does.

systemd, CI runners, ``timeout`` and ``kill`` send SIGTERM; a closed terminal sends SIGHUP.
Python's default for both is to die on the spot, which leaves the Run's lease held (the
next ``sync`` of the pair was refused ``binding_busy`` until the TTL ran out) and the
``git push`` child running on. SIGINT already unwinds cleanly: ``KeyboardInterrupt``
gives the lease up (``pipeline/runner.py``) and kills every git child with its own
children (``git/transport.py``). So the two signals raise a ``KeyboardInterrupt`` of
their own, and everything that is right for Ctrl-C is right for them.

Python drops an exception a signal handler raises while a finalizer runs (a ``__del__``,
a weakref callback, a generator the garbage collector closes: "Exception ignored in"),
and the command then goes on as if nobody had asked it to end: a sync ran to its end
after Ctrl-C, or slept out a wait while its test gave up. So each signal is also
remembered until the command has seen it, and the places where stopping is safe ask
again (``raise_unheard``: every lease check, and between a Run's steps).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals a command treats as Ctrl-C.
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
#: What a command catches while it runs: Ctrl-C and the signals it treats as such.
INTERRUPTING = (signal.SIGINT, *TERMINATING)
#: The signal whose interruption was raised and may have been dropped in a finalizer;
#: emptied once the command has ended (``terminations_interrupt``).
_unheard: list[int] = []


class Terminated(KeyboardInterrupt):
    """The process was asked to end by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interruption(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def raise_unheard() -> None:
    """Raise again, once, the interruption a signal asked for, in case its exception was
    dropped in a finalizer (see the module's docstring); nothing when there was none, or
    in another thread than the main one, where signals are handled. In the common case
    the first exception is already on its way out, and raising the same interruption at
    a later check on that way changes nothing of the ending."""
    if _unheard and threading.current_thread() is threading.main_thread():
        raise _interruption(_unheard.pop())


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
    """While inside, SIGTERM and SIGHUP raise ``Terminated`` in the main thread, and
    SIGINT ``KeyboardInterrupt``; each is remembered for ``raise_unheard`` too.

    The first one raises; a repeat of SIGTERM or SIGHUP while the command unwinds is
    ignored, so a supervisor's second SIGTERM cannot cut the lease's release short
    (SIGKILL still ends it); a repeated Ctrl-C raises again, as Python's own handler
    does. A signal the process was started ignoring stays ignored (``nohup``). The
    previous handlers come back on the way out (tests call the command in-process).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; there is nothing to unwind here
        return
    raised = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if raised.is_set() and signum != signal.SIGINT:
            return
        raised.set()
        _unheard[:] = [signum]
        raise _interruption(signum)

    # An ignored signal stays ignored: the parent chose so (``nohup`` ignores SIGHUP, a
    # shell's background job SIGINT), and a closed terminal must not end the command.
    previous = {
        signum: signal.signal(signum, handler)
        for signum in INTERRUPTING
        if signal.getsignal(signum) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        _unheard.clear()
        for signum, handling in previous.items():
            signal.signal(signum, handling)
