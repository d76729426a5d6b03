"""Connect GitHub: users' GitHub identities, authorized installations and their
repositories, and the one-time states of flows in progress (no token column anywhere).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

#: JSON on SQLite, JSONB on PostgreSQL (as reposync.models.base.JSONType).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _user_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=op.f(f"fk_{table}_user_id_users"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "github_connect_states",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("browser_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("flow", sa.String(length=16), nullable=False),
        sa.Column("baseline", JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "flow IN ('authorize', 'install')", name=op.f("ck_github_connect_states_flow")
        ),
        _user_fk("github_connect_states"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_github_connect_states")),
        sa.UniqueConstraint("state_hash", name=op.f("uq_github_connect_states_state_hash")),
    )
    with op.batch_alter_table("github_connect_states", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_github_connect_states_user_id"), ["user_id"], unique=False
        )

    op.create_table(
        "github_accounts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("github_user_id", sa.String(length=64), nullable=False),
        sa.Column("login", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("html_url", sa.String(length=1024), nullable=False),
        sa.Column("connected_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        _user_fk("github_accounts"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_github_accounts")),
        sa.UniqueConstraint("user_id", name=op.f("uq_github_accounts_user_id")),
    )

    op.create_table(
        "github_installation_grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("installation_id", sa.String(length=64), nullable=False),
        sa.Column("account_login", sa.String(length=255), nullable=False),
        sa.Column("account_type", sa.String(length=32), nullable=False),
        sa.Column("repository_selection", sa.String(length=16), nullable=False),
        sa.Column("manage_url", sa.String(length=1024), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        _user_fk("github_installation_grants"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_github_installation_grants")),
        sa.UniqueConstraint(
            "user_id",
            "installation_id",
            name="uq_github_installation_grants_user_installation",
        ),
    )
    with op.batch_alter_table("github_installation_grants", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_github_installation_grants_user_id"), ["user_id"], unique=False
        )

    op.create_table(
        "github_grant_repositories",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grant_id", sa.Integer(), nullable=False),
        sa.Column("repository_id", sa.String(length=64), nullable=False),
        sa.Column("full_name", sa.String(length=255), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("html_url", sa.String(length=1024), nullable=False),
        sa.ForeignKeyConstraint(
            ["grant_id"],
            ["github_installation_grants.id"],
            name=op.f("fk_github_grant_repositories_grant_id_github_installation_grants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_github_grant_repositories")),
        sa.UniqueConstraint(
            "grant_id",
            "repository_id",
            name="uq_github_grant_repositories_grant_repository",
        ),
    )
    with op.batch_alter_table("github_grant_repositories", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_github_grant_repositories_grant_id"), ["grant_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("github_grant_repositories", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_github_grant_repositories_grant_id"))
    op.drop_table("github_grant_repositories")
    with op.batch_alter_table("github_installation_grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_github_installation_grants_user_id"))
    op.drop_table("github_installation_grants")
    op.drop_table("github_accounts")
    with op.batch_alter_table("github_connect_states", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_github_connect_states_user_id"))
    op.drop_table("github_connect_states")
