"""Whole owners bound at once: owner bindings and their members; a Binding's schedule
offset (an owner binding spreads its Bindings' slots); the write budget remembers who
spent each write and who asks lately, so one account's budget is shared among its
Bindings.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-09 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

#: JSON on SQLite, JSONB on PostgreSQL (as reposync.models.base.JSON).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "owner_bindings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_provider", sa.String(length=32), nullable=False),
        sa.Column("source_owner", sa.String(length=255), nullable=False),
        sa.Column("source_connection_id", sa.String(length=255), nullable=True),
        sa.Column("target_provider", sa.String(length=32), nullable=False),
        sa.Column("target_owner", sa.String(length=255), nullable=False),
        sa.Column("target_connection_id", sa.String(length=255), nullable=True),
        sa.Column("ref_conflict_policy", sa.String(length=32), nullable=True),
        sa.Column("schedule_cron", sa.String(length=255), nullable=True),
        sa.Column("confirm_visibility", sa.Boolean(), nullable=False),
        sa.Column("confined", sa.Boolean(), nullable=False),
        sa.Column("pass_cron", sa.String(length=255), nullable=True),
        sa.Column("next_pass_at", TIME, nullable=True),
        sa.Column("pass_started_at", TIME, nullable=True),
        sa.Column("last_pass_at", TIME, nullable=True),
        sa.Column("last_pass", JSON, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_owner_bindings")),
        sa.UniqueConstraint(
            "source_provider",
            "source_owner",
            "target_provider",
            "target_owner",
            name="uq_owner_bindings_owners",
        ),
    )
    with op.batch_alter_table("owner_bindings", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_owner_bindings_next_pass_at"), ["next_pass_at"], unique=False
        )
    op.create_table(
        "owner_binding_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_binding_id", sa.Integer(), nullable=False),
        sa.Column("source_repository_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("binding_id", sa.Integer(), nullable=True),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("sync_switched_on", sa.Boolean(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["binding_id"],
            ["bindings.id"],
            name=op.f("fk_owner_binding_members_binding_id_bindings"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["owner_binding_id"],
            ["owner_bindings.id"],
            name=op.f("fk_owner_binding_members_owner_binding_id_owner_bindings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_owner_binding_members")),
        sa.UniqueConstraint(
            "owner_binding_id",
            "source_repository_id",
            name="uq_owner_binding_members_source",
        ),
    )
    with op.batch_alter_table("owner_binding_members", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_owner_binding_members_binding_id"), ["binding_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_owner_binding_members_owner_binding_id"),
            ["owner_binding_id"],
            unique=False,
        )

    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("schedule_offset", sa.Integer(), server_default="0", nullable=False)
        )

    with op.batch_alter_table("write_budget_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claimant", sa.String(length=64), nullable=True))
    op.create_table(
        "write_budget_claimants",
        sa.Column("account", sa.String(length=255), nullable=False),
        sa.Column("claimant", sa.String(length=64), nullable=False),
        sa.Column("asked_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["account"],
            ["write_budget_accounts.account"],
            name=op.f("fk_write_budget_claimants_account_write_budget_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account", "claimant", name=op.f("pk_write_budget_claimants")),
    )


def downgrade() -> None:
    op.drop_table("write_budget_claimants")
    with op.batch_alter_table("write_budget_events", schema=None) as batch_op:
        batch_op.drop_column("claimant")
    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.drop_column("schedule_offset")
    with op.batch_alter_table("owner_binding_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_owner_binding_members_owner_binding_id"))
        batch_op.drop_index(batch_op.f("ix_owner_binding_members_binding_id"))
    op.drop_table("owner_binding_members")
    with op.batch_alter_table("owner_bindings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_owner_bindings_next_pass_at"))
    op.drop_table("owner_bindings")
