"""Pipeline spine: bindings, runs, run items, object links, run events, inventories.

Revision ID: 0001
Revises:
Create Date: 2026-12-02 10:22:05.531163
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

#: JSON on SQLite, JSONB on PostgreSQL (as reposync.models.base.JSONType).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bindings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("a_provider", sa.String(length=32), nullable=False),
        sa.Column("a_repository_id", sa.String(length=255), nullable=False),
        sa.Column("a_locator", sa.String(length=1024), nullable=False),
        sa.Column("a_connection_id", sa.String(length=255), nullable=True),
        sa.Column("b_provider", sa.String(length=32), nullable=False),
        sa.Column("b_repository_id", sa.String(length=255), nullable=False),
        sa.Column("b_locator", sa.String(length=1024), nullable=False),
        sa.Column("b_connection_id", sa.String(length=255), nullable=True),
        sa.Column("authority_side", sa.String(length=1), nullable=False),
        sa.Column("authority_epoch", sa.Integer(), nullable=False),
        sa.Column("sync_enabled", sa.Boolean(), nullable=False),
        sa.Column("ref_conflict_policy", sa.String(length=32), nullable=False),
        sa.Column("lease_owner", sa.String(length=255), nullable=True),
        sa.Column("lease_run_id", sa.Integer(), nullable=True),
        sa.Column("lease_generation", sa.Integer(), nullable=False),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_converged_run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("authority_side IN ('a', 'b')", name=op.f("ck_bindings_authority_side")),
        sa.CheckConstraint("lease_generation >= 0", name=op.f("ck_bindings_lease_generation")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bindings")),
        sa.UniqueConstraint(
            "a_provider",
            "a_repository_id",
            "b_provider",
            "b_repository_id",
            name="uq_bindings_endpoints",
        ),
    )
    op.create_table(
        "object_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("binding_id", sa.Integer(), nullable=False),
        sa.Column("object_type", sa.String(length=32), nullable=False),
        sa.Column("a_identity", sa.String(length=1024), nullable=False),
        sa.Column("b_identity", sa.String(length=1024), nullable=False),
        sa.Column("a_revision", sa.String(length=255), nullable=True),
        sa.Column("b_revision", sa.String(length=255), nullable=True),
        sa.Column("verified_hash", sa.String(length=80), nullable=True),
        sa.Column("verify_failed", sa.Boolean(), nullable=False),
        sa.Column("mapper_version", sa.Integer(), nullable=False),
        sa.Column("representation", sa.String(length=16), nullable=False),
        sa.Column("verified_run_id", sa.Integer(), nullable=True),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["binding_id"],
            ["bindings.id"],
            name=op.f("fk_object_links_binding_id_bindings"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_object_links")),
        sa.UniqueConstraint(
            "binding_id", "object_type", "a_identity", name="uq_object_links_a_identity"
        ),
        sa.UniqueConstraint(
            "binding_id", "object_type", "b_identity", name="uq_object_links_b_identity"
        ),
    )
    with op.batch_alter_table("object_links", schema=None) as batch_op:
        batch_op.create_index(
            "ix_object_links_binding_id_object_type", ["binding_id", "object_type"], unique=False
        )

    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("binding_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("audit_mode", sa.String(length=16), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("source_side", sa.String(length=1), nullable=False),
        sa.Column("target_side", sa.String(length=1), nullable=False),
        sa.Column("authority_epoch", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=40), nullable=False),
        sa.Column("plan_mode", sa.String(length=16), nullable=True),
        sa.Column("plan_complete", sa.Boolean(), nullable=False),
        sa.Column("planning_counters", JSON, nullable=False),
        sa.Column("source_digest", sa.String(length=80), nullable=True),
        sa.Column("target_digest", sa.String(length=80), nullable=True),
        sa.Column("unsupported", JSON, nullable=False),
        sa.Column("io", JSON, nullable=False),
        sa.Column("counters", JSON, nullable=False),
        sa.Column("report", JSON, nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.String(), nullable=True),
        sa.Column("parent_run_id", sa.Integer(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("cancel_requested_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_generation", sa.Integer(), nullable=True),
        sa.Column("stage_attempts", sa.Integer(), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("attempt >= 1", name=op.f("ck_runs_attempt")),
        sa.CheckConstraint("source_side <> target_side", name=op.f("ck_runs_sides")),
        sa.ForeignKeyConstraint(
            ["binding_id"],
            ["bindings.id"],
            name=op.f("fk_runs_binding_id_bindings"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_run_id"],
            ["runs.id"],
            name=op.f("fk_runs_parent_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_binding_id_id", ["binding_id", "id"], unique=False)
        batch_op.create_index("ix_runs_status_id", ["status", "id"], unique=False)
        batch_op.create_index(
            "ux_runs_one_active_per_binding",
            ["binding_id"],
            unique=True,
            sqlite_where=sa.text("status IN ('queued', 'running')"),
            postgresql_where=sa.text("status IN ('queued', 'running')"),
        )

    op.create_table(
        "inventory_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("side", sa.String(length=8), nullable=False),
        sa.Column("object_type", sa.String(length=32), nullable=False),
        sa.Column("identity", sa.String(length=1024), nullable=False),
        sa.Column("object_key", sa.String(length=1024), nullable=False),
        sa.Column("unique_key", sa.String(length=1024), nullable=True),
        sa.Column("revision", sa.String(length=255), nullable=False),
        sa.Column("content_hash", sa.String(length=80), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
            name=op.f("fk_inventory_entries_run_id_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inventory_entries")),
        sa.UniqueConstraint(
            "run_id", "side", "object_type", "identity", name="uq_inventory_entries_identity"
        ),
    )
    op.create_table(
        "run_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("stage", sa.String(length=32), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=True),
        sa.Column("counts", JSON, nullable=False),
        sa.Column("message", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_events_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_events")),
        sa.UniqueConstraint("run_id", "seq", name="uq_run_events_seq"),
    )
    op.create_table(
        "run_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("phase", sa.Integer(), nullable=False),
        sa.Column("object_type", sa.String(length=32), nullable=False),
        sa.Column("object_key", sa.String(length=1024), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("batch_no", sa.Integer(), nullable=True),
        sa.Column("source_identity", sa.String(length=1024), nullable=True),
        sa.Column("target_identity", sa.String(length=1024), nullable=True),
        sa.Column("source_revision", sa.String(length=255), nullable=True),
        sa.Column("desired_hash", sa.String(length=80), nullable=True),
        sa.Column("expected_target_hash", sa.String(length=80), nullable=True),
        sa.Column("intent", JSON, nullable=False),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.String(), nullable=True),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("applied_generation", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_items_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_items")),
    )
    with op.batch_alter_table("run_items", schema=None) as batch_op:
        batch_op.create_index(
            "ix_run_items_run_id_state_batch_no", ["run_id", "state", "batch_no"], unique=False
        )
        batch_op.create_index(
            "ix_run_items_run_id_state_object_type",
            ["run_id", "state", "object_type"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("run_items", schema=None) as batch_op:
        batch_op.drop_index("ix_run_items_run_id_state_object_type")
        batch_op.drop_index("ix_run_items_run_id_state_batch_no")

    op.drop_table("run_items")
    op.drop_table("run_events")
    op.drop_table("inventory_entries")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(
            "ux_runs_one_active_per_binding",
            sqlite_where=sa.text("status IN ('queued', 'running')"),
            postgresql_where=sa.text("status IN ('queued', 'running')"),
        )
        batch_op.drop_index("ix_runs_status_id")
        batch_op.drop_index("ix_runs_binding_id_id")

    op.drop_table("runs")
    with op.batch_alter_table("object_links", schema=None) as batch_op:
        batch_op.drop_index("ix_object_links_binding_id_object_type")

    op.drop_table("object_links")
    op.drop_table("bindings")
