"""The canonical forge objects: one builder per type, shared by every provider.

A provider reads its native data and calls these builders, so the same state hashes the
same on every forge. Builders validate what they are given and raise ``MalformedObject``
(a ``ValueError``) with the field at fault; providers map it to their own error.

Conventions of every payload:

* users are login strings; timestamps are ISO 8601 UTC strings (``…Z``) or ``None``;
* references inside content use natural keys: labels by name, milestones by title;
* structural references (a comment's issue, a reply's parent) are ``refs``, not payload;
* the own number of an issue or pull request is identity, not payload.

One module, on purpose: the builders share their validators and key helpers, and a
reader looking for how any type hashes finds every type here, one builder each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from reposync.sync.canonical import CanonicalObject, ObjectRef, content_hash
from reposync.sync.vocabulary import ObjectType

ISSUE_STATES = ("open", "closed")
STATE_REASONS = (None, "completed", "not_planned", "reopened")
#: Why a conversation is locked: GitHub's four reasons (``None``: locked without one).
LOCK_REASONS = (None, "off-topic", "too heated", "resolved", "spam")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
REVIEW_SIDES = ("LEFT", "RIGHT")
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
REACTION_PARENTS = (
    ObjectType.ISSUE,
    ObjectType.PULL_REQUEST,
    ObjectType.ISSUE_COMMENT,
    ObjectType.REVIEW_COMMENT,
    ObjectType.RELEASE,
)
_COLOR = re.compile(r"^[0-9a-f]{6}$")


class MalformedObject(ValueError):
    """A provider handed over data that does not form a valid canonical object."""


_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def timestamp(value: datetime | str | None) -> str | None:
    """Normalize a time to ``YYYY-MM-DDTHH:MM:SSZ`` (UTC, second precision)."""
    if value is None:
        return None
    if isinstance(value, str):
        if _CANONICAL_TIME.fullmatch(value):
            datetime.fromisoformat(value[:19])  # still a real date (fast C parser)
            return value
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise MalformedObject(f"not an ISO 8601 time: {value!r}") from exc
    if value.tzinfo is None:
        raise MalformedObject(f"time without a timezone: {value!r}")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(name: str, value: Any, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise MalformedObject(f"{name} must be a string, not {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise MalformedObject(f"{name} must not be empty")
    return value


def _choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    allowed = tuple(allowed)
    if value not in allowed:
        raise MalformedObject(f"{name} must be one of {allowed}, not {value!r}")
    return value


def _logins(name: str, values: Iterable[Any]) -> list[str]:
    return sorted({_text(name, v, allow_empty=False) for v in values})


def _number(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise MalformedObject(f"number must be a positive integer, not {value!r}")
    return value


def number_key(number: int) -> str:
    """Unique key of an issue or pull request: they share one number sequence."""
    return f"#{number}"


def _order(number: int | None = None, created_at: str | None = None, identity: str = "") -> str:
    """Creation order: by number, else by time then identity (numeric ids compare as
    numbers, so a reply "10" never sorts before the comment "9" it answers)."""
    if number is not None:
        return f"{number:012d}"
    return f"{created_at or ''}|{identity.zfill(12) if identity.isdigit() else identity}"


def _build(
    object_type: ObjectType,
    identity: str,
    revision: str,
    payload: dict[str, Any],
    *,
    object_key: str,
    unique_key: str | None,
    number: int | None = None,
    refs: Mapping[str, ObjectRef] | None = None,
    order_key: str = "",
) -> CanonicalObject:
    return CanonicalObject(
        object_type=object_type,
        identity=_text("identity", identity, allow_empty=False),
        object_key=object_key,
        unique_key=unique_key,
        revision=str(revision),
        payload=payload,
        number=number,
        refs=dict(refs or {}),
        order_key=order_key or identity,
    )


#: Joins a parent's key and a child's part. Git refuses ":" in ref names, so a tag (a
#: release's key) never contains it and ``tag:name`` keys cannot be read two ways.
KEY_SEPARATOR = ":"


def child_key(parent_key: str | None, part: str) -> str | None:
    return None if parent_key is None else f"{parent_key}{KEY_SEPARATOR}{part}"


def parent_number(unique_key: str | None) -> int | None:
    """The issue or pull request a nested object's key places it under (``#N:...``).

    Content hashes leave the parent out (identities differ between forges), so this is
    how a read-back sees a comment that landed on the wrong issue.
    """
    if not unique_key or not unique_key.startswith("#") or KEY_SEPARATOR not in unique_key:
        return None
    head = unique_key.partition(KEY_SEPARATOR)[0][1:]
    return int(head) if head.isdigit() else None


def misplaced(
    source_key: str | None, target_key: str | None, numbers: Mapping[int, int]
) -> tuple[int, int] | None:
    """(where the target object is, where it belongs) when a nested object hangs under
    another issue than its source's; ``numbers`` maps source numbers to target ones."""
    wanted, found = parent_number(source_key), parent_number(target_key)
    if wanted is None or found is None:
        return None
    wanted = numbers.get(wanted, wanted)
    return None if found == wanted else (found, wanted)


