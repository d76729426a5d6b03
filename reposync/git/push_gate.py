"""A push whose refs wait for an answer: the gate of ``transport.push(gate=...)``.

The answer (the LFS proof that no pointer needs moving first) is asked in a thread and
becomes a file in a directory of the gate's own, which a ``pre-receive`` hook watches:
the target's ``receive-pack`` holds every ref after the pack and its connectivity check
until the answer is yes, and refuses them all on a no, or once the gate or the reposync
process that made it is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from reposync.git.process import StopGently

log = logging.getLogger(__name__)


class GateClosed(StopGently):
    """A gated push's gate answered no: the push is ended gently (SIGTERM, so that the
    target's ``receive-pack`` removes what it received), never completed."""


#: The gate's ``pre-receive`` hook: the refs land only when the answer is yes, and never
#: once the gate, or the reposync process that made it, is gone.
_GATE_HOOK = """#!/bin/sh
# reposync's push gate (reposync.git.transport): exit 0 lets every ref land.
cat >/dev/null
while [ ! -e {open} ]; do
    if [ -e {closed} ] || [ ! -d {gate} ] || ! kill -0 {pid} 2>/dev/null; then
        echo "reposync: push gate closed" >&2
        exit 1
    fi
    sleep 0.02
done
"""


class PushGate:
    """One gated push's gate: the answer, asked in a thread, becomes a file (``open`` or
    ``closed``) in a directory of its own that the ``pre-receive`` hook watches."""

    def __init__(self, parent: Path, answer: Callable[[], bool]) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="reposync-gate-", dir=parent))
        hook = self.path / "hooks" / "pre-receive"
        hook.parent.mkdir()
        hook.write_text(
            _GATE_HOOK.format(
                open=shlex.quote(str(self.path / "open")),
                closed=shlex.quote(str(self.path / "closed")),
                gate=shlex.quote(str(self.path)),
                pid=os.getpid(),
            )
        )
        hook.chmod(0o755)
        self._answered = threading.Event()
        self._yes = False
        self._thread = threading.Thread(
            target=self._ask, args=(answer,), name="push-gate", daemon=True
        )
        self._thread.start()

    def _ask(self, answer: Callable[[], bool]) -> None:
        try:
            self._yes = bool(answer())
        except Exception:  # a thread's error has nowhere else to go: the gate stays shut
            log.exception("a push gate's answer failed")
            self._yes = False
        with contextlib.suppress(OSError):  # removed already: the hook refuses anyway
            (self.path / ("open" if self._yes else "closed")).touch()
        self._answered.set()

    def receive_pack(self, receive_pack: str | None) -> str | None:
        """``receive_pack`` running the gate's hook in place of none; None where the
        target's own hooks are not off (their place is not the gate's to take), or where
        the hook could not run: git passes over a hook it may not execute (a data
        directory on a ``noexec`` mount) and the refs would land unheld."""
        if receive_pack is None or not os.access(self.path / "hooks" / "pre-receive", os.X_OK):
            return None
        words = shlex.split(receive_pack)
        if (
            words[:1] != ["git"]
            or words[-1:] != ["receive-pack"]
            or f"core.hooksPath={os.devnull}" not in words
        ):
            return None
        return shlex.join([*words[:-1], "-c", f"core.hooksPath={self.path / 'hooks'}", words[-1]])

    def wait(self) -> bool:
        """The answer, once given."""
        self._answered.wait()
        return self._yes

    def check(self) -> None:
        """Raise ``GateClosed`` once the answer is no (a ``guarded`` check)."""
        if self._answered.is_set() and not self._yes:
            raise GateClosed

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
