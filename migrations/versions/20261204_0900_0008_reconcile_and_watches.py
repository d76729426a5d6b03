"""Idempotency keys (reconcile answers a retried request once) and branch watches with
their revision cursors.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

#: JSON on SQLite, JSONB on PostgreSQL (as reposync.models.base.JSONType).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("scope", sa.String(length=128), nullable=False),
        sa.Column("binding_id", sa.Integer(), nullable=True),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("owner", sa.String(length=32), nullable=False),
        sa.Column("locked_until", TIME, nullable=True),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_body", JSON, nullable=True),
        sa.Column("response_headers", JSON, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.CheckConstraint(
            "state IN ('in_progress', 'completed')", name=op.f("ck_idempotency_keys_state")
        ),
        sa.ForeignKeyConstraint(
            ["binding_id"],
            ["bindings.id"],
            name=op.f("fk_idempotency_keys_binding_id_bindings"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_idempotency_keys_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("user_id", "scope", "key", name="uq_idempotency_keys_user_scope_key"),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_idempotency_keys_binding_id"), ["binding_id"], unique=False
        )
        batch_op.create_index("ix_idempotency_keys_expires_at", ["expires_at"], unique=False)

    op.create_table(
        "branch_watches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=False),
        sa.Column("repository_id", sa.String(length=255), nullable=False),
        sa.Column("locator", sa.String(length=1024), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("before", sa.String(length=64), nullable=True),
        sa.Column("after", sa.String(length=64), nullable=True),
        sa.Column("moved_at", TIME, nullable=True),
        sa.Column("observed_at", TIME, nullable=True),
        sa.Column("tied", JSON, nullable=False),
        sa.Column("movements", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_branch_watches_created_by_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_branch_watches")),
        sa.UniqueConstraint(
            "created_by", "provider", "repository_id", "branch", name="uq_branch_watches_watch"
        ),
    )
    with op.batch_alter_table("branch_watches", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_branch_watches_created_by"), ["created_by"], unique=False
        )
        batch_op.create_index(
            "ix_branch_watches_repository", ["provider", "repository_id", "branch"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("branch_watches", schema=None) as batch_op:
        batch_op.drop_index("ix_branch_watches_repository")
        batch_op.drop_index(batch_op.f("ix_branch_watches_created_by"))
    op.drop_table("branch_watches")

    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_idempotency_keys_expires_at")
        batch_op.drop_index(batch_op.f("ix_idempotency_keys_binding_id"))
    op.drop_table("idempotency_keys")
