"""The driver-level helpers of ``reposync.models.db`` on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from reposync.models.db import Database, execute, executemany, fetch


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    if request.param == "sqlite":
        database = Database(f"sqlite:///{tmp_path / 'h.db'}")
        database.upgrade()
    else:
        database = Database(request.getfixturevalue("pg_url"))
    yield database
    database.dispose()


def test_fetch_streams_every_row_in_order_and_returns_dml_rows(db):
    """Chunked SELECTs (a server-side cursor on PostgreSQL) and UPDATE ... RETURNING."""
    with db.transaction() as session:
        executemany(
            session,
            "INSERT INTO users (login, role, created_at) VALUES (?, 'member', ?)",
            [(f"user-{n:03d}", "2026-01-01 00:00:00") for n in range(23)],
        )
        logins = [
            row[0] for row in fetch(session, "SELECT login FROM users ORDER BY login", chunk=5)
        ]
        changed = list(
            fetch(
                session,
                "UPDATE users SET role = 'admin' WHERE login IN (?, ?) RETURNING login",
                ("user-001", "user-002"),
            )
        )
        deleted = execute(session, "DELETE FROM users WHERE role = ?", ("admin",))
    assert logins == [f"user-{n:03d}" for n in range(23)]
    assert sorted(row[0] for row in changed) == ["user-001", "user-002"]
    assert deleted == 2