def nested_unique_key(parent_key: str | None, payload: Mapping[str, Any]) -> str | None:
    """Objects without a natural key (comments, reviews) match on their parent + content."""
    return child_key(parent_key, content_hash(payload))


# -- taxonomy ------------------------------------------------------------------------------


def label(
    identity: str, revision: str, *, name: str, color: str = "ededed", description: str = ""
) -> CanonicalObject:
    name = _text("name", name, allow_empty=False)
    color = _text("color", color).lower().lstrip("#")
    if not _COLOR.match(color):
        raise MalformedObject(f"color must be 6 hex digits, not {color!r}")
    payload = {"name": name, "color": color, "description": _text("description", description)}
    return _build(
        ObjectType.LABEL, identity, revision, payload, object_key=f"label {name}", unique_key=name
    )


def milestone(
    identity: str,
    revision: str,
    *,
    title: str,
    description: str = "",
    state: str = "open",
    due_on: datetime | str | None = None,
) -> CanonicalObject:
    title = _text("title", title, allow_empty=False)
    payload = {
        "title": title,
        "description": _text("description", description),
        "state": _choice("state", state, ISSUE_STATES),
        "due_on": timestamp(due_on),
    }
    return _build(
        ObjectType.MILESTONE,
        identity,
        revision,
        payload,
        object_key=f"milestone {title}",
        unique_key=title,
    )


# -- primary objects -----------------------------------------------------------------------


def issue(
    identity: str,
    revision: str,
    *,
    number: int,
    title: str,
    body: str = "",
    state: str = "open",
    state_reason: str | None = None,
    labels: Iterable[str] = (),
    milestone: str | None = None,
    assignees: Iterable[str] = (),
    author: str,
    created_at: datetime | str,
    closed_at: datetime | str | None = None,
    locked: bool = False,
    active_lock_reason: str | None = None,
) -> CanonicalObject:
    number = _number(number)
    if active_lock_reason is not None and not locked:
        raise MalformedObject("an issue that is not locked has no lock reason")
    payload = {
        "title": _text("title", title, allow_empty=False),
        "body": _text("body", body),
        "state": _choice("state", state, ISSUE_STATES),
        "state_reason": _choice("state_reason", state_reason, STATE_REASONS),
        "labels": _logins("labels", labels),
        "milestone": None if milestone is None else _text("milestone", milestone),
        "assignees": _logins("assignees", assignees),
        "author": _text("author", author, allow_empty=False),
        "created_at": timestamp(created_at),
        "closed_at": timestamp(closed_at),
        "locked": bool(locked),
    }
    # Only when there is one: an issue without a lock reason hashes as it did before the
    # field existed, so stored objects and verified links stay equal.
    if _choice("active_lock_reason", active_lock_reason, LOCK_REASONS) is not None:
        payload["active_lock_reason"] = active_lock_reason
    return _build(
        ObjectType.ISSUE,
        identity,
        revision,
        payload,
        object_key=f"issue #{number}",
        unique_key=number_key(number),
        number=number,
        order_key=_order(number),
    )


def pull_request(
    identity: str,
    revision: str,
    *,
    number: int,
    title: str,
    body: str = "",
    state: str = "open",
    merged: bool = False,
    merged_at: datetime | str | None = None,
    draft: bool = False,
    base_ref: str,
    base_sha: str,
    head_ref: str,
    head_sha: str,
    labels: Iterable[str] = (),
    milestone: str | None = None,
    assignees: Iterable[str] = (),
    author: str,
    created_at: datetime | str,
    closed_at: datetime | str | None = None,
) -> CanonicalObject:
    number = _number(number)
    if merged and state != "closed":
        raise MalformedObject("a merged pull request must be closed")
    payload = {
        "title": _text("title", title, allow_empty=False),
        "body": _text("body", body),
        "state": _choice("state", state, ISSUE_STATES),
        "merged": bool(merged),
        "merged_at": timestamp(merged_at),
        "draft": bool(draft),
        "base_ref": _text("base_ref", base_ref, allow_empty=False),
        "base_sha": _text("base_sha", base_sha, allow_empty=False),
        "head_ref": _text("head_ref", head_ref, allow_empty=False),
        "head_sha": _text("head_sha", head_sha, allow_empty=False),
        "labels": _logins("labels", labels),
        "milestone": None if milestone is None else _text("milestone", milestone),
        "assignees": _logins("assignees", assignees),
        "author": _text("author", author, allow_empty=False),
        "created_at": timestamp(created_at),
        "closed_at": timestamp(closed_at),
    }
    return _build(
        ObjectType.PULL_REQUEST,
        identity,
        revision,
        payload,
        object_key=f"pull request #{number}",
        unique_key=number_key(number),
        number=number,
        order_key=_order(number),
    )


