"""Benchmark repositories written as one ``git fast-import`` stream: a linear history on
``main`` with branches and tags spread along it (every other tag annotated).

Generating a large history by committing file by file takes minutes; a fast-import
stream takes seconds, and each bench only says what its commits hold.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

#: What commit ``n`` (from 1) changes: (path, contents) of each file it writes.
Files = Callable[[int], Iterable[tuple[str, bytes]]]


def import_history(
    path: Path,
    *,
    commits: int,
    branches: int,
    tags: int,
    when: int,
    message: Callable[[int], str],
    files: Files,
    repack: list[str],
) -> None:
    """Write the repository at ``path`` (bare), then ``git repack`` it with ``repack``'s
    options; built beside it and renamed, so an interrupted run leaves no half repository."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp)], check=True)
    importer = subprocess.Popen(
        ["git", f"--git-dir={tmp}", "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert importer.stdin is not None
    write = importer.stdin.write
    for n in range(1, commits + 1):
        text = message(n).encode()
        write(b"commit refs/heads/main\n")
        write(f"mark :{n}\ncommitter Bench <bench@example.com> {when + n} +0000\n".encode())
        write(f"data {len(text)}\n".encode() + text)
        if n > 1:
            write(f"from :{n - 1}\n".encode())
        for name, body in files(n):
            write(f"M 644 inline {name}\n".encode())
            write(f"data {len(body)}\n".encode() + body + b"\n")
    for b in range(branches):
        write(f"reset refs/heads/branch-{b:05d}\nfrom :{1 + b * commits // branches}\n\n".encode())
    for t in range(tags):
        mark = 1 + t * commits // tags
        if t % 2 == 0:
            text = f"release {t}\n".encode()
            write(f"tag v{t:05d}\nfrom :{mark}\n".encode())
            write(f"tagger Bench <bench@example.com> {when} +0000\n".encode())
            write(f"data {len(text)}\n".encode() + text)
        else:
            write(f"reset refs/tags/v{t:05d}\nfrom :{mark}\n\n".encode())
    importer.stdin.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", f"--git-dir={tmp}", "repack", "-q", *repack], check=True)
    tmp.rename(path)
