"""Write budget: content-creating writes per account and window, shared by workers.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 12:16:23.113004
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
        "write_budget_windows",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account", sa.String(length=255), nullable=False),
        sa.Column("window_seconds", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_write_budget_windows")),
        sa.UniqueConstraint("account", "window_seconds", name="uq_write_budget_windows_account"),
    )


def downgrade() -> None:
    op.drop_table("write_budget_windows")
