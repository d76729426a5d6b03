"""A token may be scoped to one Run's event stream (a browser's EventSource sends no
Authorization header: it carries a short-lived token in the URL instead).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 02:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            "fk_api_tokens_run_id_runs", "runs", ["run_id"], ["id"], ondelete="CASCADE"
        )


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_constraint("fk_api_tokens_run_id_runs", type_="foreignkey")
        batch_op.drop_column("run_id")
