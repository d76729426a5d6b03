"""Refused API tokens are counted per client across every API process (the throttle),
and a token says what it is for, so a user's sign-in sessions can be bounded and expired
sessions and stream tokens removed.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-08 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "auth_failures",
        sa.Column("client", sa.String(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("window_ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("client", name=op.f("pk_auth_failures")),
    )
    with op.batch_alter_table("auth_failures", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_auth_failures_window_ends_at"), ["window_ends_at"], unique=False
        )

    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("kind", sa.String(length=16), server_default="api", nullable=False)
        )
        batch_op.create_check_constraint("kind", "kind IN ('api', 'session', 'stream')")
        batch_op.create_index("ix_api_tokens_kind_expires_at", ["kind", "expires_at"], unique=False)
    # What the tokens issued before were, by how they were made: a stream token names its
    # Run; the web page named its sessions (service/users.py, web/pages/session.py).
    op.execute("UPDATE api_tokens SET kind = 'stream' WHERE run_id IS NOT NULL")
    op.execute(
        "UPDATE api_tokens SET kind = 'session' WHERE run_id IS NULL AND name = 'web page session'"
    )


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_api_tokens_kind_expires_at")
        batch_op.drop_constraint(op.f("ck_api_tokens_kind"), type_="check")
        batch_op.drop_column("kind")
    with op.batch_alter_table("auth_failures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_auth_failures_window_ends_at"))
    op.drop_table("auth_failures")
