"""Signals end a command as Ctrl-C does, even when Python drops the exception."""

from __future__ import annotations

import signal
import threading

import pytest

from reposync import signals
from tests.interrupts import DROPPED, lose, python_default_signals, signal_self

#: Every case sets and sends signals of its own, from Python's defaults.
pytestmark = pytest.mark.usefixtures(python_default_signals.__name__)


@DROPPED
@pytest.mark.parametrize(
    ("signum", "raised"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, signals.Terminated)],
    ids=["SIGINT", "SIGTERM"],
)
def test_an_interruption_dropped_in_a_finalizer_is_raised_again_once(signum, raised):
    """Before, the command went on as if never asked to end: a sync ran to its end after
    Ctrl-C (found by the CLI's signal test on a loaded machine: the process slept out a
    60 s wait it should have left)."""
    with signals.terminations_interrupt():
        lose(signum)  # nothing raised here: Python dropped it in ``__del__``
        with pytest.raises(raised) as caught:
            signals.raise_unheard()
        assert signals.exit_status(caught.value) == 128 + signum
        signals.raise_unheard()  # once only


def test_an_interruption_heard_is_not_raised_after_the_command():
    """The exception that reached the command ends it; nothing is left for the next, and
    the handlers from before come back (under pytest-xdist SIGINT is ignored)."""
    before = {signum: signal.getsignal(signum) for signum in signals.INTERRUPTING}
    with signals.terminations_interrupt(), pytest.raises(signals.Terminated):
        signal_self(signal.SIGTERM)
    signals.raise_unheard()
    assert {signum: signal.getsignal(signum) for signum in signals.INTERRUPTING} == before


@DROPPED
def test_only_the_main_thread_hears_it():
    """A check in another thread (a forge batch's sender) leaves the interruption to the
    main thread, which handles signals."""
    with signals.terminations_interrupt():
        lose(signal.SIGINT)
        seen: list[BaseException] = []

        def check() -> None:
            try:
                signals.raise_unheard()
            except BaseException as error:
                seen.append(error)

        thread = threading.Thread(target=check)
        thread.start()
        thread.join()
        assert seen == []
        with pytest.raises(KeyboardInterrupt):
            signals.raise_unheard()


def test_a_repeated_sigterm_is_ignored_and_a_repeated_ctrl_c_is_not():
    with signals.terminations_interrupt():
        with pytest.raises(signals.Terminated):
            signal_self(signal.SIGTERM)
        signal_self(signal.SIGTERM)  # while unwinding: ignored
        with pytest.raises(KeyboardInterrupt):
            signal_self(signal.SIGINT)


def test_a_signal_the_process_was_started_ignoring_stays_ignored():
    """``nohup reposync sync`` ignores SIGHUP, and so does the command: a closed terminal
    does not end it. Before, the command put its own handler over the ignore and ended
    with ``terminated by SIGHUP``."""
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals.terminations_interrupt():
            signal_self(signal.SIGHUP)  # nothing raised
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            signals.raise_unheard()
            with pytest.raises(signals.Terminated):
                signal_self(signal.SIGTERM)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)
