"""One batch of writes to one Forgejo repository, each sent to its family's handler.

The batch turns what Forgejo answered into results: a rate limit (a proxy's: Forgejo has
none of its own) defers this write and the rest of the batch; a refusal is this write's
alone; a lost response is looked for at once (``markers.find_created``) and finished, or
reported ``UNKNOWN``, never re-sent. Anything uncertain or refused makes the number
allocator count afresh (``forge.numbers``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from reposync.errors import (
    Conflict,
    ContentUnavailable,
    ObjectNotFound,
    RateLimited,
    ResultUnknown,
    WriteRefused,
)
from reposync.providers.base import ApplyResult, ItemError, TargetWrite, WriteStatus
from reposync.providers.forgejo.accounts import People
from reposync.providers.forgejo.client import ForgejoClient
from reposync.providers.forgejo.writes import (
    issues,
    labels,
    pulls,
    releases,
    review_requests,
    reviews,
)
from reposync.providers.forgejo.writes.carriers import kind
from reposync.providers.forgejo.writes.context import Handlers, WriteContext
from reposync.providers.forgejo.writes.markers import find_created
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)

#: Every (action, type) Forgejo can write; any other pair is refused ``unsupported``.
HANDLERS: Handlers = {
    **labels.HANDLERS,
    **issues.HANDLERS,
    **pulls.HANDLERS,
    **reviews.HANDLERS,
    **review_requests.HANDLERS,
    **releases.HANDLERS,
}


class ForgejoWriter:
    """Applies one batch of writes for one repository (keeps per-batch caches)."""

    def __init__(
        self,
        client: ForgejoClient,
        repo: str,
        people: People,
        source_label: Callable[[TargetWrite], str | None],
        forge: str,
    ) -> None:
        self.ctx = WriteContext(client, repo, people, source_label, forge)

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
                    ApplyResult(write.item_id, WriteStatus.REFUSED, error=ItemError.of(unreadable))
                )
            except ResultUnknown as unknown:
                self.ctx.numbers.forget()
                results.append(self._recover(write, unknown))
            except (WriteRefused, ObjectNotFound) as refused:
                self.ctx.numbers.forget()  # a create of several requests may have stopped
                code = refused.refusal if isinstance(refused, WriteRefused) else "not_found"
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
        forge = self.ctx.forge
        if handler is None:
            return ApplyResult(
                write.item_id,
                WriteStatus.REFUSED,
                error=ItemError(
                    "unsupported",
                    f"{forge} cannot {write.action.value} a {write.object_type.value}",
                ),
            )
        if write.action is not Action.CREATE and write.expected_hash is not None:
            current = self.ctx.reader.one(write.object_type, write.target_identity or "")
            if current is not None and current.content_hash != write.expected_hash:
                return ApplyResult(
                    write.item_id,
                    WriteStatus.REFUSED,
                    error=ItemError(
                        Conflict.code,
                        f"{write.object_type.value} {write.target_identity} changed on "
                        f"{forge} since it was planned",
                    ),
                )
        identity, representation = handler(self.ctx, write)
        if write.action is Action.CREATE:
            self.ctx.created[write.marker] = identity
        return ApplyResult(
            write.item_id, WriteStatus.OK, target_identity=identity, representation=representation
        )

    def _recover(self, write: TargetWrite, unknown: ResultUnknown) -> ApplyResult:
        """A lost response: find what was created (marker, natural key) and finish it, or
        say unknown."""
        if write.action is Action.CREATE:
            try:
                found = find_created(self.ctx, write)
                if found is not None:
                    self._finish_create(write, found)
            except Exception:  # the look-up failing must not hide the unknown write
                log.exception("looking for %s after a lost response failed", write.marker)
                found = None
            if found is not None:
                self.ctx.created[write.marker] = found
                return ApplyResult(
                    write.item_id,
                    WriteStatus.OK,
                    target_identity=found,
                    representation=self._representation(write, found),
                )
        return ApplyResult(write.item_id, WriteStatus.UNKNOWN, error=ItemError.of(unknown))

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

    def _representation(self, write: TargetWrite, identity: str) -> Representation | None:
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
