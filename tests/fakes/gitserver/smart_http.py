"""Git smart HTTP through ``git http-backend`` (CGI), forge-neutral.

What a forge's test server needs to serve ``/{owner}/{name}.git``: the backend process
for a repository's bare directory with the request streamed in and the answer streamed
out (``start_backend``), the ref updates a push asks for read from the body as it goes
past (``PushCommands``), what a fetch wanted (``UploadPackRequest``), and the refusals a
server answers before any Git runs (``Refusal``). Who may read or push, and what a push
sets off (webhooks, pull request heads), is each forge's own (``github/git_http.py``,
``forgejo/git_http.py``). A push larger than ``max_push_bytes`` is refused by git's own
``receive.maxInputSize`` ("fatal: pack exceeds maximum allowed size"), no ref moves.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import os
import shutil
import subprocess
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from werkzeug.wsgi import get_input_stream

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

CHUNK = 1 << 16
GIT_BACKEND = shutil.which("git") or "git"


class Refusal(Exception):
    def __init__(self, status: str, message: str, headers: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip()).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, _, password = decoded.partition(":")
    return user, password


def start_backend(
    environ: WSGIEnvironment,
    git_dir: Path,
    rest: str,
    query: str,
    *,
    remote_user: str,
    home: Path,
    max_push_bytes: int,
    record: Callable[[bytes], None] | None = None,
    watch: Callable[[bytes], None] | None = None,
) -> tuple[subprocess.Popen[bytes], str, list[tuple[str, str]]]:
    """``git http-backend`` for ``rest`` (``info/refs``, ``git-upload-pack``, ...) of the
    bare repository ``git_dir``, fed the request body on a thread (a copy to ``record``,
    each chunk to ``watch`` first); the process, the CGI status and headers."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_PROJECT_ROOT": str(git_dir.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{git_dir.name}/{rest}",
        "REQUEST_METHOD": environ["REQUEST_METHOD"],
        "QUERY_STRING": query,
        "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
        "REMOTE_USER": remote_user,
        "REMOTE_ADDR": str(environ.get("REMOTE_ADDR", "127.0.0.1")),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "GATEWAY_INTERFACE": "CGI/1.1",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "receive.maxInputSize",
        "GIT_CONFIG_VALUE_0": str(max_push_bytes),
    }
    if not environ.get("wsgi.input_terminated") and environ.get("CONTENT_LENGTH"):
        env["CONTENT_LENGTH"] = environ["CONTENT_LENGTH"]
    if environ.get("HTTP_CONTENT_ENCODING"):
        env["HTTP_CONTENT_ENCODING"] = environ["HTTP_CONTENT_ENCODING"]
    if environ.get("HTTP_GIT_PROTOCOL"):
        env["GIT_PROTOCOL"] = environ["HTTP_GIT_PROTOCOL"]
    log = (home / "git-http-backend.log").open("ab")
    process = subprocess.Popen(
        [GIT_BACKEND, "http-backend"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
    )
    log.close()
    feeder = threading.Thread(
        target=_feed,
        args=(get_input_stream(environ), process.stdin, record),
        kwargs={"watch": watch},
        daemon=True,
    )
    feeder.start()
    assert process.stdout is not None
    status, headers = "200 OK", []
    while True:
        line = process.stdout.readline().rstrip(b"\r\n")
        if not line:
            break
        key, _, value = line.decode("latin-1").partition(":")
        if key.lower() == "status":
            status = value.strip()
        else:
            headers.append((key.strip(), value.strip()))
    return process, status, headers


def file_chunks(handle: IO[bytes]) -> Iterator[bytes]:
    with handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def _feed(
    source: IO[bytes],
    sink: IO[bytes] | None,
    record: Callable[[bytes], None] | None = None,
    *,
    watch: Callable[[bytes], None] | None = None,
) -> None:
    """Copy the request body into the CGI's stdin, then close it (EOF ends the request);
    hand a copy of the body (its first ``RECORDED_BODY`` bytes) to ``record``, and each
    chunk to ``watch`` before the CGI sees it."""
    assert sink is not None
    kept: list[bytes] = []
    size = 0
    try:
        while chunk := source.read(CHUNK):
            if record is not None and size < RECORDED_BODY:
                kept.append(chunk)
                size += len(chunk)
            if watch is not None:
                watch(chunk)
            sink.write(chunk)
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.close()
        if record is not None:
            record(b"".join(kept))


ZERO = "0" * 40


def _gzipped(environ: WSGIEnvironment) -> bool:
    return environ.get("HTTP_CONTENT_ENCODING", "") in ("gzip", "x-gzip")


class PushCommands:
    """The ref updates a receive-pack request asks for, ``(before, after, ref)`` each,
    read from its first pkt-lines as the body streams past (the pack is not kept)."""

    def __init__(self, gzipped: bool) -> None:
        self.updates: list[tuple[str, str, str]] = []
        self._buffer = bytearray()
        self._done = False
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None

    @property
    def complete(self) -> bool:
        """Whether every command has gone past (or the body was not a push's)."""
        return self._done

    def feed(self, chunk: bytes) -> None:
        if self._done:
            return
        if self._inflate is not None:
            try:
                chunk = self._inflate.decompress(chunk)
            except zlib.error:
                self._done = True
                return
        self._buffer += chunk
        while len(self._buffer) >= 4 and not self._done:
            try:
                length = int(self._buffer[:4], 16)
            except ValueError:
                self._done = True
                break
            if length < 4:  # the flush after the commands: the pack follows
                self._done = True
                break
            if len(self._buffer) < length:
                return
            line = bytes(self._buffer[4:length]).split(b"\0", 1)[0].rstrip(b"\n")
            del self._buffer[:length]
            parts = line.decode("latin-1").split(" ")
            if len(parts) == 3 and all(len(p) in (40, 64) for p in parts[:2]):
                before, after, ref = parts
                self.updates.append((_zero(before), _zero(after), ref))
        if self._done:
            self._buffer.clear()


def _zero(sha: str) -> str:
    """Git's null id (any object format) as the webhook payloads spell it."""
    return ZERO if set(sha) == {"0"} else sha


#: How much of an upload-pack request body is kept for ``UploadPackRequest``.
RECORDED_BODY = 8 << 20


@dataclass(frozen=True)
class UploadPackRequest:
    """What one fetch asked for (``GitHubFake.upload_pack_requests``): the protocol v2
    ``command`` (``ls-refs``, ``fetch``; empty for protocol v0) and the object ids wanted,
    so tests can count what a fetch requested."""

    repo: str
    command: str
    wants: tuple[str, ...]

    @classmethod
    def parse(cls, repo: str, body: bytes, *, gzipped: bool) -> UploadPackRequest:
        if gzipped:
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError):
                return cls(repo, "unreadable", ())
        command, wants = "", []
        at = 0
        while at + 4 <= len(body):
            try:
                length = int(body[at : at + 4], 16)
            except ValueError:
                break
            if length < 4:  # flush, delimiter, response-end
                at += 4
                continue
            line = body[at + 4 : at + length].rstrip(b"\n").decode("latin-1")
            at += length
            if line.startswith("command="):
                command = line.removeprefix("command=")
            elif line.startswith("want "):
                wants.append(line.split()[1])
        return cls(repo, command, tuple(wants))


def stream(
    process: subprocess.Popen[bytes], *, hold_last: bool, finish: Callable[[], None]
) -> Iterator[bytes]:
    """The backend's output, then ``finish()`` once it has exited. With ``hold_last`` (a
    push) the last chunk waits until ``finish`` has run, so that a client that has its
    answer finds everything the push sets off done."""
    assert process.stdout is not None
    finished = False

    def done() -> None:
        nonlocal finished
        if finished:
            return
        finished = True
        assert process.stdout is not None
        process.stdout.close()
        process.wait()
        finish()

    try:
        held: bytes | None = None
        while chunk := process.stdout.read1(CHUNK):
            if not hold_last:
                yield chunk
                continue
            if held is not None:
                yield held
            held = chunk
        done()
        if held is not None:
            yield held
    finally:
        done()
