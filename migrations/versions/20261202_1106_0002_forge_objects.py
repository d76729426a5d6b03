"""Forge objects: creation order, read-back hashes, representations, number maps.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 11:06:33.749531
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inventory_entries", schema=None) as batch_op:
        # Existing rows belong to finished Runs (snapshots are dropped at the end).
        batch_op.add_column(
            sa.Column("order_key", sa.String(length=255), nullable=False, server_default="")
        )

    with op.batch_alter_table("object_links", schema=None) as batch_op:
        batch_op.add_column(sa.Column("a_number", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("b_number", sa.Integer(), nullable=True))
        batch_op.create_index(
            "ix_object_links_renumbered",
            ["binding_id"],
            unique=False,
            sqlite_where=sa.text("a_number <> b_number"),
            postgresql_where=sa.text("a_number <> b_number"),
        )

    with op.batch_alter_table("run_items", schema=None) as batch_op:
        # Each state change rewrote two indexes containing ``state``; one serves both.
        batch_op.drop_index("ix_run_items_run_id_state_object_type")
        batch_op.add_column(sa.Column("verify_hash", sa.String(length=80), nullable=True))
        batch_op.add_column(sa.Column("representation", sa.String(length=16), nullable=True))

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_parent_run_id", ["parent_run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_parent_run_id")

    with op.batch_alter_table("run_items", schema=None) as batch_op:
        batch_op.drop_column("representation")
        batch_op.drop_column("verify_hash")
        batch_op.create_index(
            "ix_run_items_run_id_state_object_type",
            ["run_id", "state", "object_type"],
            unique=False,
        )

    with op.batch_alter_table("object_links", schema=None) as batch_op:
        batch_op.drop_index("ix_object_links_renumbered")
        batch_op.drop_column("b_number")
        batch_op.drop_column("a_number")

    with op.batch_alter_table("inventory_entries", schema=None) as batch_op:
        batch_op.drop_column("order_key")
