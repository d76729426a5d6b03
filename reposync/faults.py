"""Named fault points for crash tests (off unless ``REPOSYNC_FAULTS`` is set).

Temporal injects persistence faults at named points with a seed; this is the same idea at
our scale. A test starts a real worker with, for example::

    REPOSYNC_FAULTS="local_forge.after_commit:sleep=30:object_type=issue_comment:times=1"

and SIGKILLs it while it sleeps right after a batch was committed on the target, the
moment where a write happened but nobody recorded it. Production never sets the
variable; a point that is not configured costs one dictionary lookup.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

ENV = "REPOSYNC_FAULTS"


@dataclass
class _Fault:
    sleep: float = 0.0
    fail: bool = False
    object_type: str | None = None
    times: int | None = None


_lock = threading.Lock()
_faults: dict[str, _Fault] | None = None


class InjectedFault(RuntimeError):
    """Raised at a fault point configured with ``fail``."""


def _parse(spec: str) -> dict[str, _Fault]:
    faults: dict[str, _Fault] = {}
    for entry in filter(None, (part.strip() for part in spec.split(";"))):
        name, *options = entry.split(":")
        fault = _Fault()
        for option in options:
            key, _, value = option.partition("=")
            if key == "sleep":
                fault.sleep = float(value)
            elif key == "fail":
                fault.fail = True
            elif key == "object_type":
                fault.object_type = value
            elif key == "times":
                fault.times = int(value)
            else:
                raise ValueError(f"{ENV}: unknown option {key!r} in {entry!r}")
        faults[name] = fault
    return faults


def point(name: str, *, object_type: str | None = None) -> None:
    """Pass through a fault point: sleep or raise if a test configured it."""
    global _faults
    if _faults is None:
        _faults = _parse(os.environ.get(ENV, ""))
    fault = _faults.get(name)
    if fault is None or (fault.object_type and fault.object_type != object_type):
        return
    with _lock:
        if fault.times is not None:
            if fault.times <= 0:
                return
            fault.times -= 1
    if fault.sleep:
        time.sleep(fault.sleep)
    if fault.fail:
        raise InjectedFault(f"fault injected at {name}")


def reset() -> None:
    """Forget the parsed configuration (tests that change the variable)."""
    global _faults
    _faults = None
