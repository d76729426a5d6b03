"""PostgreSQL and Redis servers the chaos suite owns, so it may crash and restart them.

Never the shared servers of the other tests (``REPOSYNC_TEST_POSTGRES_URL`` /
``REPOSYNC_TEST_REDIS_URL``): these are started from this machine's binaries on ports of
their own, with production's durability settings, and restarted on the same port and
data directory after a crash (what a restart policy does).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.servers import _as_postgres, _pg_bin, free_port


class OwnPostgres:
    """A PostgreSQL cluster with durable settings: ``fsync``, ``synchronous_commit`` and
    ``full_page_writes`` stay on, so an immediate stop tests what a crash really keeps."""

    def __init__(self) -> None:
        # Outside the chaos work directory: the postgres user must reach it.
        self.directory = Path(tempfile.mkdtemp(prefix="reposync-chaos-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres")
        self.data = self.directory / "data"
        self.port = free_port()
        self.log = self.directory / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}"

    def database_url(self, name: str) -> str:
        return f"{self.url}/{name}"

    def init(self) -> None:
        self._run([_pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"])
        self.start()

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} "
            "-c fsync=on -c synchronous_commit=on -c full_page_writes=on "
            "-c max_connections=200"
        )
        self._run(
            [
                _pg_bin("pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-t",
                "120",
                "-o",
                options,
                "start",
            ]
        )

    def crash(self) -> None:
        """``pg_ctl -m immediate stop``: every backend killed, no checkpoint; the next start
        replays the WAL (crash recovery)."""
        self._run([_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])

    def stop(self) -> None:
        subprocess.run(
            _as_postgres(
                [_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]
            ),
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.database_url("postgres"), autocommit=True) as conn:
            conn.execute(sql)

    def _run(self, argv: list[str]) -> None:
        result = subprocess.run(
            _as_postgres(argv), check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} failed ({result.returncode}):\n"
                f"{result.stdout.decode(errors='replace')}"
            )


class OwnRedis:
    """redis-server as production runs it: append-only file fsynced on every write, no
    eviction. ``crash`` is ``kill -9``; ``start`` again replays the append-only file."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = directory / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            self.binary,
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
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        import redis

        deadline = time.monotonic() + timeout
        while True:
            try:
                if redis.Redis.from_url(self.url, socket_timeout=2).ping():
                    return
            except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                pass
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited:\n{self.log.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server did not answer")
            time.sleep(0.05)

    def crash(self) -> None:
        """``kill -9`` redis-server; its directory (the AOF) stays for ``start``."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        self.crash()
        self.process = None
