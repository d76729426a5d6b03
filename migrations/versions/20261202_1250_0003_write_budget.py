"""Write budget: content-creating writes per forge account, shared by every worker.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 12:50:01.425088
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "write_budget_accounts",
        sa.Column("account", sa.String(length=255), nullable=False),
        sa.PrimaryKeyConstraint("account", name=op.f("pk_write_budget_accounts")),
    )
    op.create_table(
        "write_budget_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account", sa.String(length=255), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["account"],
            ["write_budget_accounts.account"],
            name=op.f("fk_write_budget_events_account_write_budget_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_write_budget_events")),
    )
    with op.batch_alter_table("write_budget_events", schema=None) as batch_op:
        batch_op.create_index("ix_write_budget_events_account_at", ["account", "at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("write_budget_events", schema=None) as batch_op:
        batch_op.drop_index("ix_write_budget_events_account_at")

    op.drop_table("write_budget_events")
    op.drop_table("write_budget_accounts")
