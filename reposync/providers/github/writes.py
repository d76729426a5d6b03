"""Canonical writes as GitHub requests.

What GitHub cannot hold natively is written so it reads back exactly:

* authorship and timestamps go into an attributed header (``bodies.compose``);
* a pull request that cannot be re-created (merged, closed, or its head branch is not
  on GitHub at its head commit) becomes a closed-or-open **issue carrier** whose header
  keeps every pull request field; reviews and review comments on a carrier become
  comments carrying theirs;
* issue and pull request numbers are kept on an empty standby by creating in number
  order and filling gaps with closed **placeholder** issues, which a later create of
  that number takes over (a pull request converts its placeholder with ``issue``);
* a create whose response is lost is looked for at once (marker, or the natural key of
  labels, milestones and assets) and otherwise reported ``UNKNOWN``, never re-sent.

Not split yet: issue 11 gives the local forge the shape GitHub's provider has
(client, reads, writes, objects); this writer then splits the same way, by family
(numbers and issues, pull requests and reviews, releases and assets).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from reposync.errors import (
    Conflict,
    ContentUnavailable,
    ObjectNotFound,
    ProviderUnavailable,
    RateLimited,
    ResultUnknown,
    WriteRefused,
)
from reposync.providers.base import ApplyResult, TargetWrite, WriteStatus
from reposync.providers.github import objects as gh
from reposync.providers.github import shapes
from reposync.providers.github.bodies import compose, parse
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.reads import PLACEHOLDER_MARKER, read_one
from reposync.sync.canonical import BRANCH_PREFIX, content_hash, shadow_ref
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)

PLACEHOLDER_TITLE = "reposync placeholder"
#: Newest objects scanned when looking for a marker after a lost response.
MARKER_SCAN_PAGES = 5

#: Fields GitHub's API cannot set, per type: they travel in the attributed header.
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
#: A carrier issue keeps every pull request field GitHub's issue cannot.
CARRIER_FIELDS = (
    "author",
    "created_at",
    "closed_at",
    "assignees",
    "merged",
    "merged_at",
    "draft",
    "base_ref",
    "base_sha",
    "head_ref",
    "head_sha",
)

UNDELETABLE = frozenset({ObjectType.ISSUE, ObjectType.PULL_REQUEST})

#: Review states GitHub cannot give a review the sync creates (its account would be
#: approving, requesting changes, or holding a draft): submitted as a comment, the header
#: keeping the state and saying so (``state_as_comment``).
REVIEW_STATE_NOTES = {
    "APPROVED": "approved on the source; shown as a comment: GitHub would count an "
    "approval by the sync's account",
    "CHANGES_REQUESTED": "requested changes on the source; shown as a comment: GitHub "
    "would block merging on the sync's account",
    "DISMISSED": "a dismissed review on the source; shown as a comment: GitHub dismisses "
    "only approvals and change requests",
    "PENDING": "pending on the source (a draft its author had not submitted); shown as "
    "a comment: a pending review on GitHub is the sync's own draft",
}
#: Header fields of a review comment GitHub placed elsewhere than the source had it:
#: ``review`` (the review it belongs to, when GitHub opened another one for it) and
#: ``in_reply_to`` (the comment it answered, when GitHub threads it to the root, or
#: ``GONE_COMMENT`` when the source's was deleted). Reads restore both.
PLACEMENT_FIELDS = ("review", "in_reply_to")
#: What a reply answers when the source's comment is gone (as a local forge keeps it).
GONE_COMMENT = "deleted"


def _placement_representation(extra: Mapping[str, Any]) -> Representation:
    if extra.get("in_reply_to") == GONE_COMMENT:
        return Representation.DETACHED_REPLY
    if extra.get("in_reply_to") is not None:
        return Representation.REPLY_TO_ROOT
    if extra.get("review") is not None:
        return Representation.OWN_REVIEW
    return Representation.ATTRIBUTED


def _placement_note(extra: Mapping[str, Any]) -> str | None:
    """The visible part of ``PLACEMENT_FIELDS``: what GitHub shows differently."""
    replied = extra.get("in_reply_to")
    if replied == GONE_COMMENT:
        return "in reply to a comment deleted on the source; shown as a comment of its own"
    if replied is not None:
        return (
            f"in reply to comment {replied}; GitHub threads replies to the first comment "
            "of a thread"
        )
    if extra.get("review") is not None:
        return f"part of review {extra['review']}; GitHub opened a review of its own for it"
    return None


class GitHubWriter:
    """Applies one batch of writes for one repository (keeps per-batch caches)."""

    def __init__(
        self,
        client: GitHubClient,
        repo: str,
        uploads_url: str,
        source_label: Callable[[TargetWrite], str | None],
    ) -> None:
        self.client = client
        self.repo = repo  # "owner/name"
        self.uploads_url = uploads_url.rstrip("/")
        self.source_label = source_label
        self._next_number: int | None = None
        self._milestones: dict[str, int] | None = None
        self._labels: dict[str, str] | None = None  # id -> name
        self._kinds: dict[int, str] = {}  # number -> "pull" | "carrier" | "issue"
        #: Marker -> identity of what this batch created (references within a batch).
        self._created: dict[str, str] = {}

    # -- the batch ----------------------------------------------------------------------

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
                        error_code="rate_limited",
                        message=limited.message,
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
                        error_code=unreadable.code,
                        message=unreadable.message,
                    )
                )
            except ResultUnknown as unknown:
                # A create may have taken a number we did not see: count afresh before
                # the next number is allocated (a stale count shifts every later one).
                self._next_number = None
                results.append(self._recover(write, unknown))
            except WriteRefused as refused:
                self._next_number = None  # a multi-request create may have stopped midway
                code = refused.refusal
                if code == "not_found" and write.action is Action.CREATE:
                    code = "dependency_missing"  # a create 404s only on what it hangs on
                results.append(
                    ApplyResult(
                        write.item_id, WriteStatus.REFUSED, error_code=code, message=refused.message
                    )
                )
        return results

    def _one(self, write: TargetWrite) -> ApplyResult:
        handler = getattr(self, f"_{write.action.value}_{write.object_type.value}", None)
        if handler is None:
            return ApplyResult(
                write.item_id,
                WriteStatus.REFUSED,
                error_code="unsupported",
                message=f"GitHub cannot {write.action.value} a {write.object_type.value}",
            )
        if write.action is not Action.CREATE and write.expected_hash is not None:
            current = self._current_hash(write)
            if current is not None and current != write.expected_hash:
                return ApplyResult(
                    write.item_id,
                    WriteStatus.REFUSED,
                    error_code="conflict",
                    message=f"{write.object_type.value} {write.target_identity} changed on "
                    "GitHub since it was planned",
                )
        identity, representation = handler(write)
        if write.action is Action.CREATE:
            self._created[write.marker] = identity
        return ApplyResult(
            write.item_id, WriteStatus.OK, target_identity=identity, representation=representation
        )

    def _recover(self, write: TargetWrite, unknown: ResultUnknown) -> ApplyResult:
        """A lost response: find what was created (marker, natural key) and finish it, or
        say unknown. A create is several requests for some types (create, then close):
        the found object gets the remaining ones, which are idempotent."""
        if write.action is Action.CREATE:
            try:
                found = self.find(write)
            except Exception:  # the look-up failing must not hide the unknown write
                log.exception("looking for %s after a lost response failed", write.marker)
                found = None
            if found is not None:
                self._finish_create(write, found)
                self._created[write.marker] = found
                return ApplyResult(
                    write.item_id,
                    WriteStatus.OK,
                    target_identity=found,
                    representation=self._representation(write),
                )
        return ApplyResult(
            write.item_id, WriteStatus.UNKNOWN, error_code="result_unknown", message=unknown.message
        )

    def _finish_create(self, write: TargetWrite, identity: str) -> None:
        """The requests a create sends after its first one (all idempotent)."""
        payload = write.payload or {}
        if write.object_type is ObjectType.REVIEW and "/" in identity:
            self._submit_if_pending(identity)
            return
        if write.object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
            number = int(identity)
            if self._kind(number) == "pull":
                fields = self._issue_fields(payload)
                del fields["title"]
                self.client.write("PATCH", self._path(f"/issues/{number}"), json_body=fields)
            self._close_if(number, payload)
            if write.object_type is ObjectType.ISSUE:
                self._lock_as(number, payload)

    # -- helpers ------------------------------------------------------------------------

    def _path(self, suffix: str) -> str:
        return f"/repos/{self.repo}{suffix}"

    def _body(
        self, write: TargetWrite, kind: ObjectType, extra: Mapping[str, Any] | None = None
    ) -> str:
        payload = write.payload or {}
        attribution = {key: payload.get(key) for key in ATTRIBUTED_FIELDS.get(kind, ())}
        attribution.update(extra or {})
        return compose(
            payload.get("body") or "",
            marker=write.marker,
            attribution=attribution or None,
            source_label=self.source_label(write),
        )

    def _representation(self, write: TargetWrite) -> Representation | None:
        if write.object_type is ObjectType.REVIEW_REQUEST:
            return Representation.PROJECTED
        if write.object_type is ObjectType.REVIEW:
            return self._review_representation(write)
        if write.object_type is ObjectType.MILESTONE:
            return self._milestone_representation(write.payload or {})
        if write.object_type is ObjectType.RELEASE_ASSET:
            name = str((write.payload or {}).get("name") or "")
            return Representation.RENAMED if shapes.asset_name(name) != name else None
        if write.object_type in ATTRIBUTED_FIELDS:
            return Representation.ATTRIBUTED
        return None

    def _milestone_number(self, title: str | None) -> int | None:
        if title is None:
            return None
        if self._milestones is None:
            self._milestones = {
                m["title"]: m["number"]
                for m in self.client.paginate(self._path("/milestones"), {"state": "all"})
            }
        if title not in self._milestones:
            raise WriteRefused(
                f"milestone {title!r} is not on GitHub", refusal="dependency_missing", status=422
            )
        return self._milestones[title]

    def _issue_fields(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "title": payload["title"],
            "labels": list(payload.get("labels") or []),
            "milestone": self._milestone_number(payload.get("milestone")),
        }

    def _number(self, ref_identity: str | None) -> int:
        if ref_identity is None:
            raise WriteRefused(
                "the parent is not on GitHub yet", refusal="dependency_missing", status=422
            )
        return int(ref_identity)

    def _ref(self, write: TargetWrite, name: str) -> str | None:
        """A reference's target identity: from the links, or created earlier in this batch."""
        ref = write.refs.get(name)
        if ref is None:
            return None
        return ref.identity or self._created.get(ref.marker)

    def _parent(self, write: TargetWrite) -> str | None:
        return self._ref(write, "parent")

    def _current_hash(self, write: TargetWrite) -> str | None:
        obj = read_one(self.client, self.repo, write.object_type, write.target_identity or "")
        return obj.content_hash if obj is not None else None

    # -- numbers and placeholders -------------------------------------------------------

    def _highest_number(self) -> int:
        if self._next_number is None:
            newest = self.client.get(
                self._path("/issues"),
                {"state": "all", "sort": "created", "direction": "desc", "per_page": 1},
            )
            self._next_number = (newest[0]["number"] if newest else 0) + 1
        return self._next_number - 1

    def _placeholder_at(self, number: int) -> bool:
        """Whether ``number`` is one of our placeholders, free to take over.

        Only a 404 means "no": any other failure propagates (retryably), since treating
        it as "no placeholder" would create a new issue under the next free number.
        """
        try:
            data = self.client.get(self._path(f"/issues/{number}"))
        except ObjectNotFound:
            return False
        return (parse(data.get("body")).marker or "").startswith(PLACEHOLDER_MARKER)

    def _fill_gaps_before(self, number: int) -> None:
        """Closed placeholders up to ``number - 1``, so the next create gets ``number``."""
        while self._highest_number() + 1 < number:
            gap = self._highest_number() + 1
            try:
                created = self.client.write(
                    "POST",
                    self._path("/issues"),
                    json_body={
                        "title": PLACEHOLDER_TITLE,
                        "body": compose(
                            "Kept free for a number of the source repository.",
                            marker=f"{PLACEHOLDER_MARKER}{gap}",
                        ),
                    },
                )
                taken = int(created["number"])
            except ResultUnknown as unknown:
                # Count again: the placeholder is there (close it) or it is not, and then
                # the stage is tried again later (nothing of this item was sent).
                self._next_number = None
                if self._highest_number() < gap or not self._placeholder_at(gap):
                    raise ProviderUnavailable(
                        f"GitHub lost the response to the placeholder for #{gap} and it is "
                        "not there; trying again"
                    ) from unknown
                taken = gap
            self.client.write(
                "PATCH",
                self._path(f"/issues/{taken}"),
                json_body={"state": "closed", "state_reason": "not_planned"},
            )
            self._next_number = taken + 1

    def _numbered_slot(self, number: int | None) -> int | None:
        """The placeholder to take over for ``number``, after filling any gap before it."""
        if number is None:
            return None
        if number > self._highest_number():
            self._fill_gaps_before(number)
            return None
        return number if self._placeholder_at(number) else None

    def _created_number(self, number: int) -> None:
        self._next_number = max(self._next_number or 0, number + 1)

    # -- labels and milestones ----------------------------------------------------------

    def _label_name(self, identity: str) -> str:
        if self._labels is None or identity not in self._labels:
            self._labels = {
                str(lb["id"]): lb["name"] for lb in self.client.paginate(self._path("/labels"))
            }
        if identity not in self._labels:
            raise WriteRefused(
                f"label {identity} is not on GitHub", refusal="not_found", status=404
            )
        return self._labels[identity]

    def _create_label(self, write: TargetWrite) -> tuple[str, None]:
        payload = write.payload or {}
        body = {
            "name": payload["name"],
            "color": payload["color"],
            "description": payload["description"],
        }
        try:
            created = self.client.write("POST", self._path("/labels"), json_body=body)
        except WriteRefused as refused:
            existing = (
                self._label_by_name(payload["name"]) if refused.refusal == "conflict" else None
            )
            if existing is not None and content_hash(gh.label(existing).payload) == content_hash(
                dict(payload)
            ):
                return str(existing["id"]), None  # ours already (a retried create)
            raise
        return str(created["id"]), None

    def _label_by_name(self, name: str) -> dict[str, Any] | None:
        try:
            return self.client.get(self._path(f"/labels/{quote(name, safe='')}"))
        except Exception:
            return None

    def _update_label(self, write: TargetWrite) -> tuple[str, None]:
        payload = write.payload or {}
        name = self._label_name(write.target_identity or "")
        self.client.write(
            "PATCH",
            self._path(f"/labels/{quote(name, safe='')}"),
            json_body={
                "new_name": payload["name"],
                "color": payload["color"],
                "description": payload["description"],
            },
        )
        return write.target_identity or "", None

    def _delete_label(self, write: TargetWrite) -> tuple[str, None]:
        name = self._label_name(write.target_identity or "")
        self.client.write("DELETE", self._path(f"/labels/{quote(name, safe='')}"))
        return write.target_identity or "", None

    def _milestone_body(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A due time GitHub cannot keep (it keeps the day: ``shapes``) is sent as is (GitHub
        takes its day) and kept exactly in a header of the description."""
        due = payload.get("due_on")
        description = payload["description"]
        if not shapes.keeps_due(due):
            description = compose(
                description,
                marker=None,
                attribution={"due_on": due},
                headline=f"Due {due} on the source; GitHub keeps the day only",
            )
        body = {"title": payload["title"], "state": payload["state"], "description": description}
        if due:
            body["due_on"] = due
        return body

    @staticmethod
    def _milestone_representation(payload: Mapping[str, Any]) -> Representation | None:
        return None if shapes.keeps_due(payload.get("due_on")) else Representation.DUE_DAY_ONLY

    def _create_milestone(self, write: TargetWrite) -> tuple[str, Representation | None]:
        payload = write.payload or {}
        try:
            created = self.client.write(
                "POST", self._path("/milestones"), json_body=self._milestone_body(payload)
            )
        except WriteRefused as refused:
            if refused.refusal != "conflict":
                raise
            for existing in self.client.paginate(self._path("/milestones"), {"state": "all"}):
                if existing["title"] == payload["title"] and gh.milestone(
                    existing
                ).content_hash == content_hash(dict(payload)):
                    return str(existing["number"]), self._milestone_representation(payload)
            raise
        return str(created["number"]), self._milestone_representation(payload)

    def _update_milestone(self, write: TargetWrite) -> tuple[str, Representation | None]:
        if (write.payload or {}).get("due_on") is None:
            try:
                current = self.client.get(self._path(f"/milestones/{write.target_identity}"))
            except ObjectNotFound as exc:
                raise WriteRefused(str(exc), refusal="not_found", status=404) from exc
            if current.get("due_on"):
                raise WriteRefused(
                    "GitHub's API cannot clear a milestone's due date; clear it on GitHub",
                    refusal="unsupported",
                    status=422,
                )
        self.client.write(
            "PATCH",
            self._path(f"/milestones/{write.target_identity}"),
            json_body=self._milestone_body(write.payload or {}),
        )
        return write.target_identity or "", self._milestone_representation(write.payload or {})

    def _delete_milestone(self, write: TargetWrite) -> tuple[str, None]:
        self.client.write("DELETE", self._path(f"/milestones/{write.target_identity}"))
        return write.target_identity or "", None

    # -- issues -------------------------------------------------------------------------

    def _create_issue(self, write: TargetWrite) -> tuple[str, Representation]:
        payload = write.payload or {}
        fields = {**self._issue_fields(payload), "body": self._body(write, ObjectType.ISSUE)}
        number = self._take_or_create(write.number, fields)
        self._close_if(number, payload)
        self._lock_as(number, payload, fresh=True)
        self._kinds[number] = "issue"
        return str(number), Representation.ATTRIBUTED

    def _lock_as(
        self,
        number: int,
        payload: Mapping[str, Any],
        *,
        fresh: bool = False,
        current: Mapping[str, Any] | None = None,
    ) -> None:
        """Locks or unlocks the conversation as the payload has it (PUT/DELETE /lock).

        A ``fresh`` issue (just created, or a placeholder taken over) is unlocked; for any
        other the ``current`` issue JSON (an edit's answer) or a read of it (a conditional
        GET) says whether anything is to do, so an unchanged lock costs no write.
        Another reason is an unlock, then a lock with it (GitHub changes a reason only
        on a locked conversation's lock page, so the API way is both steps).
        """
        want = bool(payload.get("locked"))
        reason = payload.get("active_lock_reason") if want else None
        if fresh and not want:
            return
        if fresh:
            current = {}
        elif current is None or "locked" not in current:
            current = self.client.get(self._path(f"/issues/{number}"))
        locked = bool(current.get("locked"))
        if locked == want and (not want or current.get("active_lock_reason") == reason):
            return
        path = self._path(f"/issues/{number}/lock")
        if locked:
            self.client.write("DELETE", path, creates_content=False)
        if want:
            body = {"lock_reason": reason} if reason is not None else None
            self.client.write("PUT", path, json_body=body, creates_content=False)

    def _take_or_create(self, wanted: int | None, fields: dict[str, Any]) -> int:
        slot = self._numbered_slot(wanted)
        if slot is not None:
            self.client.write(
                "PATCH", self._path(f"/issues/{slot}"), json_body={**fields, "state": "open"}
            )
            return slot
        created = self.client.write("POST", self._path("/issues"), json_body=fields)
        self._created_number(created["number"])
        return int(created["number"])

    def _close_if(self, number: int, payload: Mapping[str, Any]) -> None:
        if payload.get("state") == "closed":
            body: dict[str, Any] = {"state": "closed"}
            if payload.get("state_reason") in ("completed", "not_planned"):
                body["state_reason"] = payload["state_reason"]
            self.client.write("PATCH", self._path(f"/issues/{number}"), json_body=body)

    def _update_issue(self, write: TargetWrite) -> tuple[str, Representation]:
        payload = write.payload or {}
        body: dict[str, Any] = {
            **self._issue_fields(payload),
            "body": self._body(write, ObjectType.ISSUE),
            "state": payload["state"],
        }
        if payload.get("state_reason") in ("completed", "not_planned", "reopened"):
            body["state_reason"] = payload["state_reason"]
        edited = self.client.write(
            "PATCH", self._path(f"/issues/{write.target_identity}"), json_body=body
        )
        self._lock_as(int(write.target_identity or 0), payload, current=edited)
        return write.target_identity or "", Representation.ATTRIBUTED

    # -- pull requests ------------------------------------------------------------------

    def _native_head(self, write: TargetWrite) -> str | None:
        """The branch an open pull request can be opened on: its head, or its shadow.

        ``None`` when GitHub cannot hold it as a pull request (merged, closed, or its
        head commit is on no branch here): it becomes a carrier.
        """
        payload = write.payload or {}
        if payload.get("state") != "open" or payload.get("merged"):
            return None
        candidates = [payload["head_ref"]]
        if write.number is not None:  # the source's shadow branch, pushed in the refs phase
            candidates.append(shadow_ref(write.number).removeprefix(BRANCH_PREFIX))
        for branch in candidates:
            try:
                refs = self.client.get(
                    self._path(f"/git/matching-refs/heads/{quote(branch, safe='/')}")
                )
            except (ObjectNotFound, Conflict):  # no such ref, an empty repository
                continue
            wanted = BRANCH_PREFIX + branch
            if any(
                r.get("ref") == wanted and r.get("object", {}).get("sha") == payload["head_sha"]
                for r in refs
            ):
                return branch
        return None

    def _create_pull_request(self, write: TargetWrite) -> tuple[str, Representation]:
        payload = write.payload or {}
        head = self._native_head(write)
        if head is None:
            return self._create_carrier(write)
        slot = self._numbered_slot(write.number)
        body = self._body(write, ObjectType.PULL_REQUEST)
        request: dict[str, Any] = {
            "head": head,
            "base": payload["base_ref"],
            "draft": bool(payload.get("draft")),
        }
        if slot is not None:
            request["issue"] = slot
        else:
            request.update(title=payload["title"], body=body)
        try:
            created = self.client.write("POST", self._path("/pulls"), json_body=request)
        except WriteRefused as refused:
            if refused.status != 422:
                raise
            # GitHub validates what the branch check cannot see ("No commits between",
            # a pull request already open on the head); nothing was created: carry it.
            log.info("pull request #%s cannot be opened natively: %s", write.number, refused)
            return self._create_carrier(write)
        number = int(created["number"])
        self._created_number(number)
        if slot is not None:
            self.client.write(
                "PATCH",
                self._path(f"/pulls/{number}"),
                json_body={"title": payload["title"], "body": body},
            )
        extra = self._issue_fields(payload)
        del extra["title"]
        if extra["labels"] or extra["milestone"] is not None:
            self.client.write("PATCH", self._path(f"/issues/{number}"), json_body=extra)
        self._kinds[number] = "pull"
        return str(number), Representation.ATTRIBUTED

    def _create_carrier(self, write: TargetWrite) -> tuple[str, Representation]:
        payload = write.payload or {}
        extra = {key: payload.get(key) for key in CARRIER_FIELDS}
        extra[gh.CARRIED_TYPE] = ObjectType.PULL_REQUEST.value
        fields = {
            **self._issue_fields(payload),
            "body": self._body(write, ObjectType.ISSUE_COMMENT, extra),
        }
        number = self._take_or_create(write.number, fields)
        if payload.get("state") == "closed":
            self.client.write(
                "PATCH", self._path(f"/issues/{number}"), json_body={"state": "closed"}
            )
        self._kinds[number] = "carrier"
        return str(number), Representation.PROJECTED

    def _kind(self, number: int) -> str:
        if number not in self._kinds:
            data = self.client.get(self._path(f"/issues/{number}"))
            self._kinds[number] = (
                "pull" if "pull_request" in data else "carrier" if gh.is_carrier(data) else "issue"
            )
        return self._kinds[number]

    def _update_pull_request(self, write: TargetWrite) -> tuple[str, Representation]:
        payload = write.payload or {}
        number = self._number(write.target_identity)
        if self._kind(number) == "carrier":
            extra = {key: payload.get(key) for key in CARRIER_FIELDS}
            extra[gh.CARRIED_TYPE] = ObjectType.PULL_REQUEST.value
            self.client.write(
                "PATCH",
                self._path(f"/issues/{number}"),
                json_body={
                    **self._issue_fields(payload),
                    "state": payload["state"],
                    "body": self._body(write, ObjectType.ISSUE_COMMENT, extra),
                },
            )
            return str(number), Representation.PROJECTED
        self.client.write(
            "PATCH",
            self._path(f"/pulls/{number}"),
            json_body={
                "title": payload["title"],
                "body": self._body(write, ObjectType.PULL_REQUEST),
                "state": payload["state"],
                "base": payload["base_ref"],
            },
        )
        fields = self._issue_fields(payload)
        del fields["title"]
        self.client.write("PATCH", self._path(f"/issues/{number}"), json_body=fields)
        return str(number), Representation.ATTRIBUTED

    # -- comments -----------------------------------------------------------------------

    def _create_issue_comment(self, write: TargetWrite) -> tuple[str, Representation]:
        number = self._number(self._parent(write))
        created = self.client.write(
            "POST",
            self._path(f"/issues/{number}/comments"),
            json_body={"body": self._body(write, ObjectType.ISSUE_COMMENT)},
        )
        return str(created["id"]), Representation.ATTRIBUTED

    def _update_issue_comment(self, write: TargetWrite) -> tuple[str, Representation]:
        self.client.write(
            "PATCH",
            self._path(f"/issues/comments/{write.target_identity}"),
            json_body={"body": self._body(write, ObjectType.ISSUE_COMMENT)},
        )
        return write.target_identity or "", Representation.ATTRIBUTED

    def _delete_issue_comment(self, write: TargetWrite) -> tuple[str, None]:
        self.client.write("DELETE", self._path(f"/issues/comments/{write.target_identity}"))
        return write.target_identity or "", None

    # -- reviews ------------------------------------------------------------------------

    def _carried_comment(
        self, write: TargetWrite, number: int, kind: ObjectType, extra: Mapping[str, Any]
    ) -> str:
        payload = write.payload or {}
        attribution = {key: payload.get(key) for key in ATTRIBUTED_FIELDS[kind]}
        attribution.update(extra)
        attribution[gh.CARRIED_TYPE] = kind.value
        body = compose(
            payload.get("body") or "",
            marker=write.marker,
            attribution=attribution,
            source_label=self.source_label(write),
        )
        if write.target_identity:
            comment_id = write.target_identity.removeprefix("comment-")
            self.client.write(
                "PATCH", self._path(f"/issues/comments/{comment_id}"), json_body={"body": body}
            )
            return write.target_identity
        created = self.client.write(
            "POST", self._path(f"/issues/{number}/comments"), json_body={"body": body}
        )
        return f"comment-{created['id']}"

    def _review_body(self, write: TargetWrite) -> str:
        """A review's body: the header keeps every field, and says when GitHub shows the
        review in another state than the source's (see ``REVIEW_STATE_NOTES``)."""
        payload = write.payload or {}
        attribution = {key: payload.get(key) for key in ATTRIBUTED_FIELDS[ObjectType.REVIEW]}
        return compose(
            payload.get("body") or "",
            marker=write.marker,
            attribution=attribution,
            source_label=self.source_label(write),
            note=REVIEW_STATE_NOTES.get(str(payload.get("state"))),
        )

    @staticmethod
    def _review_representation(write: TargetWrite) -> Representation:
        state = str((write.payload or {}).get("state"))
        if state in REVIEW_STATE_NOTES:
            return Representation.STATE_AS_COMMENT
        return Representation.ATTRIBUTED

    def _inline(self, child: TargetWrite) -> dict[str, Any] | None:
        """A top-level line comment as create-review's ``comments[]`` takes it; ``None``
        for a file-level one (GitHub's create-review cannot take those)."""
        payload = child.payload or {}
        if payload.get("line") is None:
            return None
        return {
            "path": payload["path"],
            "line": payload["line"],
            "side": payload.get("side") or "RIGHT",
            "body": self._comment_body(child, {}),
        }

    def _create_review(self, write: TargetWrite) -> tuple[str, Representation]:
        """One review, whole: created pending with its top-level line comments, then
        submitted as a comment (GitHub records no approval, change request or dismissal
        by the sync's own account, and a pending review would be the sync's draft, which
        also blocks single comments on the pull request; the header keeps the state).

        Lost answers are settled by the marker in the review's body (``_finish_create``
        submits a review found pending). Should GitHub refuse the comments (their lines
        are not in its diff), the review is created without them and each comment's own
        item creates it alone, in a review of its own (``own_review``).
        """
        number = self._number(self._parent(write))
        if self._kind(number) != "pull":
            return (
                self._carried_comment(write, number, ObjectType.REVIEW, {}),
                Representation.PROJECTED,
            )
        payload = write.payload or {}
        comments = [c for c in map(self._inline, write.nested) if c is not None]
        request: dict[str, Any] = {"body": self._review_body(write), "comments": comments}
        if payload.get("commit_id"):
            request["commit_id"] = payload["commit_id"]
        try:
            created = self.client.write(
                "POST", self._path(f"/pulls/{number}/reviews"), json_body=request
            )
        except WriteRefused as refused:
            if refused.status != 422:
                raise
            # Nothing was created (a commit or a line GitHub cannot place): the review
            # alone, on the pull request's head; its comments follow one by one.
            log.info("review of #%s created without its comments: %s", number, refused)
            created = self.client.write(
                "POST",
                self._path(f"/pulls/{number}/reviews"),
                json_body={"body": request["body"]},
            )
        identity = f"{number}/{created['id']}"
        self._submit_if_pending(identity, created)
        return identity, self._review_representation(write)

    def _submit_if_pending(self, identity: str, data: dict[str, Any] | None = None) -> None:
        number, review_id = identity.split("/", 1)
        if data is None:
            data = self.client.get(self._path(f"/pulls/{number}/reviews/{review_id}"))
        if data.get("state") == "PENDING":
            self.client.write(
                "POST",
                self._path(f"/pulls/{number}/reviews/{review_id}/events"),
                json_body={"event": "COMMENT"},
            )

    def _update_review(self, write: TargetWrite) -> tuple[str, Representation]:
        identity = write.target_identity or ""
        if identity.startswith("comment-"):
            number = self._number(self._parent(write))
            return (
                self._carried_comment(write, number, ObjectType.REVIEW, {}),
                Representation.PROJECTED,
            )
        number, review_id = identity.split("/", 1)
        self.client.write(
            "PUT",
            self._path(f"/pulls/{number}/reviews/{review_id}"),
            json_body={"body": self._review_body(write)},
        )
        return identity, self._review_representation(write)

    # -- review comments ----------------------------------------------------------------

    def _comment_body(self, write: TargetWrite, extra: Mapping[str, Any]) -> str:
        """A review comment's body; ``extra`` (see ``_placement``) says where the source
        had it when GitHub put it elsewhere, in the header and in a visible note."""
        payload = write.payload or {}
        attribution = {
            key: payload.get(key) for key in ATTRIBUTED_FIELDS[ObjectType.REVIEW_COMMENT]
        }
        attribution.update(extra)
        return compose(
            payload.get("body") or "",
            marker=write.marker,
            attribution=attribution,
            source_label=self.source_label(write),
            note=_placement_note(extra),
        )

    def _create_review_comment(self, write: TargetWrite) -> tuple[str, Representation]:
        """A comment its review's create did not carry: a reply, a file-level comment, or
        one added to a review already on GitHub. GitHub opens a review for each, threads
        replies to the first comment, and knows no reply to a deleted comment; the
        header keeps the source's review and replied-to comment, and reads restore them.
        """
        payload = write.payload or {}
        review = self._parent(write)
        if review is None:
            raise WriteRefused(
                "the review is not on GitHub yet", refusal="dependency_missing", status=422
            )
        if review.startswith("comment-"):
            number = self._review_pull(write)
            return (
                self._carried_comment(
                    write, number, ObjectType.REVIEW_COMMENT, self._review_comment_extra(write)
                ),
                Representation.PROJECTED,
            )
        number = int(review.split("/", 1)[0])
        reply_ref = write.refs.get("in_reply_to")
        reply = self._ref(write, "in_reply_to")
        if reply_ref is not None and reply is None and not reply_ref.gone:
            raise WriteRefused(
                "the comment replied to is not on GitHub", refusal="dependency_missing", status=422
            )
        extra: dict[str, Any] = {"review": review}
        if reply is not None and not reply.startswith("comment-"):
            answered = self.client.get(self._path(f"/pulls/comments/{reply}"))
            if answered.get("in_reply_to_id") is not None:
                extra["in_reply_to"] = reply  # GitHub threads it to the root
            created = self.client.write(
                "POST",
                self._path(f"/pulls/{number}/comments/{reply}/replies"),
                json_body={"body": self._comment_body(write, extra)},
            )
        else:
            if reply_ref is not None:
                extra["in_reply_to"] = GONE_COMMENT
            request: dict[str, Any] = {
                "commit_id": payload["commit_id"],
                "path": payload["path"],
                "side": payload.get("side") or "RIGHT",
            }
            if payload.get("line") is not None:
                request["line"] = payload["line"]
            else:
                request["subject_type"] = "file"
            request["body"] = self._comment_body(write, extra)
            created = self.client.write(
                "POST", self._path(f"/pulls/{number}/comments"), json_body=request
            )
        return str(created["id"]), _placement_representation(extra)

    def _review_pull(self, write: TargetWrite) -> int:
        """The pull request (carrier) of a review that was carried in a comment."""
        review = (self._parent(write) or "").removeprefix("comment-")
        comment = self.client.get(self._path(f"/issues/comments/{review}"))
        return gh.parent_number(comment)

    def _review_comment_extra(self, write: TargetWrite) -> dict[str, Any]:
        payload = write.payload or {}
        return {
            "review": self._parent(write),
            "path": payload.get("path"),
            "line": payload.get("line"),
            "side": payload.get("side"),
            "in_reply_to": self._ref(write, "in_reply_to"),
        }

    def _update_review_comment(self, write: TargetWrite) -> tuple[str, Representation]:
        identity = write.target_identity or ""
        if identity.startswith("comment-"):
            return (
                self._carried_comment(
                    write, 0, ObjectType.REVIEW_COMMENT, self._review_comment_extra(write)
                ),
                Representation.PROJECTED,
            )
        # Where GitHub put it does not change with its text: keep what the header says.
        current = self.client.get(self._path(f"/pulls/comments/{identity}"))
        kept = parse(current.get("body")).attribution or {}
        extra = {key: kept[key] for key in PLACEMENT_FIELDS if key in kept}
        self.client.write(
            "PATCH",
            self._path(f"/pulls/comments/{identity}"),
            json_body={"body": self._comment_body(write, extra)},
        )
        return identity, _placement_representation(extra)

    def _delete_review_comment(self, write: TargetWrite) -> tuple[str, None]:
        identity = write.target_identity or ""
        if identity.startswith("comment-"):
            self.client.write(
                "DELETE", self._path(f"/issues/comments/{identity.removeprefix('comment-')}")
            )
        else:
            self.client.write("DELETE", self._path(f"/pulls/comments/{identity}"))
        return identity, None

    # -- review requests ----------------------------------------------------------------

    def _review_request_comment(self, write: TargetWrite, number: int) -> str:
        """A review request shown as a comment on its pull request (``projected``).

        GitHub can request a review only from a collaborator of this repository, which
        the source's reviewer rarely is; the comment names the reviewer in code (no
        notification goes to a namesake) and its header keeps the canonical payload, so
        reads present the comment as this review request again, never as a comment.
        """
        payload = write.payload or {}
        reviewer = str(payload.get("reviewer") or "")
        when = payload.get("requested_at")
        attribution = {
            gh.CARRIED_TYPE: ObjectType.REVIEW_REQUEST.value,
            "reviewer": reviewer,
            "requested_at": when,
        }
        where = self.source_label(write)
        body = compose(
            f"Review requested from `@{reviewer}`{' on ' + when if when else ''}.",
            marker=write.marker,
            attribution=attribution,
            headline="Review request projected by reposync"
            + (f" from {where}" if where else "")
            + ": GitHub requests reviews only from its own collaborators",
        )
        if write.target_identity:
            self.client.write(
                "PATCH",
                self._path(f"/issues/comments/{write.target_identity.removeprefix('comment-')}"),
                json_body={"body": body},
            )
            return write.target_identity
        created = self.client.write(
            "POST", self._path(f"/issues/{number}/comments"), json_body={"body": body}
        )
        return f"comment-{created['id']}"

    def _create_review_request(self, write: TargetWrite) -> tuple[str, Representation]:
        number = self._number(self._parent(write))
        return self._review_request_comment(write, number), Representation.PROJECTED

    def _update_review_request(self, write: TargetWrite) -> tuple[str, Representation]:
        identity = write.target_identity or ""
        if not identity.startswith("comment-"):
            # A native request has nothing to update (GitHub keeps no request time).
            raise WriteRefused(
                f"review request {identity} is native on GitHub and cannot change",
                refusal="unsupported",
                status=422,
            )
        return self._review_request_comment(write, 0), Representation.PROJECTED

    def _delete_review_request(self, write: TargetWrite) -> tuple[str, None]:
        identity = write.target_identity or ""
        if identity.startswith("comment-"):
            self.client.write(
                "DELETE", self._path(f"/issues/comments/{identity.removeprefix('comment-')}")
            )
        else:
            number, _, login = identity.partition(":")
            self.client.write(
                "DELETE",
                self._path(f"/pulls/{number}/requested_reviewers"),
                json_body={"reviewers": [login]},
            )
        return identity, None

    # -- releases -----------------------------------------------------------------------

    def _release_body(self, write: TargetWrite) -> dict[str, Any]:
        payload = write.payload or {}
        return {
            "tag_name": payload["tag"],
            "name": payload["name"],
            "body": self._body(write, ObjectType.RELEASE),
            "draft": bool(payload["draft"]),
            "prerelease": bool(payload["prerelease"]),
        }

    def _create_release(self, write: TargetWrite) -> tuple[str, Representation]:
        created = self.client.write(
            "POST", self._path("/releases"), json_body=self._release_body(write)
        )
        return str(created["id"]), Representation.ATTRIBUTED

    def _update_release(self, write: TargetWrite) -> tuple[str, Representation]:
        self.client.write(
            "PATCH",
            self._path(f"/releases/{write.target_identity}"),
            json_body=self._release_body(write),
        )
        return write.target_identity or "", Representation.ATTRIBUTED

    def _delete_release(self, write: TargetWrite) -> tuple[str, None]:
        self.client.write("DELETE", self._path(f"/releases/{write.target_identity}"))
        return write.target_identity or "", None

    def _create_release_asset(self, write: TargetWrite) -> tuple[str, Representation | None]:
        """Uploads under the source's name. A name GitHub rewrites (``shapes``) is sent as
        the label too, which GitHub keeps verbatim and reads give back as the name
        (``renamed``); should GitHub rename one this model did not foresee, the label is
        set afterwards."""
        payload = write.payload or {}
        name = str(payload["name"])
        release = self._parent(write)
        if release is None or write.content is None:
            raise WriteRefused(
                "the release (or the bytes) are missing", refusal="dependency_missing", status=422
            )
        existing = self._asset_named(release, name)
        if existing is not None:
            if str(existing.get("digest")) == f"sha256:{payload['sha256']}":
                # ours already (a retried upload)
                return str(existing["id"]), self._representation(write)
            raise WriteRefused(
                f"release {release} already has an asset {name!r} with other content",
                refusal="conflict",
                status=422,
            )
        params = {"name": name}
        if shapes.asset_name(name) != name:
            params["label"] = name
        url = f"{self.uploads_url}/repos/{self.repo}/releases/{release}/assets"
        with write.content() as stream:
            created = self.client.write(
                "POST",
                url,
                data=stream,
                params=params,
                headers={
                    "Content-Type": payload["content_type"],
                    "Content-Length": str(payload["size"]),
                },
            )
        if created.get("name") == name:
            return str(created["id"]), None
        if created.get("label") != name:
            self.client.write(
                "PATCH",
                self._path(f"/releases/assets/{created['id']}"),
                json_body={"label": name},
                creates_content=False,
            )
        return str(created["id"]), Representation.RENAMED

    def _asset_named(self, release: str, name: str) -> dict[str, Any] | None:
        """The release's asset whose source name is ``name`` (GitHub's, or its label's
        when GitHub renamed it)."""
        for asset in self.client.paginate(self._path(f"/releases/{release}/assets")):
            if shapes.original_asset_name(asset["name"], asset.get("label")) == name:
                return asset
        return None

    def _update_release_asset(self, write: TargetWrite) -> tuple[str, Representation | None]:
        """New bytes are a new upload: GitHub cannot replace an asset's content."""
        self._delete_release_asset(write)
        return self._create_release_asset(
            TargetWrite(**{**_fields(write), "target_identity": None})
        )

    def _delete_release_asset(self, write: TargetWrite) -> tuple[str, None]:
        self.client.write("DELETE", self._path(f"/releases/assets/{write.target_identity}"))
        return write.target_identity or "", None

    # -- recovery -----------------------------------------------------------------------

    def find(self, write: TargetWrite) -> str | None:
        payload = write.payload or {}
        if write.object_type is ObjectType.LABEL:
            found = self._label_by_name(payload.get("name", ""))
            return str(found["id"]) if found else None
        if write.object_type is ObjectType.MILESTONE:
            for existing in self.client.paginate(self._path("/milestones"), {"state": "all"}):
                if existing["title"] == payload.get("title"):
                    return str(existing["number"])
            return None
        if write.object_type is ObjectType.REVIEW and self._parent(write):
            number = self._parent(write)
            for review in self.client.paginate(self._path(f"/pulls/{number}/reviews")):
                if parse(review.get("body")).marker == write.marker:
                    return f"{number}/{review['id']}"
        if write.object_type is ObjectType.RELEASE_ASSET and self._parent(write):
            asset = self._asset_named(self._parent(write) or "", payload.get("name", ""))
            return str(asset["id"]) if asset else None
        return find_markers(self.client, self.repo, write.object_type, [write.marker]).get(
            write.marker
        )


def _fields(write: TargetWrite) -> dict[str, Any]:
    return {name: getattr(write, name) for name in write.__dataclass_fields__}


def find_markers(
    client: GitHubClient,
    repo: str,
    object_type: ObjectType,
    markers: Sequence[str],
    *,
    complete: list[bool] | None = None,
) -> dict[str, str]:
    """{marker: identity} among the newest objects of a type (after a lost response).

    ``complete`` (when given) receives whether the whole listing was read: only then does
    "not found" prove that no object carries a marker.
    """
    if complete is not None:
        complete[:] = [False]
    wanted = set(markers)
    found: dict[str, str] = {}
    listing: tuple[str, dict[str, Any], Callable[[dict[str, Any]], str]] | None = None
    newest = {"sort": "created", "direction": "desc"}
    if object_type in (ObjectType.ISSUE, ObjectType.PULL_REQUEST):
        listing = (
            f"/repos/{repo}/issues",
            {"state": "all", **newest},
            lambda item: str(item["number"]),
        )
    elif object_type in (ObjectType.ISSUE_COMMENT, ObjectType.REVIEW, ObjectType.REVIEW_REQUEST):
        listing = (
            f"/repos/{repo}/issues/comments",
            newest,
            lambda item: (
                str(item["id"])
                if object_type is ObjectType.ISSUE_COMMENT
                else f"comment-{item['id']}"
            ),
        )
    elif object_type is ObjectType.REVIEW_COMMENT:
        listing = (f"/repos/{repo}/pulls/comments", newest, lambda item: str(item["id"]))
    elif object_type is ObjectType.RELEASE:
        listing = (f"/repos/{repo}/releases", {}, lambda item: str(item["id"]))
    if listing is None:
        return found
    path, params, identity = listing
    for count, item in enumerate(client.paginate(path, params)):
        marker = parse(item.get("body")).marker
        if marker in wanted:
            found[marker] = identity(item)
            if len(found) == len(wanted):
                break
        if count >= MARKER_SCAN_PAGES * 100:
            break
    else:
        if complete is not None:
            complete[:] = [True]
    if object_type is ObjectType.REVIEW and len(found) < len(wanted):
        # Native reviews live per pull request: the newest pull requests' reviews.
        scanned_all = _find_native_reviews(client, repo, wanted, found)
        if complete is not None and not scanned_all:
            complete[:] = [False]
    return found


def _find_native_reviews(
    client: GitHubClient, repo: str, wanted: set[str], found: dict[str, str]
) -> bool:
    """Markers of native reviews into ``found``; whether every pull request was read."""
    pulls = client.paginate(
        f"/repos/{repo}/pulls", {"state": "all", "sort": "created", "direction": "desc"}
    )
    for count, pull in enumerate(pulls):
        if count >= MARKER_SCAN_PAGES * 100:
            return False
        number = pull["number"]
        for review in client.paginate(f"/repos/{repo}/pulls/{number}/reviews"):
            marker = parse(review.get("body")).marker
            if marker in wanted:
                found[marker] = f"{number}/{review['id']}"
                if len(found) == len(wanted):
                    return False  # stopped early: not a proof of absence for the rest
    return True
