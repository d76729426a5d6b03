"""Benchmark: forge objects local → local against the storage's own limit, in one run.

Populates a local forge of N objects (``tests.forge_population``: every kind of object
in a busy project's shares), then measures, on SQLite and (``--postgres``) on a
PostgreSQL started as the tests start theirs:

* **reposync**: ``embedded.sync`` in this process to an empty local forge, with a
  progress callback as ``reposync sync`` passes one (the CLI's progress costs count);
* **the limit**: read the source forge's rows and write the same final rows with plain
  ``executemany`` in 500-row transactions: the target forge's rows (into a fresh store
  of the same schema and pragmas) and reposync's own final rows (the Run's RunItems and
  the Binding's links, into a freshly migrated database; the Binding and Run rows they
  point at are copied before the clock starts);
* **the rules' floor**: the same final rows reached the way DESIGN.md's execution rules
  say they must be (plan rows first; per batch a fenced claim before the target write,
  a fenced ``verifying``, a read-back of what was written, a fenced settle with the
  links; every fenced transaction starts with the lease check), as plain statements:
  what the rules alone cost on this storage, with no engine at all. ``limit / floor``
  is the best share any engine keeping those rules could reach.

* **git's own push** of the Run's refs into an empty repository (the rows leave the
  refs out, reposync's time holds its push of them): printed beside, with the share the
  limit and it give together.

It prints the times, reposync's share of the limit (limit / reposync: 100 % would be
the storage's speed), items/s, and with ``--flat`` the cost per item at 10k and 100k
objects (``--million`` adds 1M), which must stay flat: no step may cost more as the
Run grows.

    python bench/forge_storage_limit.py                       # 80k objects, SQLite
    python bench/forge_storage_limit.py --postgres            # and PostgreSQL
    python bench/forge_storage_limit.py --objects 10000 --flat
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.runner import compiled  # noqa: E402
from reposync.config import Settings  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service.bindings import SyncRequest  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.embedded import Progress, sync  # noqa: E402
from tests.forge_population import populate  # noqa: E402
from tests.servers import PostgresServer  # noqa: E402

#: Rows per transaction of the limit's writes.
CHUNK = 500
#: The forge store's file inside a local forge (``providers/local/store.py``).
FORGE_DB = Path("reposync") / "forge.db"


@dataclass(frozen=True)
class Measured:
    database: str
    objects: int
    items: int
    reposync_s: float
    limit_s: float
    #: The execution rules' statements alone (``measure_floor``): no engine can do less.
    floor_s: float
    #: Git's own push of the Run's refs, which the rows leave out (``native_ref_push``).
    git_s: float

    @property
    def share(self) -> float:
        return self.limit_s / self.reposync_s

    @property
    def share_with_git(self) -> float:
        """The share when the limit also holds git's own push of the same refs (reposync's
        time holds its push of them)."""
        return (self.limit_s + self.git_s) / self.reposync_s

    @property
    def floor_share(self) -> float:
        """The best share the execution rules leave on this storage."""
        return self.limit_s / self.floor_s

    @property
    def items_per_s(self) -> float:
        return self.items / self.reposync_s

    @property
    def us_per_item(self) -> float:
        return self.reposync_s / max(self.items, 1) * 1e6


def chunks(rows: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def run_reposync(work: Path, source: Path, database_url: str) -> tuple[float, int, int]:
    """(seconds, run id, RunItems) of one bootstrap sync in this process."""
    target = work / "target.git"
    settings = Settings(data_dir=work / "data", database_url=database_url)
    db = Database(settings.effective_database_url)
    db.upgrade()
    ctx = ServiceContext(settings=settings, db=db)
    seen: list[Progress] = []

    def progress(step: Progress) -> None:
        seen[:] = [step]

    started = time.perf_counter()
    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"), progress)
    took = time.perf_counter() - started
    db.dispose()
    if run.status != "completed":
        raise SystemExit(f"the sync ended {run.status}: {run.report}")
    return took, run.id, seen[-1].items_total if seen else 0


def forge_connection(path: Path) -> sqlite3.Connection:
    """A forge store connection with the pragmas the local forge writes with."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA foreign_keys=ON")
    return connection


def table_rows(
    connection: Any, sql: str, params: Sequence[Any] = ()
) -> tuple[list[str], list[tuple[Any, ...]]]:
    cursor = connection.cursor()
    cursor.execute(sql, tuple(params))
    names = [d[0] for d in cursor.description]
    rows = [tuple(row) for row in cursor.fetchall()]
    cursor.close()
    return names, rows


