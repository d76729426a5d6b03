"""Review requests a forge cannot make, projected as comments on their pull request.

A forge requests a review only from an account of its own with access to the
repository, which the source's reviewer rarely is. The request is shown as a comment
(``projected``) naming the reviewer in code (no notification goes to a namesake),
whose header keeps the canonical payload, so reads present the comment as this review
request again (``carriers.carried_object``), never as a comment.
"""

from __future__ import annotations

from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose
from reposync.providers.forge.carriers import CARRIED_TYPE
from reposync.sync.vocabulary import ObjectType


def review_request_body(write: TargetWrite, *, source_label: str | None, forge: str) -> str:
    """The comment that shows review request ``write`` on ``forge`` (its name, as the
    comment's visible line says why the request is a comment)."""
    payload = write.payload or {}
    reviewer = str(payload.get("reviewer") or "")
    when = payload.get("requested_at")
    attribution = {
        CARRIED_TYPE: ObjectType.REVIEW_REQUEST.value,
        "reviewer": reviewer,
        "requested_at": when,
    }
    return compose(
        f"Review requested from `@{reviewer}`{' on ' + when if when else ''}.",
        marker=write.marker,
        attribution=attribution,
        headline="Review request projected by reposync"
        + (f" from {source_label}" if source_label else "")
        + f": {forge} requests reviews only from its own collaborators",
    )
