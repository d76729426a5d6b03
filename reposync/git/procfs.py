"""Live processes as Linux's ``/proc`` shows them: who may still write a repository, and
how to end a process together with every process it started.

Git closes a ref lock's file descriptor once it has written the new value into it (the
``.lock`` file stays until the transaction commits or aborts), so "nobody has the lock
open" proves nothing. A process may still complete a ref transaction of a repository
when it is alive (a stopped one, state ``T``, resumes on SIGCONT) and

* has one of the lock files open (any program: libgit2, JGit), or
* is a ``git`` process whose working directory is in the repository (``receive-pack``
  and its hooks' ``git``, ``update-ref``, ``fetch`` into a bare repository, ...), or
  whose command line names it (``git push <path>``, ``git --git-dir <path> fetch``);
  for another user's ``git``, whose working directory we may not read, naming it
  includes a relative path ending in the repository's directory name.

A process this user may not inspect at all (``hidepid=1``) counts as a possible writer,
and so does everything where there is no ``/proc`` or it hides other users' processes
(``hidepid=2``): absence cannot be proven there.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
from collections.abc import Collection, Iterable
from pathlib import Path

PROC = Path("/proc")
#: ``/proc/<pid>/stat`` states of a process that is gone but not yet reaped.
_DEAD = frozenset("ZXx")
_STOPPED = frozenset("Tt")
_STATES = {"R": "running", "S": "sleeping", "D": "in disk wait", "T": "stopped", "t": "traced"}


def available() -> bool:
    """Whether this system has a Linux ``/proc`` to inspect."""
    return (PROC / "self" / "stat").is_file()


def hides_processes() -> bool:
    """Whether ``/proc`` hides other users' processes from this one (``hidepid=2``)."""
    if os.geteuid() == 0:
        return False
    try:
        lines = (PROC / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return True
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[4] == str(PROC):
            options = fields[-1].split(",")
            return "hidepid=2" in options or "hidepid=invisible" in options
    return False


def possible_writers(repository: Path, locks: Collection[Path]) -> list[str]:
    """The live processes that may still complete a ref transaction of ``repository``
    holding ``locks``, described for a human (pid, state, command). Empty only when
    ``/proc`` proves that none exists."""
    if not available():
        return ["any process (this system has no /proc to prove the writer gone)"]
    if hides_processes():
        return ["another user's process (/proc is mounted with hidepid)"]
    roots = _roots(repository)
    open_targets = {os.path.realpath(lock) for lock in locks}
    found: list[str] = []
    for pid in _pids():
        why = _may_write(pid, roots, open_targets)
        if why is not None:
            found.append(why)
    return found


def kill_tree(root: int, *, settle: float = 1.0, sig: signal.Signals = signal.SIGKILL) -> None:
    """SIGKILL ``root`` and every process it started, however deep (the
    ``receive-pack`` that ``git push`` runs over the local transport, its hooks,
    ``index-pack``, ``ssh``).

    Each generation is stopped before its children are looked up, so that none of them
    can start another one unseen, or be re-parented to init (out of reach) because its
    parent died first. Without ``/proc`` only ``root`` is killed.

    Another ``sig`` (SIGTERM) lets each process clean up as it ends (a ``receive-pack``
    removes its quarantined objects): the tree is continued after it is sent.
    """
    if not available():
        _signal(root, sig)
        return
    deadline = time.monotonic() + settle
    tree = {root}
    frontier = {root}
    while frontier:
        for pid in frontier:
            _signal(pid, signal.SIGSTOP)
        _await_stopped(frontier, deadline)
        children = {pid for pid, ppid in _parents().items() if ppid in tree} - tree
        tree |= children
        frontier = children
    for pid in tree:
        _signal(pid, sig)
    if sig != signal.SIGKILL:
        for pid in tree:
            _signal(pid, signal.SIGCONT)


# -- internals ----------------------------------------------------------------------------


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(PROC) if name.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid); ``None`` when the process is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return fields[0], int(fields[1])


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for pid in _pids():
        try:
            stat = _stat(pid)
        except OSError:
            continue
        if stat is not None:
            parents[pid] = stat[1]
    return parents


def _await_stopped(pids: Iterable[int], deadline: float) -> None:
    """Until each of ``pids`` is stopped or gone (a SIGSTOP takes effect when the process
    next leaves the kernel), or ``deadline`` passed."""
    pending = set(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                stat = _stat(pid)
            except OSError:
                stat = None
            if stat is None or stat[0] in _STOPPED or stat[0] in _DEAD:
                pending.discard(pid)
        if pending:
            time.sleep(0.001)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _roots(repository: Path) -> list[str]:
    """The repository's directory, and its work tree when it is a ``.git`` directory."""
    root = os.path.realpath(repository)
    roots = [root]
    if os.path.basename(root) == ".git":
        roots.append(os.path.dirname(root))
    return roots


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _may_write(pid: int, roots: list[str], open_targets: set[str]) -> str | None:
    """Why process ``pid`` may still write the repository, or ``None``."""
    base = PROC / str(pid)
    try:
        stat = _stat(pid)
        if stat is None or stat[0] in _DEAD:  # a zombie holds no file and runs no code
            return None
        argv = tuple(
            arg.decode(errors="surrogateescape")
            for arg in (base / "cmdline").read_bytes().split(b"\0")
            if arg
        )
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return f"pid {pid} (this user may not inspect it)"
    state = stat[0]
    files = _links(base / "fd")
    if files is not None and not files.isdisjoint(open_targets):
        return _describe(pid, state, argv, "has a lock file open")
    if not argv or not _is_git(argv[0]):
        return None
    cwd = _link(base / "cwd")
    if cwd is not None and _inside(cwd, roots):
        return _describe(pid, state, argv, "works in the repository")
    if _names_repository(argv[1:], roots, cwd):
        return _describe(pid, state, argv, "names the repository")
    return None


def _link(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _links(fd_dir: Path) -> set[str] | None:
    """What the process has open; ``None`` when this user may not look."""
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    targets = (_link(fd_dir / name) for name in names)
    return {target for target in targets if target is not None}


def _is_git(program: str) -> bool:
    name = os.path.basename(program)
    return name == "git" or name.startswith("git-")


def _names_repository(args: Iterable[str], roots: list[str], cwd: str | None) -> bool:
    """Whether an argument is a path into the repository: resolved against the process's
    working directory, or, when that is unknown, by the repository's directory name."""
    names = {os.path.basename(root) for root in roots}
    for arg in args:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        value = value.removeprefix("file://").strip("'\"")
        if not value or value.startswith("-"):
            continue
        if os.path.isabs(value) or cwd is not None:
            resolved = os.path.normpath(os.path.join(cwd or "/", value))
            if _inside(resolved, roots) or _inside(os.path.realpath(resolved), roots):
                return True
        elif os.path.basename(value.rstrip("/")) in names:
            return True
    return False


def _describe(pid: int, state: str, argv: tuple[str, ...], why: str) -> str:
    command = shlex.join(argv)
    if len(command) > 120:
        command = command[:117] + "..."
    return f"pid {pid} ({_STATES.get(state, state)}; {why}): {command}"
