"""Bindings are found by side b's repository too: a webhook names a repository, and side
a's lookup already rides the endpoints' unique index, side b's scanned the table.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_bindings_b_repository", ["b_provider", "b_repository_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.drop_index("ix_bindings_b_repository")
