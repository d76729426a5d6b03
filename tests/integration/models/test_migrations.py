"""The schema exists only through Alembic, identically on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from reposync.models import Base
from reposync.models.db import SCHEMA_HEAD, Database, alembic_config


def _databases(request: pytest.FixtureRequest, tmp_path) -> Database:
    if request.param == "sqlite":
        return Database(f"sqlite:///{tmp_path / 'm.db'}")
    return Database(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_db(request, tmp_path):
    db = _databases(request, tmp_path)
    if request.param == "postgres":  # the template is migrated; start from nothing
        with db.engine.begin() as conn:
            conn.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    yield db
    db.dispose()


def test_single_head_and_it_is_the_one_the_code_expects():
    """One linear history of migrations; SCHEMA_HEAD names its newest revision."""
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert script.get_heads() == [SCHEMA_HEAD]


def test_upgrade_matches_the_models_without_drift(fresh_db):
    """After ``upgrade head`` autogenerate finds nothing: models and migrations agree."""
    fresh_db.upgrade()
    assert fresh_db.is_current()
    with fresh_db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def test_downgrade_to_base_and_upgrade_again(fresh_db):
    """Every migration can be undone and redone."""
    fresh_db.upgrade()
    config = alembic_config(fresh_db.url)
    with fresh_db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    tables = set(inspect(fresh_db.engine).get_table_names())
    assert tables <= {"alembic_version"}
    fresh_db.upgrade()
    assert {
        "bindings",
        "runs",
        "run_items",
        "object_links",
        "run_events",
        "inventory_entries",
    } <= set(inspect(fresh_db.engine).get_table_names())


def test_0014_tells_the_kinds_of_the_tokens_issued_before(fresh_db, tmp_path):
    """Tokens made before 0014: a stream token (it names a Run) becomes ``stream``, the
    web page's sessions (by their name) ``session``, every other token ``api``."""
    config = alembic_config(fresh_db.url)
    with fresh_db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0013")
    # Rows as they were at 0013, in plain SQL: the models have grown columns since.
    with fresh_db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO bindings (id, a_provider, a_repository_id, a_locator, b_provider, "
                "b_repository_id, b_locator, authority_side, authority_epoch, sync_enabled, "
                "ref_conflict_policy, lease_generation, full_audit_interval, created_at, "
                "updated_at) VALUES (1, 'local', 'a', '/a', 'local', 'b', '/b', 'a', 1, "
                ":no, 'keep_target', 0, 604800, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            ),
            {"no": False},
        )
        conn.execute(
            text(
                "INSERT INTO runs (id, binding_id, kind, mode, audit_mode, trigger, "
                "source_side, target_side, authority_epoch, stage, status, plan_complete, "
                "planning_counters, unsupported, io, counters, report, attempt, "
                "stage_attempts, event_seq, created_at, updated_at) VALUES (1, 1, 'normal', "
                "'apply', 'checkpoint', 'manual', 'a', 'b', 1, 'queued', 'queued', :no, '{}', "
                "'{}', '{}', '{}', '{}', 1, 0, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            ),
            {"no": False},
        )
    stream_run = 1
    with fresh_db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO users (id, login, role, created_at) "
                "VALUES (1, 'ada', 'admin', CURRENT_TIMESTAMP)"
            )
        )
        for n, (name, run_id) in enumerate(
            [("ci", None), ("web page session", None), ("event stream", stream_run)]
        ):
            conn.execute(
                text(
                    "INSERT INTO api_tokens (user_id, name, token_hash, created_at, run_id) "
                    "VALUES (1, :name, :hash, CURRENT_TIMESTAMP, :run_id)"
                ),
                {"name": name, "hash": f"{n:064d}", "run_id": run_id},
            )
    fresh_db.upgrade()
    with fresh_db.engine.connect() as conn:
        kinds = dict(conn.execute(text("SELECT name, kind FROM api_tokens")).all())
    assert kinds == {"ci": "api", "web page session": "session", "event stream": "stream"}