def release(
    identity: str,
    revision: str,
    *,
    tag: str,
    name: str = "",
    body: str = "",
    draft: bool = False,
    prerelease: bool = False,
    author: str,
    created_at: datetime | str,
    published_at: datetime | str | None = None,
) -> CanonicalObject:
    tag = _text("tag", tag, allow_empty=False)
    payload = {
        "tag": tag,
        "name": _text("name", name),
        "body": _text("body", body),
        "draft": bool(draft),
        "prerelease": bool(prerelease),
        "author": _text("author", author, allow_empty=False),
        "created_at": timestamp(created_at),
        "published_at": timestamp(published_at),
    }
    return _build(
        ObjectType.RELEASE,
        identity,
        revision,
        payload,
        object_key=f"release {tag}",
        unique_key=tag,
        order_key=_order(created_at=payload["created_at"], identity=identity),
    )


# -- nested objects ------------------------------------------------------------------------


def issue_comment(
    identity: str,
    revision: str,
    *,
    parent: ObjectRef,
    parent_key: str | None,
    body: str,
    author: str,
    created_at: datetime | str,
) -> CanonicalObject:
    _parent_of(parent, (ObjectType.ISSUE, ObjectType.PULL_REQUEST))
    payload = {
        "body": _text("body", body),
        "author": _text("author", author, allow_empty=False),
        "created_at": timestamp(created_at),
    }
    return _child(
        ObjectType.ISSUE_COMMENT,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"comment {identity} on {parent_key or parent.identity}",
        unique_key=nested_unique_key(parent_key, payload),
        created_at=payload["created_at"],
    )


def review(
    identity: str,
    revision: str,
    *,
    parent: ObjectRef,
    parent_key: str | None,
    state: str,
    body: str = "",
    commit_id: str,
    author: str,
    submitted_at: datetime | str,
) -> CanonicalObject:
    _parent_of(parent, (ObjectType.PULL_REQUEST,))
    payload = {
        "state": _choice("state", state, REVIEW_STATES),
        "body": _text("body", body),
        "commit_id": _text("commit_id", commit_id, allow_empty=False),
        "author": _text("author", author, allow_empty=False),
        "submitted_at": timestamp(submitted_at),
    }
    return _child(
        ObjectType.REVIEW,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"review {identity} on {parent_key or parent.identity}",
        unique_key=nested_unique_key(parent_key, payload),
        created_at=payload["submitted_at"],
    )


def review_comment(
    identity: str,
    revision: str,
    *,
    parent: ObjectRef,
    parent_key: str | None,
    path: str,
    line: int | None,
    side: str = "RIGHT",
    commit_id: str,
    body: str,
    author: str,
    created_at: datetime | str,
    in_reply_to: ObjectRef | None = None,
) -> CanonicalObject:
    _parent_of(parent, (ObjectType.REVIEW,))
    if line is not None and (not isinstance(line, int) or line <= 0):
        raise MalformedObject(f"line must be a positive integer or None, not {line!r}")
    payload = {
        "path": _text("path", path, allow_empty=False),
        "line": line,
        "side": _choice("side", side, REVIEW_SIDES),
        "commit_id": _text("commit_id", commit_id, allow_empty=False),
        "body": _text("body", body),
        "author": _text("author", author, allow_empty=False),
        "created_at": timestamp(created_at),
        "is_reply": in_reply_to is not None,
    }
    if in_reply_to is not None:
        _parent_of(in_reply_to, (ObjectType.REVIEW_COMMENT,))
    return _child(
        ObjectType.REVIEW_COMMENT,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"review comment {identity} on {parent_key or parent.identity}",
        unique_key=nested_unique_key(parent_key, payload),
        created_at=payload["created_at"],
        in_reply_to=in_reply_to,
    )


