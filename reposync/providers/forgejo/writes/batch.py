"""One batch of writes to one Forgejo repository, each sent to its family's handler
(``forge.batch`` turns the answers into results; a rate limit is a proxy's: Forgejo has
none of its own). A create found after a lost response is finished as its later
requests would have: a placeholder taken over gets its labels and state.
"""

from __future__ import annotations

from collections.abc import Callable

from reposync.errors import ObjectNotFound, WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge import review_requests
from reposync.providers.forge.batch import ForgeWriter
from reposync.providers.forgejo.accounts import People
from reposync.providers.forgejo.client import ForgejoClient
from reposync.providers.forgejo.writes import (
    issues,
    labels,
    pulls,
    releases,
    reviews,
)
from reposync.providers.forgejo.writes.carriers import kind
from reposync.providers.forgejo.writes.context import Handlers, WriteContext
from reposync.providers.forgejo.writes.markers import find_created
from reposync.sync.canonical import CanonicalObject
from reposync.sync.vocabulary import ObjectType, Representation

#: Every (action, type) Forgejo can write; any other pair is refused ``unsupported``.
HANDLERS: Handlers = {
    **labels.HANDLERS,
    **issues.HANDLERS,
    **pulls.HANDLERS,
    **reviews.HANDLERS,
    **review_requests.HANDLERS,
    **releases.HANDLERS,
}


class ForgejoWriter(ForgeWriter[WriteContext]):
    """Applies one batch of writes for one repository (keeps per-batch caches)."""

    #: A write Forgejo answers 404 for names what it hangs on (a missing issue, label).
    refusals = (WriteRefused, ObjectNotFound)

    def __init__(
        self,
        client: ForgejoClient,
        repo: str,
        people: People,
        source_label: Callable[[TargetWrite], str | None],
        forge: str,
    ) -> None:
        super().__init__(WriteContext(client, repo, people, source_label, forge), forge, HANDLERS)

    def current(self, write: TargetWrite) -> CanonicalObject | None:
        return self.ctx.reader.one(write.object_type, write.target_identity or "")

    def find_created(self, write: TargetWrite) -> str | None:
        """The create found, and finished as its later requests would have: a failure
        finishing it leaves the write unknown, for the next look-up to finish."""
        found = find_created(self.ctx, write)
        if found is not None:
            self._finish_create(write, found)
        return found

    def _finish_create(self, write: TargetWrite, identity: str) -> None:
        """What a create's later requests would have done (all idempotent): a placeholder
        taken over gets its labels and state, an attachment its kept type."""
        ctx, payload = self.ctx, write.payload or {}
        if write.object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST) and identity.isdigit():
            current = ctx.client.get(ctx.path(f"/issues/{identity}"))
            issues.set_labels(ctx, int(identity), current, list(payload.get("labels") or []))
            wanted = payload.get("state")
            if wanted in ("open", "closed") and current.get("state") != wanted:
                ctx.client.write(
                    "PATCH", ctx.path(f"/issues/{identity}"), json_body={"state": wanted}
                )

    def representation(self, write: TargetWrite, identity: str) -> Representation | None:
        """How a create found after a lost response exists (its handler would have said
        so had the answer arrived)."""
        payload = write.payload or {}
        object_type = write.object_type
        if object_type is ObjectType.REVIEW_REQUEST:
            return Representation.PROJECTED
        if object_type is ObjectType.REVIEW:
            if identity.startswith("comment-"):
                return Representation.PROJECTED
            return reviews.review_representation(self.ctx, write)
        if object_type is ObjectType.REVIEW_COMMENT:
            if identity.startswith("comment-"):
                return Representation.PROJECTED
            ref = write.refs.get("in_reply_to")
            if ref is None:
                return Representation.ATTRIBUTED
            return Representation.DETACHED_REPLY if ref.gone else Representation.REPLY_BY_LINE
        if object_type is ObjectType.ISSUE:
            return issues.issue_representation(payload)
        if object_type is ObjectType.PULL_REQUEST:
            carried = kind(self.ctx, int(identity)) == "carrier"
            return Representation.PROJECTED if carried else Representation.ATTRIBUTED
        if object_type in (ObjectType.ISSUE_COMMENT, ObjectType.RELEASE):
            return Representation.ATTRIBUTED
        return None
