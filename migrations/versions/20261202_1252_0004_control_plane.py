"""Control plane: users, hashed API tokens, grants, schedules, visibility confirmation.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 12:52:35.542049
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("login", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('admin', 'member')", name=op.f("ck_users_role")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("login", name=op.f("uq_users_login")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)

    op.create_table(
        "repository_grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("repository_id", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_repository_grants_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_repository_grants")),
        sa.UniqueConstraint(
            "user_id", "provider", "repository_id", name="uq_repository_grants_user_repository"
        ),
    )
    with op.batch_alter_table("repository_grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_repository_grants_user_id"), ["user_id"], unique=False)

    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("schedule_cron", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(  # weekly, for existing Bindings too
            sa.Column("full_audit_interval", sa.Integer(), nullable=False, server_default="604800")
        )
        batch_op.add_column(
            sa.Column("last_full_apply_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("last_full_apply_epoch", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("a_visibility", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("b_visibility", sa.String(length=16), nullable=True))
        batch_op.add_column(
            sa.Column("visibility_confirmation", sa.String(length=80), nullable=True)
        )
        batch_op.create_index(batch_op.f("ix_bindings_next_run_at"), ["next_run_at"], unique=False)

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(
            "ux_runs_binding_id_scheduled_for",
            ["binding_id", "scheduled_for"],
            unique=True,
            sqlite_where=sa.text("scheduled_for IS NOT NULL"),
            postgresql_where=sa.text("scheduled_for IS NOT NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(
            "ux_runs_binding_id_scheduled_for",
            sqlite_where=sa.text("scheduled_for IS NOT NULL"),
            postgresql_where=sa.text("scheduled_for IS NOT NULL"),
        )
        batch_op.drop_column("scheduled_for")

    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_bindings_next_run_at"))
        batch_op.drop_column("visibility_confirmation")
        batch_op.drop_column("b_visibility")
        batch_op.drop_column("a_visibility")
        batch_op.drop_column("last_full_apply_epoch")
        batch_op.drop_column("last_full_apply_at")
        batch_op.drop_column("full_audit_interval")
        batch_op.drop_column("next_run_at")
        batch_op.drop_column("schedule_cron")

    with op.batch_alter_table("repository_grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_repository_grants_user_id"))

    op.drop_table("repository_grants")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_user_id"))

    op.drop_table("api_tokens")
    op.drop_table("users")
