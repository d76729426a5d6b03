"""Alembic environment: one schema, migrated the same way on SQLite and PostgreSQL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

import reposync.models  # noqa: F401  (registers every table)
from reposync.models.base import Base

config = context.config
target_metadata = Base.metadata


def _configure(connection) -> None:
    is_sqlite = connection.dialect.name == "sqlite"
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=is_sqlite,  # SQLite has almost no ALTER: move-and-copy
        compare_type=True,
        transaction_per_migration=True,
    )
    if connection.dialect.name == "postgresql":
        # Never queue behind a long lock while migrating a live database.
        connection.exec_driver_sql("SET lock_timeout = '10s'")
        connection.exec_driver_sql("SET statement_timeout = '10min'")


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
