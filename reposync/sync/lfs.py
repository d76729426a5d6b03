"""Git LFS pointer files: what a blob must look like to name an LFS object.

A pointer is a small text blob (git-lfs's ``docs/spec.md``): a ``version`` line first,
then ``key value`` lines sorted by key, among them ``oid sha256:<64 hex>`` and
``size <bytes>``, each ending in a newline, the whole under 1024 bytes. reposync parses
them itself (runtime reposync never needs the ``git-lfs`` binary) and strictly: a blob
that only resembles a pointer is ordinary content, never an object to move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: git-lfs never writes a pointer this large; a larger blob is content.
MAX_POINTER_BYTES = 1024
#: The smallest valid pointer (version line, oid line and ``size 0``): smaller blobs are
#: skipped without being read.
MIN_POINTER_BYTES = len(
    "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 0\n"
)
#: Versions git-lfs itself accepts (the pre-release URL is still read by git-lfs).
_VERSIONS = frozenset({"https://git-lfs.github.com/spec/v1", "https://hawser.github.com/spec/v1"})
_OID = re.compile(r"sha256:([0-9a-f]{64})")
_KEY = re.compile(r"[a-z0-9.-]+")


@dataclass(frozen=True, slots=True, order=True)
class LfsPointer:
    """One LFS object as a pointer names it: its SHA-256 (lower-case hex) and size."""

    oid: str
    size: int

    @property
    def display(self) -> str:
        return f"{self.oid[:12]}… ({self.size} bytes)"


def parse_pointer(data: bytes) -> LfsPointer | None:
    """The object a pointer blob names, or None when the blob is not a valid pointer."""
    if not MIN_POINTER_BYTES <= len(data) < MAX_POINTER_BYTES or not data.endswith(b"\n"):
        return None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    lines = text[:-1].split("\n")
    version_key, _, version = lines[0].partition(" ")
    if version_key != "version" or version not in _VERSIONS:
        return None
    values: dict[str, str] = {}
    previous = ""
    for line in lines[1:]:
        key, sep, value = line.partition(" ")
        if not sep or not _KEY.fullmatch(key) or key in values or key <= previous:
            return None  # the spec sorts keys and never repeats one
        values[key] = value
        previous = key
    oid = _OID.fullmatch(values.get("oid", ""))
    size = values.get("size", "")
    if oid is None or not size.isdigit() or (len(size) > 1 and size.startswith("0")):
        return None
    return LfsPointer(oid[1], int(size))
