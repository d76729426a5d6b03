"""Real PostgreSQL and Redis servers for the tests, started from this machine's binaries.

Nothing is faked: the tests talk to a real ``postgres`` (started with ``initdb`` and
``pg_ctl``; as the ``postgres`` user when running as root, because initdb refuses root)
and a real ``redis-server`` with the persistence settings production uses. Set
``REPOSYNC_TEST_POSTGRES_URL`` / ``REPOSYNC_TEST_REDIS_URL`` to use servers of your own.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: The pytest-xdist worker this process is (``gw0``, ``gw1``, ...; ``gw0`` without
#: xdist). Workers share the servers ``.ci/run`` starts, so each keeps to databases of
#: its own: its PostgreSQL template and test databases, its Redis database number.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
#: The migrated database each test's PostgreSQL database is copied from.
TEMPLATE = f"reposync_template_{WORKER}"
#: The Redis database this worker's tests use and flush (never another worker's).
REDIS_DB = int(WORKER.removeprefix("gw")) % 16
_names = itertools.count()


def database_name(prefix: str) -> str:
    """A PostgreSQL database name no other test, nor another worker, is using."""
    return f"{prefix}_{WORKER}_{next(_names)}"


PG_BIN_CANDIDATES = [
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/14/bin",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin(tool: str) -> str:
    for directory in PG_BIN_CANDIDATES:
        candidate = Path(directory) / tool
        if candidate.exists():
            return str(candidate)
    found = shutil.which(tool)
    if found:
        return found
    raise RuntimeError(
        f"PostgreSQL's {tool} is not installed; run .ci/run or `apt-get install postgresql`"
    )


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


@dataclass
class PostgresServer:
    url: str
    directory: Path | None = None
    port: int = 0

    @classmethod
    def start(cls) -> PostgresServer:
        external = os.environ.get("REPOSYNC_TEST_POSTGRES_URL")
        if external:
            return cls(url=external.rstrip("/"))
        return cls.start_local()

    @classmethod
    def start_local(cls) -> PostgresServer:
        """A server of this machine's binaries in a temporary directory, whatever
        ``REPOSYNC_TEST_POSTGRES_URL`` says: a test that stops its server needs its own."""
        directory = Path(tempfile.mkdtemp(prefix="reposync-pg-"))
        if os.geteuid() == 0:
            shutil.chown(directory, "postgres")
        data = directory / "data"
        port = free_port()
        subprocess.run(
            _as_postgres(
                [_pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        server = cls(url=f"postgresql://postgres@127.0.0.1:{port}", directory=directory, port=port)
        server.resume()
        return server

    def resume(self) -> None:
        """Start (or start again, after ``halt``) the server on its port and data."""
        if self.directory is None:
            raise RuntimeError("cannot start an external PostgreSQL (REPOSYNC_TEST_POSTGRES_URL)")
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        subprocess.run(
            _as_postgres(
                [
                    _pg_bin("pg_ctl"),
                    "-D",
                    str(self.directory / "data"),
                    "-l",
                    str(self.directory / "log"),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    options,
                    "start",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def halt(self) -> None:
        """Stop the server as an operator's ``pg_ctl stop`` does (its sessions are ended,
        new connections refused), keeping its data for ``resume``. Only a server these
        tests started."""
        if self.directory is None:
            raise RuntimeError("cannot stop an external PostgreSQL (REPOSYNC_TEST_POSTGRES_URL)")
        subprocess.run(
            _as_postgres(
                [_pg_bin("pg_ctl"), "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def stop(self) -> None:
        if self.directory is None:
            return
        subprocess.run(
            _as_postgres(
                [_pg_bin("pg_ctl"), "-D", str(self.directory / "data"), "-m", "immediate", "stop"]
            ),
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(self.directory, ignore_errors=True)

    def database_url(self, name: str) -> str:
        return f"{self.url}/{name}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.database_url("postgres"), autocommit=True) as conn:
            conn.execute(sql)


@dataclass
class RedisServer:
    url: str
    process: subprocess.Popen[bytes] | None = None
    directory: Path | None = None
    port: int = 0

    @classmethod
    def start(cls) -> RedisServer:
        external = os.environ.get("REPOSYNC_TEST_REDIS_URL")
        if external:
            return cls(url=external.rstrip("/"))
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed; run .ci/run or `apt-get install redis-server`"
            )
        directory = Path(tempfile.mkdtemp(prefix="reposync-redis-"))
        port = free_port()
        server = cls(url=f"redis://127.0.0.1:{port}", directory=directory, port=port)
        server.process = subprocess.Popen(
            server._argv(binary),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server.wait_ready()
        return server

    def _argv(self, binary: str) -> list[str]:
        # Production settings: persistence on, never evict broker keys.
        return [
            binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--maxmemory-policy",
            "noeviction",
            "--dir",
            str(self.directory),
        ]

    def wait_ready(self, timeout: float = 20.0) -> None:
        import redis

        deadline = time.monotonic() + timeout
        while True:
            try:
                redis.Redis.from_url(self.url).ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def crash(self) -> None:
        """SIGKILL redis-server, like a machine dying; its directory (the AOF) stays
        for ``restart``. Only for a server these tests started."""
        if self.process is None:
            raise RuntimeError("cannot crash an external Redis (REPOSYNC_TEST_REDIS_URL)")
        self.process.kill()
        self.process.wait()

    def restart(self) -> None:
        """Start redis-server again on the same port and directory, so it replays its
        append-only file: what a restart policy does after a crash."""
        if self.process is None or self.directory is None:
            raise RuntimeError("cannot restart an external Redis (REPOSYNC_TEST_REDIS_URL)")
        if self.process.poll() is None:
            self.crash()
        binary = shutil.which("redis-server")
        assert binary is not None  # start() found it
        self.process = subprocess.Popen(
            self._argv(binary),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_ready()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