def review_request(
    identity: str,
    revision: str,
    *,
    parent: ObjectRef,
    parent_key: str | None,
    reviewer: str,
    requested_at: datetime | str | None = None,
) -> CanonicalObject:
    _parent_of(parent, (ObjectType.PULL_REQUEST,))
    reviewer = _text("reviewer", reviewer, allow_empty=False)
    payload = {"reviewer": reviewer, "requested_at": timestamp(requested_at)}
    return _child(
        ObjectType.REVIEW_REQUEST,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"review request {reviewer} on {parent_key or parent.identity}",
        unique_key=child_key(parent_key, f"reviewer {reviewer}"),
        created_at=payload["requested_at"],
    )


def release_asset(
    identity: str,
    revision: str,
    *,
    parent: ObjectRef,
    parent_key: str | None,
    name: str,
    content_type: str,
    size: int,
    sha256: str,
) -> CanonicalObject:
    _parent_of(parent, (ObjectType.RELEASE,))
    name = _text("name", name, allow_empty=False)
    if not isinstance(size, int) or size < 0:
        raise MalformedObject(f"size must be a non-negative integer, not {size!r}")
    if not re.fullmatch(r"[0-9a-f]{64}", sha256 or ""):
        raise MalformedObject(f"sha256 must be 64 hex digits, not {sha256!r}")
    payload = {
        "name": name,
        "content_type": _text("content_type", content_type, allow_empty=False),
        "size": size,
        "sha256": sha256,
    }
    return _child(
        ObjectType.RELEASE_ASSET,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"asset {name} of {parent_key or parent.identity}",
        unique_key=child_key(parent_key, name),
        timed=False,
    )


def reaction(
    identity: str,
    revision: str,
    *,
    parent: ObjectRef,
    parent_key: str | None,
    content: str,
    user: str,
    created_at: datetime | str | None = None,
) -> CanonicalObject:
    _parent_of(parent, REACTION_PARENTS)
    payload = {
        "content": _choice("content", content, REACTIONS),
        "user": _text("user", user, allow_empty=False),
        "created_at": timestamp(created_at),
    }
    return _child(
        ObjectType.REACTION,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"reaction {content} by {user} on {parent_key or parent.identity}",
        unique_key=child_key(parent_key, f"{user} {content}"),
        timed=False,
    )


def _child(
    object_type: ObjectType,
    identity: str,
    revision: str,
    payload: dict[str, Any],
    *,
    parent: ObjectRef,
    object_key: str,
    unique_key: str | None,
    timed: bool = True,
    created_at: str | None = None,
    in_reply_to: ObjectRef | None = None,
) -> CanonicalObject:
    """A nested object: its parent is a structural ref; a ``timed`` one is ordered by its
    time, so replies and later comments are created after what they follow."""
    refs = {"parent": parent}
    if in_reply_to is not None:
        refs["in_reply_to"] = in_reply_to
    return _build(
        object_type,
        identity,
        revision,
        payload,
        object_key=object_key,
        unique_key=unique_key,
        refs=refs,
        order_key=_order(created_at=created_at, identity=identity) if timed else "",
    )


def _parent_of(ref: ObjectRef, allowed: tuple[ObjectType, ...]) -> None:
    if not isinstance(ref, ObjectRef) or ref.object_type not in allowed:
        raise MalformedObject(
            f"parent must reference one of {[t.value for t in allowed]}, not {ref!r}"
        )


#: The builder of each type (for providers that dispatch on the stored type).
BUILDERS: dict[ObjectType, Callable[..., CanonicalObject]] = {
    ObjectType.LABEL: label,
    ObjectType.MILESTONE: milestone,
    ObjectType.ISSUE: issue,
    ObjectType.PULL_REQUEST: pull_request,
    ObjectType.RELEASE: release,
    ObjectType.ISSUE_COMMENT: issue_comment,
    ObjectType.REVIEW: review,
    ObjectType.REVIEW_COMMENT: review_comment,
    ObjectType.REVIEW_REQUEST: review_request,
    ObjectType.RELEASE_ASSET: release_asset,
    ObjectType.REACTION: reaction,
}


# -- references ----------------------------------------------------------------------------

_ISSUE_REFERENCE = re.compile(r"(?<![\w&/#])#(\d+)\b")


def rewrite_issue_references(text: str, numbers: Mapping[int, int]) -> str:
    """``#N`` -> ``#M`` for every mapped number; everything else is left alone.

    Used when a target could not keep the source's issue numbers: bodies then point at
    the target's own numbers. ``numbers`` maps the writer's numbers to the reader's.
    """
    if not numbers:
        return text

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f"#{numbers.get(number, number)}"

    return _ISSUE_REFERENCE.sub(replace, text)
