"""A Run's Git transfer while a push runs: git's own phase, objects and bytes
(``reposync.git.progress``), so the API, the page and ``runs show`` see a push move
instead of 0 items for its whole length.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-10 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

#: JSON on SQLite, JSONB on PostgreSQL (as reposync.models.base.JSON).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("transfer", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("transfer")