def insert_sql(table: str, names: Sequence[str], placeholder: str) -> str:
    return (
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(placeholder for _ in names)})"
    )


def reposync_connection(url: str) -> tuple[Any, str, Callable[[Any], Any]]:
    """(DB-API connection in autocommit, placeholder, value adapter) for ``url``."""
    if url.startswith("sqlite"):
        connection = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")  # as reposync's engine
        connection.execute("PRAGMA foreign_keys=ON")
        return connection, "?", lambda value: value
    import psycopg
    from psycopg.types.json import Jsonb

    connection = psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True)
    return connection, "%s", lambda v: Jsonb(v) if isinstance(v, dict | list) else v


@dataclass
class FinalRows:
    """What a finished sync left, read once: the rows both plain writers write again."""

    item_names: list[str]
    items: list[tuple[Any, ...]]
    link_names: list[str]
    links: list[tuple[Any, ...]]
    parents: list[tuple[str, list[str], list[tuple[Any, ...]]]]
    forge_schema: list[str]
    forge_version: int
    forge_names: list[str]
    forge_rows: list[tuple[Any, ...]]


def final_rows(work: Path, used_url: str, run_id: int) -> FinalRows:
    used, _, _ = reposync_connection(used_url)
    item_names, items = table_rows(used, f"SELECT * FROM run_items WHERE run_id = {run_id}")
    link_names, links = table_rows(used, "SELECT * FROM object_links ORDER BY id")
    run_names, runs = table_rows(used, f"SELECT * FROM runs WHERE id = {run_id}")
    binding_names, bindings = table_rows(used, "SELECT * FROM bindings")
    used.close()
    assert items, "the Run is gone"
    with forge_connection(work / "target.git" / FORGE_DB) as done:
        schema = [
            sql
            for (sql,) in done.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
            )
        ]
        version = done.execute("PRAGMA user_version").fetchone()[0]
        forge_names, forge_rows = table_rows(done, "SELECT * FROM objects ORDER BY rowid")
    return FinalRows(
        item_names,
        items,
        link_names,
        links,
        [("bindings", binding_names, bindings), ("runs", run_names, runs)],
        schema,
        version,
        forge_names,
        forge_rows,
    )


def fresh_stores(rows: FinalRows, fresh_url: str, forge_dir: Path) -> tuple[Any, Any, str, Any]:
    """(reposync's database, freshly migrated, holding the Binding and Run the rows point
    at; an empty forge store of the target's schema; placeholder; value adapter)."""
    fresh_db = Database(fresh_url)
    fresh_db.upgrade()
    fresh_db.dispose()
    fresh, mark, adapt = reposync_connection(fresh_url)
    for table, names, parent_rows in rows.parents:
        cursor = fresh.cursor()
        for row in parent_rows:
            cursor.execute(insert_sql(table, names, mark), [adapt(v) for v in row])
        cursor.close()
    forge_dir.mkdir()
    plain = forge_connection(forge_dir / "forge.db")
    for statement in rows.forge_schema:
        plain.execute(statement)
    plain.execute(f"PRAGMA user_version = {rows.forge_version}")
    return fresh, plain, mark, adapt


def read_source(source: Path, rows: FinalRows) -> None:
    with forge_connection(source / FORGE_DB) as read:
        _, source_rows = table_rows(read, "SELECT * FROM objects")
    assert len(source_rows) >= len(rows.forge_rows) * 0.9  # the same population


def measure_limit(work: Path, source: Path, rows: FinalRows, fresh_url: str) -> float:
    """Seconds to read the source's rows and write the same final rows plainly."""
    fresh, plain, mark, adapt = fresh_stores(rows, fresh_url, work / "plain")
    started = time.perf_counter()
    read_source(source, rows)
    forge_insert = insert_sql("objects", rows.forge_names, "?")
    for part in chunks(rows.forge_rows):
        plain.execute("BEGIN IMMEDIATE")
        plain.executemany(forge_insert, part)
        plain.execute("COMMIT")
    for table, names, table_data in (
        ("run_items", rows.item_names, rows.items),
        ("object_links", rows.link_names, rows.links),
    ):
        statement = insert_sql(table, names, mark)
        for part in chunks(table_data):
            with _transaction(fresh):
                cursor = fresh.cursor()
                cursor.executemany(statement, [[adapt(v) for v in row] for row in part])
                cursor.close()
    took = time.perf_counter() - started
    plain.close()
    fresh.close()
    return took


