"""One batch of writes to one GitHub repository, each sent to its family's handler.

The batch turns what GitHub answered into results: a rate limit defers this write and
the rest of the batch (nothing of the rest was sent; of this write, a create that takes
several requests may have landed its first, an issue created before its closing edit was
refused, which is why the pipeline looks a deferred create up by its marker before it
sends it again); a refusal is this write's alone; a
lost response is looked for at once (``markers.find_created``) and finished, or reported
``UNKNOWN``, never re-sent. Anything uncertain or refused makes the number allocator
count afresh (``forge.numbers``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from reposync.errors import Conflict, ContentUnavailable, RateLimited, ResultUnknown, WriteRefused
from reposync.providers.base import ApplyResult, ItemError, TargetWrite, WriteStatus
from reposync.providers.forge.attribution import ATTRIBUTED_FIELDS
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.reads import read_one
from reposync.providers.github.writes import (
    issues,
    labels,
    milestones,
    pulls,
    releases,
    review_requests,
    reviews,
)
from reposync.providers.github.writes.carriers import kind
from reposync.providers.github.writes.context import Handlers, WriteContext
from reposync.providers.github.writes.markers import find_created
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)

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


class GitHubWriter:
    """Applies one batch of writes for one repository (keeps per-batch caches)."""

    def __init__(
        self,
        client: GitHubClient,
        repo: str,
        uploads_url: str,
        source_label: Callable[[TargetWrite], str | None],
    ) -> None:
        self.ctx = WriteContext(client, repo, uploads_url, source_label)

    def apply(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        results: list[ApplyResult] = []
        for index, write in enumerate(writes):
            try:
                results.append(self._one(write))
            except RateLimited as limited:
                # Nothing of this write was sent: it and the rest wait for retry_at.
                results.extend(
                    ApplyResult(
                        w.item_id,
                        WriteStatus.DEFERRED,
                        error=ItemError.of(limited),
                        retry_at=limited.retry_at,
                    )
                    for w in writes[index:]
                )
                break
            except ContentUnavailable as unreadable:  # the source's bytes: this write only
                results.append(
                    ApplyResult(
                        write.item_id,
                        WriteStatus.REFUSED,
                        error=ItemError.of(unreadable),
                    )
                )
            except ResultUnknown as unknown:
                # A create may have taken a number we did not see: count afresh before
                # the next number is allocated (a stale count shifts every later one).
                self.ctx.numbers.forget()
                results.append(self._recover(write, unknown))
            except WriteRefused as refused:
                self.ctx.numbers.forget()  # a multi-request create may have stopped midway
                code = refused.refusal
                if code == "not_found" and write.action is Action.CREATE:
                    code = "dependency_missing"  # a create 404s only on what it hangs on
                results.append(
                    ApplyResult(
                        write.item_id, WriteStatus.REFUSED, error=ItemError(code, refused.message)
                    )
                )
        return results

    def _one(self, write: TargetWrite) -> ApplyResult:
        handler = HANDLERS.get((write.action, write.object_type))
        if handler is None:
            return ApplyResult(
                write.item_id,
                WriteStatus.REFUSED,
                error=ItemError(
                    "unsupported", f"GitHub cannot {write.action.value} a {write.object_type.value}"
                ),
            )
        if write.action is not Action.CREATE and write.expected_hash is not None:
            current = self._current_hash(write)
            if current is not None and current != write.expected_hash:
                return ApplyResult(
                    write.item_id,
                    WriteStatus.REFUSED,
                    error=ItemError(
                        Conflict.code,
                        f"{write.object_type.value} {write.target_identity} changed on "
                        "GitHub since it was planned",
                    ),
                )
        identity, representation = handler(self.ctx, write)
        if write.action is Action.CREATE:
            self.ctx.created[write.marker] = identity
        return ApplyResult(
            write.item_id, WriteStatus.OK, target_identity=identity, representation=representation
        )

    def _current_hash(self, write: TargetWrite) -> str | None:
        obj = read_one(
            self.ctx.client, self.ctx.repo, write.object_type, write.target_identity or ""
        )
        return obj.content_hash if obj is not None else None

    def _recover(self, write: TargetWrite, unknown: ResultUnknown) -> ApplyResult:
        """A lost response: find what was created (marker, natural key) and finish it, or
        say unknown. A create is several requests for some types (create, then close):
        the found object gets the remaining ones, which are idempotent."""
        if write.action is Action.CREATE:
            try:
                found = find_created(self.ctx, write)
            except Exception:  # the look-up failing must not hide the unknown write
                log.exception("looking for %s after a lost response failed", write.marker)
                found = None
            if found is not None:
                self._finish_create(write, found)
                self.ctx.created[write.marker] = found
                return ApplyResult(
                    write.item_id,
                    WriteStatus.OK,
                    target_identity=found,
                    representation=_representation(write),
                )
        return ApplyResult(write.item_id, WriteStatus.UNKNOWN, error=ItemError.of(unknown))

    def _finish_create(self, write: TargetWrite, identity: str) -> None:
        """The requests a create sends after its first one (all idempotent)."""
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
