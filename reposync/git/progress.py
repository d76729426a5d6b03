"""What git says of a transfer while it runs: its progress lines, read as they come.

``git push --progress`` reports on stderr (a pipe too, not only a terminal) each phase of
the push as git 2.39's ``progress.c`` draws it: an update ends in ``\\r`` so the next
overwrites it on a terminal, at least once a second and whenever the percentage moves,
and a phase's last update ends in ``, done.`` and ``\\n``::

    Enumerating objects: 108044\\r ... Enumerating objects: 480250, done.
    Counting objects:  37% (177693/480250)\\r
    Writing objects:  23% (110458/480250), 74.11 MiB | 74.10 MiB/s\\r
    remote: Resolving deltas:  53% (4677/8823)        \\r
    remote: Checking connectivity: 128680        \\r

The ``remote:`` lines are the receiving side's own phases (its ``index-pack`` and
connectivity check), padded with spaces that clear the rest of a terminal line; over
smart HTTP they arrive the same way (``git http-backend``'s sideband). The bytes sent
appear once git has measured a throughput (about a second into ``Writing objects``).

This module only reads: ``ProgressReader.feed`` turns one line into a
``TransferProgress`` (phase, objects, bytes) or nothing; ``without_progress`` takes the
progress lines out of a stderr that is read for the target's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: One progress update: ``[remote: ]Title words: NN% (done/total)|count[, size unit[ | rate]]…``
#: (a title of two words at least: a hook's ``Error: 5`` stays the target's words).
_UPDATE = re.compile(
    r"^(?P<remote>remote: )?(?P<title>[A-Z][a-z]+(?: [a-z]+)+): +"
    r"(?:(?P<percent>\d+)% \((?P<done>\d+)/(?P<total>\d+)\)|(?P<count>\d+))"
    r"(?:, (?P<size>\d+(?:\.\d+)?) (?P<unit>GiB|MiB|KiB|bytes?)(?: \| [^,]*)?)?"
    r"(?P<tail>(?:, [^\r\n]*)?)\s*$"
)

_UNITS = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10, "bytes": 1, "byte": 1}


@dataclass(frozen=True, slots=True)
class TransferProgress:
    """Where one push is, in git's own figures.

    ``phase`` is git's name for it in lower case (``writing objects``), the receiving
    side's prefixed ``target:`` (``target: resolving deltas``); ``objects_total`` is
    None while git is still enumerating; ``bytes_done`` is what has been sent so far (it
    stays at the pack's size through the target's phases).
    """

    phase: str
    objects_done: int
    objects_total: int | None
    bytes_done: int

    def to_dict(self) -> dict[str, Any]:
        """The API's ``transfer`` shape (``GET /runs/{id}/progress``)."""
        return {
            "phase": self.phase,
            "objects_done": self.objects_done,
            "objects_total": self.objects_total,
            "bytes_done": self.bytes_done,
        }

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> TransferProgress:
        total = value.get("objects_total")
        return cls(
            phase=str(value["phase"]),
            objects_done=int(value["objects_done"]),
            objects_total=int(total) if total is not None else None,
            bytes_done=int(value.get("bytes_done") or 0),
        )

    def describe(self) -> str:
        """One line for people: ``writing objects 37% (177,693/480,250), 74.1 MiB``."""
        if self.objects_total:
            share = self.objects_done / self.objects_total
            figure = f"{share:.0%} ({self.objects_done:,}/{self.objects_total:,})"
        else:
            figure = f"{self.objects_done:,}"
        sent = f", {human_bytes(self.bytes_done)}" if self.bytes_done else ""
        return f"{self.phase} {figure}{sent}"


def human_bytes(count: int) -> str:
    """``74.1 MiB``: the units git prints, one decimal."""
    for unit in ("GiB", "MiB", "KiB"):
        if count >= _UNITS[unit]:
            return f"{count / _UNITS[unit]:.1f} {unit}"
    return f"{count} bytes"


def is_progress(line: str) -> bool:
    """Whether ``line`` (one of stderr's, ``\\r`` taken as a line end) is a progress
    update rather than something git or the target said."""
    return _UPDATE.match(line.strip("\r\n")) is not None


def without_progress(stderr: str) -> str:
    """``stderr`` without its progress updates: what git and the target said."""
    lines = re.split(r"\r\n|\r|\n", stderr)
    return "\n".join(line for line in lines if line.strip() and not is_progress(line))


class ProgressReader:
    """Reads one git process's stderr, line by line, into ``TransferProgress`` updates.

    It remembers the bytes sent (only ``Writing objects`` states them, the phases after
    it keep the figure) and says nothing for a line that is not an update or that
    repeats the previous one.
    """

    def __init__(self, remote: str = "target") -> None:
        self._remote = remote
        self._bytes = 0
        self._last: TransferProgress | None = None

    def feed(self, line: str) -> TransferProgress | None:
        match = _UPDATE.match(line.strip("\r\n"))
        if match is None:
            return None
        if match["size"] is not None:
            self._bytes = int(float(match["size"]) * _UNITS[match["unit"]])
        phase = match["title"].lower()
        if match["remote"]:
            phase = f"{self._remote}: {phase}"
        if match["count"] is not None:
            done, total = int(match["count"]), None
        else:
            done, total = int(match["done"]), int(match["total"])
        progress = TransferProgress(phase, done, total, self._bytes)
        if progress == self._last:
            return None
        self._last = progress
        return progress
