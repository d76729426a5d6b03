"""Who holds a lease, and whether that process still exists.

A lease's TTL is what lets the next execution go on after its holder died: right for a
worker on another machine, which nobody here can ask. A ``reposync sync`` killed on this
host (SIGKILL, a crash, a closed terminal before signals were handled) is different: the
next ``sync`` of the pair can see that the holder is gone and go on at once instead of
answering ``binding_busy`` until the TTL runs out.

Seeing it must never be wrong the dangerous way (a live holder taken for dead writes
beside its successor until its next heartbeat). So the holder's name carries what makes
a process unique on Linux, not only its host name and pid: the machine's boot id and its
pid namespace (two containers may share a host name and a pid number), and the pid's
start time (a pid is reused). A holder is gone only when all of that is this process's
machine and the pid no longer runs with that start time; anything else (another host,
another container, a system without ``/proc``, a name of an older format) is alive and
left to its TTL.
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
import uuid
from pathlib import Path

PROC = Path("/proc")


def holder_name(label: str = "") -> str:
    """``host/pid/label/random/machine.start``: readable first, unique to the process."""
    pid = os.getpid()
    suffix = uuid.uuid4().hex[:8]
    identity = f"{_machine()}.{_start_time(pid) or '?'}"
    host = socket.gethostname()[:100]
    return f"{host}/{pid}/{(label or 'exec')[:60]}/{suffix}/{identity}"


def holder_gone(owner: str | None) -> bool:
    """Whether ``owner`` names a process of this machine that no longer runs."""
    if not owner:
        return False
    parts = owner.split("/")
    if len(parts) != 5 or not parts[1].isdigit():
        return False  # an older name, or not ours to judge
    machine, _, started = parts[4].partition(".")
    if not machine or machine != _machine() or not started or started == "?":
        return False
    return _start_time(int(parts[1])) != started


@functools.cache
def _machine() -> str:
    """This boot of this machine, seen from this pid namespace ("" where unknown)."""
    try:
        boot = (PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink(PROC / "self/ns/pid")
    except OSError:
        return ""
    return hashlib.sha256(f"{boot}\0{namespace}".encode()).hexdigest()[:12]


def _start_time(pid: int) -> str | None:
    """The pid's start time in clock ticks since boot (``/proc/PID/stat`` field 22);
    None for a process that ended, even one its parent has not reaped yet (a zombie:
    a killed process stays one until then, and a container's init may take its time)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count after its end.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields and fields[0] in ("Z", "X"):  # field 3, the state: zombie or dead
        return None
    return fields[19] if len(fields) > 19 else None
