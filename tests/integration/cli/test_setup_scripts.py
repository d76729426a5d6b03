"""The README's two commands on a machine where another apt is at work (issue 25).

A fresh Debian machine runs unattended-upgrades; the test command failed once because
apt-get found the dpkg lock held and gave up at once, without naming what it wanted to
install. ``need_apt`` (scripts/lib.sh, used by both commands) now says what it installs
and waits, bounded, for the lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LOCK = Path("/var/lib/dpkg/lock-frontend")

#: Holds apt's frontend lock (apt takes it with fcntl, as ``lockf`` does) until stdin closes.
HOLDER = """
import fcntl, sys
with open(sys.argv[1], "w") as lock:
    fcntl.lockf(lock, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def apt_busy() -> Iterator[subprocess.Popen[str] | None]:
    """Another process holding apt's lock, as unattended-upgrades would; None where this
    process may not take it (not root, or no apt: need_apt then installs nothing)."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None or not LOCK.exists():
        yield None
        return
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(LOCK)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    yield holder
    if holder.poll() is None:
        holder.kill()
        holder.wait()


def test_need_apt_names_what_it_installs_and_waits_for_the_lock(apt_busy):
    """With the lock held, ``need_apt`` says what it installs and waits; once the other
    apt lets go it succeeds (git is installed already: nothing is downloaded). Where it
    may not install at all, it names the package and the command, and exits 2."""
    if apt_busy is None:
        refused = subprocess.run(
            ["bash", "-c", f". {ROOT / 'scripts' / 'lib.sh'} && need_apt git"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2
        assert "please install: git (for example: sudo apt-get install git)" in refused.stderr
        return
    command = subprocess.Popen(
        ["bash", "-c", f". {ROOT / 'scripts' / 'lib.sh'} && need_apt git"],
        env={**os.environ, "APT_LOCK_TIMEOUT": "120"},
        stderr=subprocess.PIPE,
        text=True,
    )
    with contextlib.suppress(subprocess.TimeoutExpired):
        command.wait(timeout=4)
    assert command.returncode is None, "need_apt gave up while another apt held the lock"
    assert apt_busy.stdin is not None
    apt_busy.stdin.close()  # the other apt finishes
    apt_busy.wait(timeout=10)
    _, err = command.communicate(timeout=120)
    assert command.returncode == 0, err
    assert "installing with apt-get: git" in err
