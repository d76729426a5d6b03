"""``git cat-file``'s batch protocol as the LFS scan and the LFS proof speak it.

Both find pointers the same way, as a shell pipeline would: object names go to
``cat-file --batch-check`` (sizes only, no content read), a thread picks the blobs of a
pointer's size from its answers and hands them to a buffered ``cat-file --batch``, whose
contents are read in order. Finding sizes and reading contents overlap on two cores; the
names come from ``rev-list`` (the scan: what a push adds) or from the object stores
themselves (the proof: everything stored).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import suppress
from typing import IO

from reposync.errors import GitTransportError
from reposync.sync.lfs import MAX_POINTER_BYTES, MIN_POINTER_BYTES

#: ``--batch-check``'s answer per object: what ``pick_pointer_sized`` reads.
BATCH_CHECK = "--batch-check=%(objecttype) %(objectsize) %(objectname)"

#: A blob's answer of a pointer's possible size (3 or 4 digits): size and name. The other
#: objects' lines are passed over by the C regex engine, not by Python.
_BLOB = re.compile(rb"^blob ([0-9]{3,4}) ([0-9a-f]+)$", re.MULTILINE)


def feed(sink: IO[bytes], lines: Iterable[str]) -> None:
    """Write ``lines`` to a process's stdin, then close it (batch readers answer in full
    at EOF); a reader that stopped early is no error here, its caller learns why."""
    try:
        sink.write("".join(f"{line}\n" for line in lines).encode())
    except (BrokenPipeError, ValueError, OSError):
        pass
    finally:
        with suppress(BrokenPipeError, ValueError, OSError):
            sink.close()


def pick_pointer_sized(checked: IO[bytes], sink: IO[bytes], problems: list[str]) -> None:
    """Hand the names of the blobs of a pointer's size in ``checked`` (``--batch-check``'s
    output) on to ``sink``, then close it.

    An object listed yet missing, or an answer cut mid-line, is put in ``problems`` and
    stops the picking: a scan or a proof must then fail, never pass over an object as
    if it held no pointer.
    """
    rest = b""
    try:
        while chunk := checked.read(1 << 20):
            lines, _, rest = (rest + chunk).rpartition(b"\n")
            if b" missing" in lines or b" ambiguous" in lines:
                bad = next(
                    line
                    for line in lines.split(b"\n")
                    if line.endswith((b" missing", b" ambiguous"))
                )
                problems.append(bad.decode(errors="replace"))
                return
            wanted = b"".join(
                name + b"\n"
                for size, name in _BLOB.findall(lines)
                if MIN_POINTER_BYTES <= int(size) < MAX_POINTER_BYTES
            )
            if wanted:
                sink.write(wanted)
        if rest:
            problems.append("cat-file --batch-check ended mid-line")
    except (BrokenPipeError, ValueError, OSError):
        pass  # the reader was stopped: a pointer was found, or the work was abandoned
    finally:
        with suppress(BrokenPipeError, ValueError, OSError):
            sink.close()


def blob_contents(stream: IO[bytes]) -> Iterator[bytes]:
    """The contents ``git cat-file --batch`` writes, in order, until it ends."""
    while header := stream.readline():
        words = header.split()
        if len(words) != 3 or not words[2].isdigit():
            raise GitTransportError(
                f"git cat-file --batch could not read {header.decode(errors='replace').strip()}"
            )
        data = stream.read(int(words[2]))
        stream.read(1)  # the newline after the content
        yield data
