"""ObjectLink: the lasting pairing of one object on side a with one on side b."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from reposync.models.base import Base, utcnow
from reposync.sync.vocabulary import Representation


class ObjectLink(Base):
    __tablename__ = "object_links"
    __table_args__ = (
        UniqueConstraint(
            "binding_id", "object_type", "a_identity", name="uq_object_links_a_identity"
        ),
        UniqueConstraint(
            "binding_id", "object_type", "b_identity", name="uq_object_links_b_identity"
        ),
        Index("ix_object_links_binding_id_object_type", "binding_id", "object_type"),
        # The few links whose issue numbers differ (``#N`` rewriting): found without
        # scanning every issue link of the Binding.
        Index(
            "ix_object_links_renumbered",
            "binding_id",
            sqlite_where=text("a_number <> b_number"),
            postgresql_where=text("a_number <> b_number"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    binding_id: Mapped[int] = mapped_column(ForeignKey("bindings.id", ondelete="CASCADE"))
    object_type: Mapped[str] = mapped_column(String(32))
    a_identity: Mapped[str] = mapped_column(String(1024))
    b_identity: Mapped[str] = mapped_column(String(1024))
    #: Revisions observed on each side when the pair was last verified by read-back.
    a_revision: Mapped[str | None] = mapped_column(String(255))
    b_revision: Mapped[str | None] = mapped_column(String(255))
    #: Issue and pull request numbers on each side: the map ``#N`` references follow.
    a_number: Mapped[int | None]
    b_number: Mapped[int | None]
    verified_hash: Mapped[str | None] = mapped_column(String(80))
    verify_failed: Mapped[bool] = mapped_column(default=False)
    mapper_version: Mapped[int]
    representation: Mapped[str] = mapped_column(String(16), default=Representation.NATIVE.value)
    verified_run_id: Mapped[int | None]
    verified_at: Mapped[datetime] = mapped_column(default=utcnow)
