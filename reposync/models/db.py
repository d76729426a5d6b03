"""Engines, sessions and migrations: the one place that knows how to reach the database.

One ``Database`` per process. SQLite (the embedded default) runs in WAL mode and starts
every transaction with ``BEGIN IMMEDIATE``, so the fence check and the write it guards
hold the write lock together; PostgreSQL gets that from ``SELECT … FOR SHARE``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from reposync.errors import ConfigurationError, DatabaseNotMigrated, DatabaseUnavailable
from reposync.files import private_dir, private_file

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"

#: The newest migration's revision. Checking it needs one SELECT instead of loading
#: Alembic (a third of a no-change Run's start-up); a test keeps it equal to the head.
SCHEMA_HEAD = "0016"


#: PEP 249's classes for "the database cannot be used now" (the server is down or went
#: away, refused or dropped the connection, a file cannot be opened, a lock or statement
#: timed out), as opposed to a statement the database refused. Every driver names them
#: so; they count only from the drivers reposync uses and SQLAlchemy's wrappers.
_UNAVAILABLE_NAMES = frozenset({"OperationalError", "InterfaceError"})
_DRIVER_PACKAGES = frozenset({"sqlalchemy", "sqlite3", "psycopg"})


def unavailable(exc: BaseException) -> DatabaseUnavailable | None:
    """The error tree's ``DatabaseUnavailable`` for a driver error that means the database
    cannot be used for the moment, else None.

    SQLAlchemy's ``OperationalError`` and ``InterfaceError``, any of its errors on a
    connection it found dead, its pool's timeout (every connection busy), and the
    drivers' own two classes (``executemany``, ``execute`` and ``fetch`` use the driver
    directly). The message is the same for all of them and names no host or path: it
    reaches API clients; the driver's words are for the log (``reason``).
    """
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if not _means_unavailable(exc):
        return None
    return DatabaseUnavailable(
        "the database is unavailable for the moment; nothing was changed, try again shortly"
    )


def _means_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return any(
        cls.__name__ in _UNAVAILABLE_NAMES and cls.__module__.partition(".")[0] in _DRIVER_PACKAGES
        for cls in type(exc).__mro__
    )


def reason(exc: BaseException) -> str:
    """The first line of what the driver said (for the log, never for a client)."""
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    return _first_line(orig)


def redact(url: str | URL) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<invalid url>"


class Database:
    """Engine + session factory + migrations for one database URL."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        try:
            parsed = make_url(url)
        except ArgumentError as exc:
            raise ConfigurationError(
                f"REPOSYNC_DATABASE_URL is not a database URL: {url!r}"
            ) from exc
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        self.url = parsed
        self.dialect_name = parsed.get_backend_name()
        if self.dialect_name not in ("sqlite", "postgresql"):
            raise ConfigurationError(
                f"unsupported database {self.dialect_name!r}: use sqlite:/// or postgresql://"
            )
        kwargs: dict[str, Any] = {"echo": echo, "future": True}
        if self.dialect_name == "sqlite":
            database = parsed.database or ""
            if database and database != ":memory:":
                private_file(private_dir(Path(database).parent) / Path(database).name)
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        else:
            kwargs.update(pool_pre_ping=True, pool_size=5, max_overflow=5)
            kwargs["connect_args"] = {"connect_timeout": 5, "application_name": "reposync"}
        self.engine: Engine = create_engine(parsed, **kwargs)
        self._read_engine = self.engine
        if self.dialect_name == "sqlite":
            # Writers take the write lock at BEGIN (the fence and its write hold it
            # together); readers begin deferred, so in WAL mode they never block anyone.
            _configure_sqlite(self.engine, immediate=True)
            self._read_engine = create_engine(parsed, **kwargs)
            _configure_sqlite(self._read_engine, immediate=False)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(self._read_engine, expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect_name == "sqlite"

    def session(self) -> Session:
        """A session for reading (on SQLite it never takes the write lock)."""
        return self._read_sessions()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A short transaction: commit on success, roll back on any error."""
        with self.sessions() as session, session.begin():
            yield session

    def check_connection(self) -> None:
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except (OperationalError, DBAPIError) as exc:
            raise DatabaseUnavailable(
                f"cannot reach the database at {redact(self.url)}: {reason(exc)}"
            ) from exc

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (the schema exists only through them)."""
        from alembic import command

        self.check_connection()
        config = alembic_config(self.url)
        with self.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def ensure_current(self) -> None:
        """Reachable and migrated: what the embedded mode needs before its first write."""
        self.check_connection()
        if not self.is_current():
            self.upgrade()

    def is_current(self) -> bool:
        """Whether the schema is at the newest migration (one SELECT, no Alembic import)."""
        return self.revisions() == [SCHEMA_HEAD]

    def revisions(self) -> list[str]:
        """The migrations the schema is at (none: a database never migrated)."""
        with self.engine.connect() as connection:
            try:
                versions = connection.execute(text("SELECT version_num FROM alembic_version"))
            except (OperationalError, DBAPIError):
                return []  # no version table: a database never migrated
            return sorted(str(row[0]) for row in versions)

    def require_current(self) -> None:
        """Reachable and at the newest migration, or refuse: what a process that must not
        change the schema itself (the distributed mode's API) checks before it serves.

        Raises ``DatabaseUnavailable`` (unreachable) or ``DatabaseNotMigrated``.
        """
        self.check_connection()
        found = self.revisions()
        if found == [SCHEMA_HEAD]:
            return
        where = redact(self.url)
        if not found:
            raise DatabaseNotMigrated(
                f"the database at {where} was never migrated: run `reposync db upgrade` "
                "(with the same REPOSYNC_DATABASE_URL) before starting the API"
            )
        if all(revision < SCHEMA_HEAD for revision in found):
            raise DatabaseNotMigrated(
                f"the database at {where} is at migration {', '.join(found)}; this reposync "
                f"needs {SCHEMA_HEAD}: run `reposync db upgrade` before starting the API"
            )
        raise DatabaseNotMigrated(
            f"the database at {where} is at migration {', '.join(found)}, newer than this "
            f"reposync's {SCHEMA_HEAD}: run the reposync that migrated it (or a newer one)"
        )

    def dispose(self) -> None:
        self.engine.dispose()
        if self._read_engine is not self.engine:
            self._read_engine.dispose()


def executemany(session: Session, sql: str, rows: Sequence[Sequence[Any]]) -> int:
    """One statement for many rows straight through the driver; returns rows affected.

    The hot paths of the applying stage write hundreds of rows per batch; SQLAlchemy's
    per-row parameter processing cost more than the database did. ``sql`` uses ``?``
    placeholders (rewritten for PostgreSQL); values must already be driver types (use
    ``driver_datetime`` for times).
    """
    if not rows:
        return 0
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        sql = sql.replace("?", "%s")
    cursor = _dbapi(connection).cursor()
    try:
        cursor.executemany(sql, rows)
        return int(cursor.rowcount)
    finally:
        cursor.close()


def execute(session: Session, sql: str, params: Sequence[Any] = ()) -> int:
    """One statement straight through the driver (``?`` placeholders); rows affected.

    For statements with long ``IN`` lists on the applying stage's hot path, where
    SQLAlchemy's expanding parameters cost more than the database did.
    """
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        sql = sql.replace("?", "%s")
    cursor = _dbapi(connection).cursor()
    try:
        cursor.execute(sql, tuple(params))
        return int(cursor.rowcount)
    finally:
        cursor.close()


def _dbapi(connection: Connection) -> DBAPIConnection:
    """The driver's own connection under ``connection``."""
    dbapi = connection.connection.dbapi_connection
    # None only once the pool invalidated it; Connection.connection reconnects first.
    assert dbapi is not None
    return dbapi


def fetch(
    session: Session, sql: str, params: Sequence[Any] = (), *, chunk: int = 5000
) -> Iterator[tuple[Any, ...]]:
    """Rows of one query straight from the driver, in chunks (``?`` placeholders).

    For the few scans that read every row of a big table (a Binding's links): plain
    tuples, no per-row result processing.
    """
    connection = session.connection()
    dbapi = _dbapi(connection)
    if connection.dialect.name == "postgresql":
        sql = sql.replace("?", "%s")
    if connection.dialect.name == "postgresql" and sql.lstrip()[:6].upper() == "SELECT":
        # A server-side cursor: psycopg's client cursor would hold every row at once
        # (a DML statement's RETURNING rows cannot come from one; they are few anyway).
        cursor = dbapi.cursor(name=f"reposync_fetch_{uuid.uuid4().hex}")
        # psycopg's ServerCursor: its batch size is not part of the DB-API protocol.
        cast("psycopg.ServerCursor[Any]", cursor).itersize = chunk
    else:
        cursor = dbapi.cursor()
    try:
        cursor.execute(sql, tuple(params))
        while rows := cursor.fetchmany(chunk):
            yield from rows
    finally:
        cursor.close()


def driver_datetime(session: Session, value: datetime) -> Any:
    """A UTC datetime as the driver stores it (SQLAlchemy's SQLite text format)."""
    if session.get_bind().dialect.name == "sqlite":
        return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def alembic_config(url: URL | str) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option(
        "sqlalchemy.url", make_url(url).render_as_string(hide_password=False).replace("%", "%%")
    )
    return config


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _configure_sqlite(engine: Engine, *, immediate: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite would defer it).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
