"""Connect GitHub: where a flow started (``api`` or ``page``), so the callback answers
JSON to an API client and sends a browser that started on the web page back to it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("github_connect_states", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("origin", sa.String(length=8), server_default="api", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("github_connect_states", schema=None) as batch_op:
        batch_op.drop_column("origin")
