"""Issue 23 #5: ``reposync api`` starts only on a database at its schema. A configured
database never migrated (or at another migration, or away) makes it exit at once naming
``reposync db upgrade``; the embedded data directory's database is migrated, as every
CLI command does with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from alembic import command
from sqlalchemy import text

from reposync.config import Settings
from reposync.errors import DatabaseNotMigrated, DatabaseUnavailable
from reposync.models.db import SCHEMA_HEAD, Database, alembic_config
from reposync.web.server import check_database
from tests.servers import free_port
from tests.workers import ROOT, WorkerProcess, start_api

API_START_TIMEOUT = 60


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A configured database that exists and holds nothing."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'configured.db'}"
    url: str = request.getfixturevalue("pg_url")
    db = Database(url)
    with db.engine.begin() as conn:  # the template is migrated; start from nothing
        conn.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    db.dispose()
    return url


def test_a_configured_database_never_migrated_is_refused(empty_url, tmp_path):
    """Never migrated: refused, naming the command that migrates it; nothing created."""
    settings = Settings(data_dir=tmp_path / "data", database_url=empty_url)
    with pytest.raises(DatabaseNotMigrated, match="never migrated: run `reposync db upgrade`"):
        check_database(settings)
    db = Database(empty_url)
    assert db.revisions() == []
    db.dispose()


def test_a_configured_database_at_another_migration_is_refused(empty_url, tmp_path):
    """One migration behind: refused naming both revisions; ahead: refused too (an older
    reposync must not serve a schema it does not know)."""
    db = Database(empty_url)
    db.upgrade()
    config = alembic_config(db.url)
    with db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "-1")
    previous = db.revisions()
    settings = Settings(data_dir=tmp_path / "data", database_url=empty_url)
    with pytest.raises(DatabaseNotMigrated, match="reposync db upgrade") as behind:
        check_database(settings)
    assert previous[0] in behind.value.message
    assert SCHEMA_HEAD in behind.value.message
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(DatabaseNotMigrated, match="newer than this reposync"):
        check_database(settings)
    db.dispose()


def test_a_configured_database_that_is_away_is_refused(tmp_path):
    """Nothing listens where the database should be: refused as unavailable."""
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/none"
    with pytest.raises(DatabaseUnavailable, match="cannot reach the database"):
        check_database(Settings(data_dir=tmp_path / "data", database_url=url))


def _environment(tmp_path: Path, database_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPOSYNC_")}
    env.update(REPOSYNC_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    if database_url is not None:
        env["REPOSYNC_DATABASE_URL"] = database_url
    return env


def test_reposync_api_exits_on_a_database_never_migrated(tmp_path):
    """The command exits with status 2 and says what to run, before gunicorn starts."""
    env = _environment(tmp_path, f"sqlite:///{tmp_path / 'configured.db'}")
    argv = [sys.executable, "-m", "reposync.cli", "api", "--bind", f"127.0.0.1:{free_port()}"]
    done = subprocess.run(
        argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=API_START_TIMEOUT
    )
    assert done.returncode == 2, done.stderr
    assert "reposync db upgrade" in done.stderr
    assert "[database_not_migrated]" in done.stderr
    assert "Booting worker" not in done.stderr


def test_reposync_api_migrates_the_embedded_database_itself(tmp_path):
    """No database configured: the data directory's database is migrated and served."""
    port = free_port()
    api: WorkerProcess = start_api(_environment(tmp_path, None), tmp_path, port)
    try:
        health = requests.get(f"http://127.0.0.1:{port}/api/ext/v1/sync/health", timeout=5)
        assert health.json() == {"status": "ok", "database": "ok"}
    finally:
        api.stop()
    db = Database(f"sqlite:///{tmp_path / 'data' / 'reposync.db'}")
    assert db.revisions() == [SCHEMA_HEAD]
    db.dispose()
