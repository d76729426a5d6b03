"""Webhooks in: received deliveries (deduplicated by their delivery id), the Run a webhook
owes a Binding (``event_run_due_at``), and what the forge last said about access.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

#: JSON on SQLite, JSONB on PostgreSQL (as reposync.models.base.JSONType).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "incoming_webhooks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=True),
        sa.Column("repository_id", sa.String(length=255), nullable=True),
        sa.Column("full_name", sa.String(length=1024), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("bindings", JSON, nullable=False),
        sa.Column("hints", JSON, nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_incoming_webhooks"),
        sa.UniqueConstraint("provider", "delivery_id", name="uq_incoming_webhooks_delivery"),
    )
    with op.batch_alter_table("incoming_webhooks", schema=None) as batch_op:
        batch_op.create_index(
            "ix_incoming_webhooks_repository",
            ["provider", "repository_id", "event", "action"],
            unique=False,
        )
        batch_op.create_index("ix_incoming_webhooks_received_at", ["received_at"], unique=False)
    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("event_run_due_at", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("access_notice", sa.String(length=500), nullable=True))
        batch_op.create_index("ix_bindings_event_run_due_at", ["event_run_due_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("bindings", schema=None) as batch_op:
        batch_op.drop_index("ix_bindings_event_run_due_at")
        batch_op.drop_column("access_notice")
        batch_op.drop_column("event_run_due_at")
    op.drop_table("incoming_webhooks")