def native_ref_push(work: Path, source: Path, rows: FinalRows) -> float:
    """Seconds for git itself to push the Run's refs (branches and tags) into an empty
    repository: the storage limit of the part of the sync the rows leave out."""
    kind = rows.item_names.index("object_type")
    refs = sum(1 for row in rows.items if row[kind] == "git_ref")
    target = work / "native.git"
    subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
    started = time.perf_counter()
    refspecs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    subprocess.run(
        ["git", "--git-dir", str(source), "push", "-q", str(target), *refspecs], check=True
    )
    took = time.perf_counter() - started
    pushed = subprocess.run(
        ["git", "--git-dir", str(target), "for-each-ref", "--format=x"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.count("x")
    assert pushed == refs, f"git pushed {pushed} refs, the Run synced {refs}"
    return took


def measure_floor(work: Path, source: Path, rows: FinalRows, fresh_url: str) -> float:
    """Seconds for the statements DESIGN.md's execution rules require, written plainly.

    The same final rows as the limit, reached the way the rules say they must be: plan
    rows ``planned`` in fenced transactions of the planner's size, then per batch of
    500: a fenced claim (``applying``, the attempt counted) before the target write, the
    write, a fenced ``verifying``, a read-back of the written rows from the target, and a
    fenced settle (each item ``completed`` with what read-back saw) with its links. Every
    fenced transaction starts with the lease check. No Python beyond building the
    parameters: what the rules cost on this storage, whatever the engine.
    """
    fresh, plain, mark, adapt = fresh_stores(rows, fresh_url, work / "floor")
    names = rows.item_names
    at = {name: names.index(name) for name in ("id", "run_id", "state", "batch_no")}
    run_id = rows.items[0][at["run_id"]]
    _, binding_names, bindings = rows.parents[0]
    binding = dict(zip(binding_names, bindings[0], strict=True))
    binding_id, generation = binding["id"], binding["lease_generation"]
    planned = []
    for n, row in enumerate(rows.items):
        values = list(row)
        values[at["state"]], values[at["batch_no"]] = "planned", n // CHUNK
        planned.append(values)
    forge_parts = list(chunks(rows.forge_rows))
    link_parts = list(chunks(rows.links))
    fence = f"SELECT id FROM bindings WHERE id = {mark} AND lease_generation = {mark}" + (
        " FOR SHARE" if mark == "%s" else ""
    )
    claim = (
        f"UPDATE run_items SET state = 'applying', attempt_count = attempt_count + 1 "
        f"WHERE run_id = {mark} AND batch_no = {mark} AND state = 'planned' RETURNING id"
    )
    verifying = (
        f"UPDATE run_items SET state = 'verifying' "
        f"WHERE run_id = {mark} AND batch_no = {mark} AND state = 'applying'"
    )
    settle = (
        f"UPDATE run_items SET state = 'completed', target_identity = {mark}, "
        f"verify_hash = {mark} WHERE id = {mark} AND state = 'verifying'"
    )
    forge_insert = insert_sql("objects", rows.forge_names, "?")
    kind_at, id_at = rows.forge_names.index("object_type"), rows.forge_names.index("id")
    link_insert = insert_sql("object_links", rows.link_names, mark)
    item_insert = insert_sql("run_items", names, mark)

    def fenced(cursor: Any) -> None:
        cursor.execute(fence, (binding_id, generation))
        cursor.fetchall()

    started = time.perf_counter()
    read_source(source, rows)
    for part in chunks(planned, 5000):  # the planner's transactions
        with _transaction(fresh):
            cursor = fresh.cursor()
            fenced(cursor)
            cursor.executemany(item_insert, [[adapt(v) for v in row] for row in part])
    for batch_no in range((len(planned) + CHUNK - 1) // CHUNK):
        with _transaction(fresh):
            cursor = fresh.cursor()
            fenced(cursor)
            cursor.execute(claim, (run_id, batch_no))
            claimed = [row[0] for row in cursor.fetchall()]
        forge_part = forge_parts[batch_no] if batch_no < len(forge_parts) else []
        plain.execute("BEGIN IMMEDIATE")
        plain.executemany(forge_insert, forge_part)
        plain.execute("COMMIT")
        with _transaction(fresh):
            cursor = fresh.cursor()
            fenced(cursor)
            cursor.execute(verifying, (run_id, batch_no))
        keys = [(row[kind_at], row[id_at]) for row in forge_part]
        read = (
            plain.execute(
                "SELECT object_type, id, content_hash FROM objects WHERE (object_type, id) IN "
                "(VALUES " + ",".join(["(?, ?)"] * len(keys)) + ")",
                [value for key in keys for value in key],
            ).fetchall()
            if keys
            else []
        )
        assert len(read) == len(keys)
        hashes = [row[2] for row in read] or [None]  # refs have no forge row: any value will do
        with _transaction(fresh):
            cursor = fresh.cursor()
            fenced(cursor)
            cursor.executemany(
                settle, [(str(n), hashes[n % len(hashes)], i) for n, i in enumerate(claimed)]
            )
            if batch_no < len(link_parts):
                cursor.executemany(
                    link_insert, [[adapt(v) for v in row] for row in link_parts[batch_no]]
                )
    took = time.perf_counter() - started
    plain.close()
    fresh.close()
    return took


@contextmanager
def _transaction(connection: Any) -> Iterator[None]:
    if isinstance(connection, sqlite3.Connection):
        connection.execute("BEGIN IMMEDIATE")
        yield
        connection.execute("COMMIT")
    else:
        with connection.transaction():
            yield


def one_round(
    base: Path, source: Path, objects: int, database: str, server: PostgresServer | None
) -> Measured:
    work = Path(tempfile.mkdtemp(prefix=f"round-{database}-", dir=base))
    if server is None:
        used_url = f"sqlite:///{work / 'reposync.db'}"
        fresh_url = f"sqlite:///{work / 'plain.db'}"
        floor_url = f"sqlite:///{work / 'floor.db'}"
    else:
        name = work.name.replace("-", "_").lower()
        server.admin(f"CREATE DATABASE {name}_used")
        server.admin(f"CREATE DATABASE {name}_plain")
        server.admin(f"CREATE DATABASE {name}_floor")
        used_url = server.database_url(f"{name}_used")
        fresh_url = server.database_url(f"{name}_plain")
        floor_url = server.database_url(f"{name}_floor")
    took, run_id, items = run_reposync(work, source, used_url)
    rows = final_rows(work, used_url, run_id)
    limit = measure_limit(work, source, rows, fresh_url)
    floor = measure_floor(work, source, rows, floor_url)
    git = native_ref_push(work, source, rows)
    return Measured(database, objects, items, took, limit, floor, git)


def show(m: Measured) -> None:
    print(
        f"{m.database:10s} {m.objects:8d} objects {m.items:8d} items  "
        f"reposync {m.reposync_s:7.2f} s  limit {m.limit_s:6.2f} s  "
        f"share {m.share * 100:5.1f} %  {m.items_per_s:7.0f} items/s  "
        f"{m.us_per_item:6.1f} µs/item  (the rules' floor {m.floor_s:5.2f} s: "
        f"share at most {m.floor_share * 100:4.1f} %; with git's own push of the refs "
        f"{m.git_s:4.2f} s in the limit: share {m.share_with_git * 100:4.1f} %)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=80_000)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL too")
    parser.add_argument("--flat", action="store_true", help="cost per item at 10k and 100k")
    parser.add_argument("--million", action="store_true", help="and at 1M (with --flat)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    # Modules the sync imports lazily would otherwise be compiled inside the timed sync
    # whenever their bytecode is stale and cannot be written (PYTHONDONTWRITEBYTECODE):
    # measured, +0.2-0.3 s of a 3.5 s sync after an edit.
    compiled()
    base = Path(tempfile.mkdtemp(prefix="reposync-limit-bench-"))
    server = PostgresServer.start_local() if args.postgres else None
    results: list[Measured] = []
    try:
        sizes = [args.objects]
        if args.flat:
            sizes = [10_000, 100_000] + ([1_000_000] if args.million else [])
        for objects in sizes:
            source = base / f"source-{objects}.git"
            started = time.perf_counter()
            population = populate(source, objects)
            print(
                f"populated {population.total} objects in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
            for _ in range(args.rounds):
                for database in ["sqlite"] + (["postgresql"] if server else []):
                    measured = one_round(
                        base,
                        source,
                        population.total,
                        database,
                        server if database != "sqlite" else None,
                    )
                    show(measured)
                    results.append(measured)
        if args.flat:
            print()
            for database in ("sqlite", "postgresql"):
                mine = [m for m in results if m.database == database]
                if len(mine) >= 2:
                    first, last = mine[0], mine[-1]
                    print(
                        f"{database}: µs/item {first.us_per_item:.1f} at {first.objects} → "
                        f"{last.us_per_item:.1f} at {last.objects} "
                        f"({last.us_per_item / first.us_per_item:.2f}x)"
                    )
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
