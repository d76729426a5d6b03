"""Which fields travel in an attribution header, and how a header is written and read.

A hosted forge's API sets no author and no time: the object is the token's, created
now. reposync writes such fields into the body's attribution header (``bodies``), and
reads give the header's value back in place of what the forge reports, so an object
read back equals the object that was written.

``ATTRIBUTED_FIELDS`` is the set GitHub's API cannot set; a forge that can set one for
some writes (Forgejo authoring as the mapped account through ``Sudo``) passes its own
``fields`` for those writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO

from reposync.errors import WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import Parsed, compose
from reposync.sync.vocabulary import ObjectType

#: Fields a forge's API cannot set, per type: they travel in the attributed header.
ATTRIBUTED_FIELDS: dict[ObjectType, tuple[str, ...]] = {
    # state_reason too: GitHub sets "reopened" by itself when an issue is reopened.
    # The lock is GitHub's own (lock/unlock), not a header field.
    ObjectType.ISSUE: ("author", "created_at", "closed_at", "assignees", "state_reason"),
    ObjectType.ISSUE_COMMENT: ("author", "created_at"),
    ObjectType.PULL_REQUEST: (
        "author",
        "created_at",
        "closed_at",
        "assignees",
        "base_sha",
        "head_ref",  # a pull request on a shadow branch keeps its fork's branch name
        "head_sha",
        "merged",
        "merged_at",
    ),
    ObjectType.REVIEW: ("state", "commit_id", "author", "submitted_at"),
    ObjectType.REVIEW_COMMENT: ("commit_id", "author", "created_at"),
    ObjectType.RELEASE: ("author", "created_at", "published_at"),
}


def attributed_body(
    write: TargetWrite,
    fields: Sequence[str],
    *,
    source_label: str | None,
    extra: Mapping[str, Any] | None = None,
    note: str | None = None,
    headline: str | None = None,
) -> str:
    """The write's body with a header of its payload's ``fields`` (and ``extra``, which
    wins) and its marker; ``note`` is said in the header's visible line, which
    ``headline`` replaces (a body written as its author's own account)."""
    payload = write.payload or {}
    attribution = {key: payload.get(key) for key in fields}
    attribution.update(extra or {})
    return compose(
        payload.get("body") or "",
        marker=write.marker,
        attribution=attribution or None,
        source_label=source_label,
        headline=headline,
        note=note,
    )


class BatchReferences:
    """What every forge's per-batch context says alike: its repository's API paths and
    the targets a write's references name (from the links, or created earlier in this
    batch)."""

    def __init__(self, repo: str, forge: str) -> None:
        self.repo = repo  # "owner/name"
        self.forge = forge  # the forge's name, as what reposync writes on it says it
        #: Marker -> identity of what this batch created (references within a batch).
        self.created: dict[str, str] = {}

    def path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def ref(self, write: TargetWrite, name: str) -> str | None:
        """A reference's target identity: from the links, or created earlier in this batch."""
        ref = write.refs.get(name)
        if ref is None:
            return None
        return ref.identity or self.created.get(ref.marker)

    def parent(self, write: TargetWrite) -> str | None:
        return self.ref(write, "parent")

    def upload(self, write: TargetWrite) -> tuple[str, Callable[[], BinaryIO]]:
        """The release asset ``write`` is uploaded to, and what opens its bytes;
        ``dependency_missing`` while the release is not on the forge or there are no
        bytes to send."""
        release = self.parent(write)
        if release is None or write.content is None:
            raise WriteRefused(
                "the release (or the bytes) are missing", refusal="dependency_missing", status=422
            )
        return release, write.content


def parent_number(ref_identity: str | None, forge: str) -> int:
    """The issue number a reference names; ``dependency_missing`` while it names nothing."""
    if ref_identity is None or not ref_identity.isdigit():
        raise WriteRefused(
            f"the parent is not on {forge} yet", refusal="dependency_missing", status=422
        )
    return int(ref_identity)


def header_value(parsed: Parsed, key: str, default: Any) -> Any:
    """The header's ``key`` when the header has it, else ``default`` (what the forge
    reports)."""
    if parsed.attribution is not None and key in parsed.attribution:
        return parsed.attribution[key]
    return default
