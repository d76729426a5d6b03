"""What GitHub makes of values it cannot keep as given, and how reposync reads them back.

Two fields of the issues/releases family are rewritten by GitHub itself:

* **Asset names.** GitHub "renames asset filenames that have special characters,
  non-alphanumeric characters, and leading or trailing periods" (upload-a-release-asset).
  Observed: every run of characters other than ASCII letters, digits, ``_``, ``-`` and
  ``.`` becomes one period (``checksums file.txt`` -> ``checksums.file.txt``, ``ünïcode.bin``
  -> ``n.code.bin``), periods are neither doubled nor kept at either end, a stem left
  empty becomes ``default``. reposync uploads under the source's name, GitHub answers its
  own, and the source's name goes into the asset's ``label``, which GitHub keeps
  verbatim (and its web page shows instead of the file name). Reads give the label back
  as the name when GitHub's name is what GitHub makes of the label: the asset then reads
  as the source wrote it (representation ``renamed``). Both names are on GitHub: the
  link records only that the pair is ``renamed``.
* **Milestone due dates.** GitHub keeps a day, answered as midnight US Pacific time
  (07:00 or 08:00 UTC by daylight saving time), the day being the Pacific day of the time
  it was sent. A due time that is not such a midnight keeps its exact value in a hidden
  header of the milestone's description (representation ``due_day_only``); reads take it
  back while GitHub still holds that day (an edit of the date on GitHub wins).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from reposync.sync.objects import timestamp

#: GitHub's own zone for dates it keeps without a time.
PACIFIC = ZoneInfo("America/Los_Angeles")
_DISALLOWED = re.compile(r"[^A-Za-z0-9_.\-]+")
_SIGNIFICANT = re.compile(r"[^A-Za-z0-9_\-]")


def _clean(part: str) -> str:
    return re.sub(r"\.{2,}", ".", _DISALLOWED.sub(".", part)).strip(".")


def asset_name(name: str) -> str:
    """The name GitHub gives an asset uploaded as ``name`` (see the module docstring)."""
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem.strip("."):
        stem, extension = name, ""
    stem, extension = _clean(stem) or "default", _clean(extension)
    return f"{stem}.{extension}" if extension else stem


def original_asset_name(name: str, label: str | None) -> str:
    """The name an asset had on its source: its label when GitHub's name was made of it.

    "Made of it": what ``asset_name`` gives, or (should GitHub's rule differ from this
    model in a detail) the same letters, digits, ``_`` and ``-`` in the same order. A
    label people gave an asset on GitHub ("Linux binary" on ``app-linux.tar.gz``)
    describes it and is not taken for a name.
    """
    if not label or label == name:
        return name
    if asset_name(label) == name:
        return label
    same = _SIGNIFICANT.sub("", label) == _SIGNIFICANT.sub("", name)
    return label if same and _SIGNIFICANT.sub("", name) else name


def due_day(moment: datetime | str) -> str:
    """What GitHub keeps of a due time: midnight US Pacific of its Pacific day, in UTC."""
    value = timestamp(moment)
    assert value is not None
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    day = when.astimezone(PACIFIC).date()
    midnight = datetime(day.year, day.month, day.day, tzinfo=PACIFIC).astimezone(UTC)
    return midnight.strftime("%Y-%m-%dT%H:%M:%SZ")


def keeps_due(due_on: str | None) -> bool:
    """Whether GitHub keeps this due time exactly (none, or a midnight US Pacific)."""
    return due_on is None or due_day(due_on) == timestamp(due_on)
