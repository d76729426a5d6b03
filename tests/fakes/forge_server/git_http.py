"""Git smart HTTP as both test servers' web hosts serve it once a request is authorized:
which requests push, the backend run with the fetch recorded and the push's answer held
until it is recorded, and which of a push's ref updates really moved.

Who may fetch or push, the wiki's rules and the refusals' wording are each forge's own
(tests/fakes/github/git_http.py, tests/fakes/forgejo/git_http.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tests.fakes.gitserver import bare_repos
from tests.fakes.gitserver.smart_http import (
    ZERO,
    PushCommands,
    UploadPackRequest,
    _gzipped,
    start_backend,
    stream,
)
from tests.fakes.gitserver.wsgi import drop_connection

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

GIT_PATH = re.compile(
    r"^/(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?"
    r"/(?P<rest>info/refs|git-upload-pack|git-receive-pack|HEAD|objects/.+)$"
)
Update = tuple[str, str, str]  # (before, after, ref)


class GitRecords(Protocol):
    """What a test server records of Git exchanges, and where its Git's home is."""

    root: Path
    upload_pack_requests: list[UploadPackRequest]


def asks_push(rest: str, query: str) -> bool:
    """Whether a request is a push's (its advertisement, or the pack itself)."""
    return rest == "git-receive-pack" or (
        rest == "info/refs" and "service=git-receive-pack" in query
    )


def serve_git(
    fake: GitRecords,
    environ: WSGIEnvironment,
    git_dir: Path,
    served: str,
    rest: str,
    query: str,
    *,
    pushed: bool,
    remote_user: str,
    max_push_bytes: int,
    after_push: Callable[[PushCommands | None], None],
) -> tuple[str, list[tuple[str, str]], Iterator[bytes]]:
    """``git http-backend`` for the request: its status, headers and output, a fetch's
    wants recorded in ``fake.upload_pack_requests`` under ``served`` (the repository's or
    its wiki's name). For a push (``pushed``) the last chunk waits until the backend has
    exited and ``after_push`` has recorded it with its ref updates: a client that has its
    answer finds all of it done."""
    commands = PushCommands(_gzipped(environ)) if pushed and rest == "git-receive-pack" else None
    record: Callable[[bytes], None] | None = None
    if rest == "git-upload-pack" and environ["REQUEST_METHOD"].upper() == "POST":
        gzipped = _gzipped(environ)

        def record(body: bytes) -> None:
            fake.upload_pack_requests.append(UploadPackRequest.parse(served, body, gzipped=gzipped))

    process, status, headers = start_backend(
        environ,
        git_dir,
        rest,
        query,
        remote_user=remote_user,
        home=fake.root,
        max_push_bytes=max_push_bytes,
        record=record,
        watch=commands.feed if commands is not None else None,
    )
    output = stream(
        process, hold_last=pushed, finish=lambda: after_push(commands) if pushed else None
    )
    return status, headers, output


def moved(git_dir: Path, updates: Iterable[Update]) -> list[Update]:
    """The updates the repository now shows (a rejected one left its ref as it was)."""
    return [
        (before, after, ref)
        for before, after, ref in updates
        if bare_repos.ref_target(git_dir, ref) == (None if after == ZERO else after)
    ]


def answer_served(
    fault: Any,
    served: tuple[str, list[tuple[str, str]], Iterable[bytes]],
    start_response: Callable[..., object],
    environ: WSGIEnvironment,
    log: Callable[[int], None],
) -> Iterable[bytes]:
    """What the backend ``served`` (status, headers, body), as the client gets it: lost
    (502, or the connection closed) or late under a fault of the kinds that strike after
    the work (``commit_then_drop``, ``timeout``: ``tests/fakes/github/faults.py``), else
    as served. ``log`` records the status the client sees (0: none)."""
    status, headers, output = served
    if fault is not None and fault.kind in ("commit_then_drop", "timeout"):
        data = b"".join(output)  # the push or fetch completes on the server
        if fault.kind == "commit_then_drop":
            return answer_lost(fault, start_response, environ, log)
        time.sleep(fault.seconds)
        output = [data]
    log(int(status.split()[0]))
    start_response(status, headers)
    return output


def answer_lost(
    fault: Any,
    start_response: Callable[..., object],
    environ: WSGIEnvironment,
    log: Callable[[int], None],
) -> list[bytes]:
    """A ``commit_then_drop`` fault's answer to work already done: a 502, or with
    ``drop="close"`` the connection closed before it (the client sees none)."""
    if fault.drop == "close":
        log(0)
        drop_connection(environ)
    log(502)
    start_response("502 Bad Gateway", [("content-type", "text/plain")])
    return [b"Bad Gateway\n"]
