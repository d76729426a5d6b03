"""Whether a lease's holder still runs: gone only when that is certain."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reposync.service.pipeline import holders


def _name_of(pid: int, start: str | None = None, machine: str | None = None) -> str:
    """The name the process ``pid`` would have given itself."""
    started = start if start is not None else holders._start_time(pid)
    return f"host/{pid}/exec/0123abcd/{machine or holders._machine()}.{started}"


def test_this_process_is_not_gone():
    """The name this process gives itself names a running process."""
    name = holders.holder_name("test")
    assert name.split("/")[1:3] == [str(os.getpid()), "test"]
    assert not holders.holder_gone(name)


def test_a_running_child_is_not_gone_and_an_ended_one_is():
    """A holder is gone once its process has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        name = _name_of(child.pid)
        assert not holders.holder_gone(name)
    finally:
        child.kill()
        child.wait()
    assert holders.holder_gone(name)


def test_a_killed_holder_is_gone_before_it_is_reaped():
    """Issue 25: a killed process stays a zombie until its parent reaps it (a container's
    init may take its time); it runs no more code, so its lease is free at once."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    name = _name_of(child.pid)
    child.kill()
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, still unreaped
        assert holders.holder_gone(name)
    finally:
        child.wait()


def test_a_reused_pid_is_not_its_old_holder():
    """The same pid started at another time is another process: the holder is gone."""
    start = holders._start_time(os.getpid())
    assert start is not None
    assert holders.holder_gone(_name_of(os.getpid(), start=str(int(start) + 1)))


@pytest.mark.parametrize(
    "name",
    [
        None,
        "",
        "host/123/exec/0123abcd",  # the older format: no machine, the TTL decides
        f"host/{2**22 + 7}/exec/0123abcd/0123456789ab.5",  # another machine's pid
        f"host/{2**22 + 7}/exec/0123abcd/MACHINE.?",  # a start that was unknown
        "host/notapid/exec/0123abcd/MACHINE.5",
        f"host/{2**22 + 7}/exec/0123abcd/.5",  # a machine that was unknown
    ],
)
def test_what_cannot_be_judged_is_alive(name):
    """Another host or container, an older name or anything unknown is never gone."""
    if name is not None:
        name = name.replace("MACHINE", holders._machine())
    assert not holders.holder_gone(name)


def test_an_unknown_machine_judges_nothing(monkeypatch):
    """Without ``/proc`` nothing can be told apart: every holder is left to its TTL."""
    monkeypatch.setattr(holders, "PROC", holders.PROC / "does-not-exist")
    holders._machine.cache_clear()
    try:
        assert holders._machine() == ""
        assert not holders.holder_gone(f"host/{2**22 + 7}/exec/0123abcd/.5")
    finally:
        holders._machine.cache_clear()
