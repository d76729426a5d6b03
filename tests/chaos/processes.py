"""The service's processes under a restart policy, as a container runtime would run them.

Every process (``reposync worker`` (N of them), ``reposync beat``, ``reposync api``) runs in its
own session, so a fault can SIGKILL or SIGSTOP it whole (pool children and ``git``
subprocesses included), exactly like a machine dying or freezing. A background thread
plays the restart policy: a process the harness killed on purpose is started again (that
was the fault, not an exit); a process that exits *by itself* is recorded as an exit,
with its log tail, and started again so the round can go on. The suite requires zero of
those exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.workers import ROOT

#: Seconds a restart policy waits before starting a process again.
RESTART_DELAY = 1.0


@dataclass
class Exit:
    """A process that ended without the harness asking for it."""

    name: str
    returncode: int | None
    at: float
    round_no: int
    log_tail: list[str]


@dataclass
class Managed:
    name: str
    kind: str  # worker | beat | api
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    ready_text: str | None = None
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    #: The harness killed it on purpose: its next exit is the fault, not an exit.
    doomed: bool = False
    frozen: bool = False
    restart_at: float | None = None
    #: Byte offset in the log where the current incarnation started.
    log_offset: int = 0
    history: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self, since: int = 0) -> str:
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size if self.log_path.exists() else 0

    def pids(self) -> set[int]:
        """Every live process of this one's session (main, pool children, git)."""
        if self.process is None:
            return set()
        found = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.getsid(int(entry)) == self.process.pid:
                    found.add(int(entry))
            except OSError:
                continue
        return found


class Supervisor:
    """Starts the processes and restarts them; counts the exits nobody asked for."""

    def __init__(self, log_dir: Path, say: Callable[[str], None]) -> None:
        self.log_dir = log_dir
        self.say = say
        self.processes: list[Managed] = []
        self.exits: list[Exit] = []
        self.fault_restarts = 0
        self.round_no = 0
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="restart-policy", daemon=True)

    # -- starting ---------------------------------------------------------------------------

    def add(
        self,
        name: str,
        kind: str,
        argv: list[str],
        env: dict[str, str],
        ready_text: str | None = None,
    ) -> Managed:
        managed = Managed(name, kind, argv, env, self.log_dir / f"{name}.log", ready_text)
        with self._lock:
            self.processes.append(managed)
            self._spawn(managed)
        return managed

    def begin(self) -> None:
        self._thread.start()

    def _spawn(self, managed: Managed) -> None:
        managed.log_offset = managed.log_size()
        managed.starts += 1
        with managed.log_path.open("ab") as log:
            log.write(
                f"\n===== chaos: start #{managed.starts} of {managed.name} "
                f"(round {self.round_no}) at {time.strftime('%H:%M:%S')} =====\n".encode()
            )
            log.flush()
            managed.process = subprocess.Popen(
                managed.argv,
                env=managed.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        managed.doomed = False
        managed.frozen = False
        managed.restart_at = None
        managed.history.append(f"start #{managed.starts} pid {managed.process.pid}")

    def wait_ready(self, managed: Managed, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                offset = managed.log_offset
                alive = managed.alive()
            if managed.ready_text is None or managed.ready_text in managed.log_text(offset):
                return
            if not alive and managed.restart_at is None:
                raise RuntimeError(f"{managed.name} exited:\n{managed.log_text(offset)[-4000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{managed.name} did not get ready in {timeout}s")
            time.sleep(0.1)

    # -- faults -----------------------------------------------------------------------------

    def kill(self, managed: Managed, *, whole: bool = True, pid: int | None = None) -> None:
        """SIGKILL the whole process (session) or one of its processes (a pool child);
        the restart policy starts it again."""
        with self._lock:
            if whole:
                managed.doomed = True
                self._signal_group(managed, signal.SIGKILL)
            elif pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def freeze(self, managed: Managed) -> None:
        with self._lock:
            managed.frozen = True
            self._signal_group(managed, signal.SIGSTOP)

    def thaw(self, managed: Managed) -> None:
        with self._lock:
            self._signal_group(managed, signal.SIGCONT)
            managed.frozen = False

    def _signal_group(self, managed: Managed, sig: signal.Signals) -> None:
        if managed.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(managed.process.pid, sig)

    def owner_of(self, pid: int) -> Managed | None:
        """The managed process whose session holds ``pid`` (a worker's pool child)."""
        try:
            sid = os.getsid(pid)
        except OSError:
            return None
        with self._lock:
            for managed in self.processes:
                if managed.pid == sid:
                    return managed
        return None

    def workers(self) -> list[Managed]:
        return [m for m in self.processes if m.kind == "worker"]

    # -- the restart policy -----------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check()
            except Exception as exc:  # the policy must outlive anything odd
                self.say(f"restart policy: {exc!r}")
            self._stop.wait(0.2)

    def check(self) -> None:
        now = time.monotonic()
        with self._lock:
            for managed in self.processes:
                if managed.process is None:
                    continue
                if managed.restart_at is not None:
                    if now >= managed.restart_at:
                        self._spawn(managed)
                    continue
                code = managed.process.poll()
                if code is None:
                    continue
                if managed.doomed:
                    self.fault_restarts += 1
                    managed.history.append(f"killed by the harness (exit {code})")
                else:
                    tail = managed.log_text(managed.log_offset).splitlines()[-40:]
                    self.exits.append(Exit(managed.name, code, time.time(), self.round_no, tail))
                    managed.history.append(f"exited by itself with {code}")
                    self.say(f"!! {managed.name} exited by itself (status {code})")
                # Whatever it left behind in its session dies with it (git, children).
                self._signal_group(managed, signal.SIGKILL)
                managed.restart_at = now + RESTART_DELAY

    def all_running(self) -> bool:
        with self._lock:
            return all(m.alive() and m.restart_at is None for m in self.processes)

    def shutdown(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        with self._lock:
            for managed in self.processes:
                if managed.process is None:
                    continue
                self._signal_group(managed, signal.SIGCONT)
                self._signal_group(managed, signal.SIGTERM)
            deadline = time.monotonic() + 15
            for managed in self.processes:
                if managed.process is None:
                    continue
                with contextlib.suppress(subprocess.TimeoutExpired):
                    managed.process.wait(max(0.1, deadline - time.monotonic()))
                self._signal_group(managed, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    managed.process.wait(5)
