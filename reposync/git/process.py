"""Running git children: under a guard, streamed, and never orphaned.

Every git process reposync starts goes through ``run_git``: the ``guarded`` check
(``reposync.guards``: a lease, a cancel) is asked before it starts and while it runs,
and any interruption kills it with every process it started. Pushes, fetches, the LFS
tools and the providers' ref reads all share it, so it lives apart from any one of them.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from reposync.errors import GitCredentialsRefused, GitRateLimited, GitTransportError
from reposync.git import procfs
from reposync.git.environment import git_env
from reposync.guards import current_guard

#: Seconds between two checks of a guarded git child (see ``reposync.guards.guarded``).
GUARD_INTERVAL = 0.2

log = logging.getLogger(__name__)


class StopGently(Exception):
    """An interruption after which git may clean up: its processes get SIGTERM, not
    SIGKILL (a ``receive-pack`` then drops what it received)."""


def run_git(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input_text: str | None = None,
    on_stderr: Callable[[str], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git; on any interruption (time limit, signal, a ``guarded`` check, an error
    of ``on_stderr``) kill it and every process it started rather than orphan them.

    ``on_stderr`` is handed each line of git's stderr as git writes it (a ``\r`` ends
    a line, as it ends a progress update), in this thread; the result still holds the
    whole of it.
    """
    guard = current_guard()
    if guard is not None:
        guard()
    log.debug("%s", " ".join(argv[:6]))
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ref names are bytes, not always UTF-8: kept as surrogates, never a crash.
        errors="surrogateescape",
        env=git_env(env),
    )
    try:
        if on_stderr is None:
            stdout, stderr = _communicate(proc, input_text, guard)
        else:
            stdout, stderr = _stream(proc, input_text, guard, on_stderr)
    except BaseException as error:
        if proc.returncode is None:  # not reaped yet, so its pid is still its own
            gently = isinstance(error, StopGently)
            procfs.kill_tree(proc.pid, sig=signal.SIGTERM if gently else signal.SIGKILL)
        proc.wait()
        raise
    result = subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)
    if check and result.returncode != 0:
        raise git_failure(" ".join(argv[:4]), stderr)
    return result


def _communicate(
    proc: subprocess.Popen[str], input_text: str | None, guard: Callable[[], None] | None
) -> tuple[str, str]:
    """``proc.communicate``, calling ``guard`` every ``GUARD_INTERVAL`` seconds.

    With input, the waits go through ``_stream``'s threads: ``Popen.communicate`` cannot
    go on sending input after a timeout (a retry without it never writes the rest nor
    closes stdin; with it, it refuses), so git would wait for the rest of a large input
    forever.
    """
    if input_text and guard is not None:
        return _stream(proc, input_text, guard, lambda _line: None)
    while True:
        try:
            stdout, stderr = proc.communicate(
                input_text, timeout=None if guard is None else GUARD_INTERVAL
            )
        except subprocess.TimeoutExpired:  # nothing is lost: communicate() resumes
            assert guard is not None
            guard()
            continue
        return stdout, stderr


def _stream(
    proc: subprocess.Popen[str],
    input_text: str | None,
    guard: Callable[[], None] | None,
    on_stderr: Callable[[str], None],
) -> tuple[str, str]:
    """Like ``_communicate``, handing each stderr line to ``on_stderr`` as it comes.

    Threads only move bytes (stdin in, stdout and stderr out); the lines are handled and
    ``guard`` is called in this thread, so what either raises kills the child in
    ``run_git`` as any interruption does (the threads then end at the pipes' end).
    """
    assert proc.stdout is not None
    assert proc.stderr is not None
    stdout_pipe, stderr_pipe = proc.stdout, proc.stderr
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    out: list[str] = []

    def read_stdout() -> None:
        out.append(stdout_pipe.read())

    def read_stderr() -> None:
        try:
            for line in stderr_pipe:  # universal newlines: "\r" ends a line too
                lines.put(line)
        finally:
            lines.put(None)

    def write_stdin() -> None:
        assert proc.stdin is not None
        assert input_text is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            proc.stdin.write(input_text)
            proc.stdin.close()

    workers = [read_stdout, read_stderr, *([write_stdin] if input_text is not None else [])]
    threads = [threading.Thread(target=work, daemon=True) for work in workers]
    for thread in threads:
        thread.start()
    err: list[str] = []
    next_check = time.monotonic() + GUARD_INTERVAL
    while True:
        try:
            line = lines.get(timeout=max(0.0, next_check - time.monotonic()))
        except queue.Empty:
            pass
        else:
            if line is None:
                break
            err.append(line)
            on_stderr(line.rstrip("\n"))
        if guard is not None and time.monotonic() >= next_check:
            guard()
            next_check = time.monotonic() + GUARD_INTERVAL
    while True:  # stderr is closed: git is ending (or closed it and goes on)
        try:
            proc.wait(timeout=GUARD_INTERVAL)
            break
        except subprocess.TimeoutExpired:
            if guard is not None:
                guard()
    for thread in threads:
        thread.join()
    stdout_pipe.close()
    stderr_pipe.close()
    return "".join(out), "".join(err)


#: What git prints when a remote refused the credentials it sent, or asked for some it had
#: none of: HTTP's 401 (with a challenge, git turns to its prompt, which is off for every
#: git reposync runs: "could not read Username") and 403, and SSH's publickey refusal.
#: Only a remote's words: a local file's bare "Permission denied" is not among them.
_CREDENTIALS_REFUSED = (
    ("returned error: 403", "HTTP 403"),
    ("http 403", "HTTP 403"),
    ("permission denied (publickey", "SSH publickey"),
    ("could not read username", "HTTP 401"),
    ("could not read password", "HTTP 401"),
    ("authentication failed for", "HTTP 401"),
    ("returned error: 401", "HTTP 401"),
    ("http 401", "HTTP 401"),
)


def credentials_refused(stderr: str) -> str | None:
    """How the remote refused git's credentials (``"HTTP 401"``...), if that is why git
    failed."""
    lowered = stderr.lower()
    return next((how for words, how in _CREDENTIALS_REFUSED if words in lowered), None)


#: What git prints when an HTTP remote answered 429 (curl's words; "RPC failed" on a POST).
_RATE_LIMITED = re.compile(r"(returned error: |\bHTTP )429\b", re.IGNORECASE)


def rate_limited(stderr: str) -> bool:
    """Whether git failed because an HTTP remote answered 429 (its limit, or a proxy's)."""
    return _RATE_LIMITED.search(stderr) is not None


def git_failure(
    what: str, stderr: str
) -> GitTransportError | GitCredentialsRefused | GitRateLimited:
    """The error of a git command (``what``) that failed saying ``stderr``: the remote's
    refusal of its credentials, which no retry with the same ones clears; its rate limit,
    which a Run waits out; or a transport failure, which a retry may clear."""
    refused = credentials_refused(stderr)
    if refused is not None:
        return GitCredentialsRefused(
            f"{what}: the remote refused git's credentials ({refused}): {last_line(stderr)}"
        )
    if rate_limited(stderr):
        return GitRateLimited(f"{what}: the Git host's rate limit (HTTP 429): {last_line(stderr)}")
    return GitTransportError(f"{what} failed: {last_line(stderr)}")


def last_line(text: str) -> str:
    """The line of git's stderr that says what went wrong (its first fatal/error line)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "no output"
