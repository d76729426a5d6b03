"""Files only the service's user may read: its databases and its HTTP cache.

They hold everything reposync knows about private repositories (links, payloads, cached
API responses), so they are created 0600 in directories created 0700, whatever the
process's umask. Directories that already exist are left as their owner set them.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by this user only."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        os.chmod(directory, PRIVATE_DIR)  # mkdir's mode is filtered by the umask
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty and 0600 unless it exists (SQLite's journals then copy the
    database file's mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return path
    os.fchmod(fd, PRIVATE_FILE)
    os.close(fd)
    return path


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text``, 0600 from the first byte."""
    temporary = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    temporary.replace(path)
