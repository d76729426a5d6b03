"""One batch of writes to one GitHub repository, each sent to its family's handler
(``forge.batch`` turns the answers into results). Some creates take several requests
(create, then close): an issue created before its closing edit was refused is why the
pipeline looks a deferred create up by its marker before it sends it again, and a create
found after a lost response gets the remaining ones.
"""

from __future__ import annotations

from collections.abc import Callable

from reposync.providers.base import TargetWrite
from reposync.providers.forge import review_requests
from reposync.providers.forge.attribution import ATTRIBUTED_FIELDS
from reposync.providers.forge.batch import ForgeWriter
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.reads import read_one
from reposync.providers.github.writes import (
    issues,
    labels,
    milestones,
    pulls,
    releases,
    reviews,
)
from reposync.providers.github.writes.carriers import kind
from reposync.providers.github.writes.context import FORGE, Handlers, WriteContext
from reposync.providers.github.writes.markers import find_created
from reposync.sync.canonical import CanonicalObject
from reposync.sync.vocabulary import ObjectType, Representation

#: Every (action, type) GitHub can write; any other pair is refused ``unsupported``.
HANDLERS: Handlers = {
    **labels.HANDLERS,
    **milestones.HANDLERS,
    **issues.HANDLERS,
    **pulls.HANDLERS,
    **reviews.HANDLERS,
    **review_requests.HANDLERS,
    **releases.HANDLERS,
}


class GitHubWriter(ForgeWriter[WriteContext]):
    """Applies one batch of writes for one repository (keeps per-batch caches)."""

    def __init__(
        self,
        client: GitHubClient,
        repo: str,
        uploads_url: str,
        source_label: Callable[[TargetWrite], str | None],
    ) -> None:
        super().__init__(WriteContext(client, repo, uploads_url, source_label), FORGE, HANDLERS)

    def current(self, write: TargetWrite) -> CanonicalObject | None:
        return read_one(
            self.ctx.client, self.ctx.repo, write.object_type, write.target_identity or ""
        )

    def find_created(self, write: TargetWrite) -> str | None:
        return find_created(self.ctx, write)

    def finish_create(self, write: TargetWrite, identity: str) -> None:
        """A create is several requests for some types (create, then close): the found
        object gets the remaining ones."""
        ctx = self.ctx
        payload = write.payload or {}
        if write.object_type is ObjectType.REVIEW and "/" in identity:
            reviews.submit_if_pending(ctx, identity)
            return
        if write.object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
            number = int(identity)
            if kind(ctx, number) == "pull":
                fields = issues.issue_fields(ctx, payload)
                del fields["title"]
                ctx.client.write("PATCH", ctx.path(f"/issues/{number}"), json_body=fields)
            issues.close_if(ctx, number, payload)
            if write.object_type is ObjectType.ISSUE:
                issues.lock_as(ctx, number, payload)

    def representation(self, write: TargetWrite, identity: str) -> Representation | None:
        return _representation(write)


def _representation(write: TargetWrite) -> Representation | None:
    """How a create found after a lost response exists on GitHub (its handler would
    have said so had the answer arrived)."""
    if write.object_type is ObjectType.REVIEW_REQUEST:
        return Representation.PROJECTED
    if write.object_type is ObjectType.REVIEW:
        return reviews.review_representation(write)
    if write.object_type is ObjectType.MILESTONE:
        return milestones.milestone_representation(write.payload or {})
    if write.object_type is ObjectType.RELEASE_ASSET:
        return releases.asset_representation(write.payload or {})
    if write.object_type in ATTRIBUTED_FIELDS:
        return Representation.ATTRIBUTED
    return None
