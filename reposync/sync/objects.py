"""The canonical forge objects: one builder per type, shared by every provider.

A provider reads its native data and calls these builders, so the same state hashes the
same on every forge. Builders validate what they are given and raise ``MalformedObject``
(a ``ValueError``) with the field at fault; providers map it to their own error.

Conventions of every payload:

* users are login strings; timestamps are ISO 8601 UTC strings (``…Z``) or ``None``;
* references inside content use natural keys: labels by name, milestones by title;
* structural references (a comment's issue, a reply's parent) are ``refs``, not payload;
* the own number of an issue or pull request is identity, not payload.

Which fields each type has (names, defaults, what a value must be) is described once, in
``reposync.sync.fields``; a builder checks its payload by that description and adds what
is its own: keys, creation order, a field that depends on another.

One module, on purpose: the builders share their validators and key helpers, and a
reader looking for how any type hashes finds every type here, one builder each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from reposync.sync.canonical import CanonicalObject, ObjectRef, content_hash
from reposync.sync.fields import (
    ISSUE,
    ISSUE_COMMENT,
    LABEL,
    MILESTONE,
    PULL_REQUEST,
    REACTION,
    RELEASE,
    RELEASE_ASSET,
    REVIEW,
    REVIEW_COMMENT,
    REVIEW_REQUEST,
    SHAPES,
    Field,
    Kind,
    Shape,
)
from reposync.sync.vocabulary import ObjectType

_COLOR = re.compile(r"^[0-9a-f]{6}$")
_SHA256 = re.compile(r"[0-9a-f]{64}")


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


# -- payloads ------------------------------------------------------------------------------


def _color(field: Field, value: Any) -> str:
    color = _text(field.name, value).lower().lstrip("#")
    if not _COLOR.match(color):
        raise MalformedObject(f"{field.name} must be 6 hex digits, not {color!r}")
    return color


def _line(field: Field, value: Any) -> int | None:
    if value is not None and (not isinstance(value, int) or value <= 0):
        raise MalformedObject(f"{field.name} must be a positive integer or None, not {value!r}")
    return value


def _size(field: Field, value: Any) -> int:
    if not isinstance(value, int) or value < 0:
        raise MalformedObject(f"{field.name} must be a non-negative integer, not {value!r}")
    return value


def _sha256(field: Field, value: Any) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise MalformedObject(f"{field.name} must be 64 hex digits, not {value!r}")
    return value


#: How a field of each kind is checked, and the value the payload stores; a refusal is a
#: ``MalformedObject`` naming the field.
CHECKS: dict[Kind, Callable[[Field, Any], Any]] = {
    Kind.TEXT: lambda field, value: _text(field.name, value),
    Kind.NAME: lambda field, value: _text(field.name, value, allow_empty=False),
    Kind.OPTIONAL_TEXT: lambda field, value: None if value is None else _text(field.name, value),
    Kind.CHOICE: lambda field, value: _choice(field.name, value, field.choices),
    Kind.NAMES: lambda field, value: _logins(field.name, value),
    Kind.TIME: lambda _field, value: timestamp(value),
    Kind.FLAG: lambda _field, value: bool(value),
    Kind.COLOR: _color,
    Kind.LINE: _line,
    Kind.SIZE: _size,
    Kind.SHA256: _sha256,
}

#: Each type's fields with their checks (looked up once, not per object).
_CHECKED: dict[ObjectType, tuple[tuple[Field, Callable[[Field, Any], Any]], ...]] = {
    t: tuple((field, CHECKS[field.kind]) for field in shape.fields) for t, shape in SHAPES.items()
}


def _payload(shape: Shape, given: Mapping[str, Any], **derived: Any) -> dict[str, Any]:
    """The payload of ``shape`` from a builder's fields: every field checked in order,
    defaults filled in, ``derived`` fields as the builder computed them."""
    unknown = given.keys() - shape.argument_names
    missing = [name for name in shape.required_names if name not in given]
    if unknown or missing:
        problems = [f"unknown {', '.join(sorted(unknown))}"] if unknown else []
        problems += [f"missing {', '.join(missing)}"] if missing else []
        raise MalformedObject(f"fields do not form a {shape.object_type}: {'; '.join(problems)}")
    payload: dict[str, Any] = {}
    for field, check in _CHECKED[shape.object_type]:
        if field.derived:
            value = derived[field.name]
        else:
            value = check(field, given.get(field.name, field.default))
        if not (field.omit_default and value == field.default):
            payload[field.name] = value
    return payload


# -- taxonomy ------------------------------------------------------------------------------


def label(identity: str, revision: str, **fields: Any) -> CanonicalObject:
    payload = _payload(LABEL, fields)
    name = payload["name"]
    return _build(
        ObjectType.LABEL, identity, revision, payload, object_key=f"label {name}", unique_key=name
    )


def milestone(identity: str, revision: str, **fields: Any) -> CanonicalObject:
    payload = _payload(MILESTONE, fields)
    title = payload["title"]
    return _build(
        ObjectType.MILESTONE,
        identity,
        revision,
        payload,
        object_key=f"milestone {title}",
        unique_key=title,
    )


# -- primary objects -----------------------------------------------------------------------


def issue(identity: str, revision: str, *, number: int, **fields: Any) -> CanonicalObject:
    number = _number(number)
    if fields.get("active_lock_reason") is not None and not fields.get("locked"):
        raise MalformedObject("an issue that is not locked has no lock reason")
    # ``active_lock_reason`` is in the payload only when there is one: an issue without
    # one hashes as it did before the field existed (``Field.omit_default``).
    payload = _payload(ISSUE, fields)
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


def pull_request(identity: str, revision: str, *, number: int, **fields: Any) -> CanonicalObject:
    number = _number(number)
    if fields.get("merged") and fields.get("state") != "closed":
        raise MalformedObject("a merged pull request must be closed")
    payload = _payload(PULL_REQUEST, fields)
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


def release(identity: str, revision: str, **fields: Any) -> CanonicalObject:
    payload = _payload(RELEASE, fields)
    tag = payload["tag"]
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
    identity: str, revision: str, *, parent: ObjectRef, parent_key: str | None, **fields: Any
) -> CanonicalObject:
    shape = ISSUE_COMMENT
    _parent_of(parent, shape.parents)
    payload = _payload(shape, fields)
    return _child(
        shape.object_type,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"comment {identity} on {parent_key or parent.identity}",
        unique_key=nested_unique_key(parent_key, payload),
        created_at=payload["created_at"],
    )


def review(
    identity: str, revision: str, *, parent: ObjectRef, parent_key: str | None, **fields: Any
) -> CanonicalObject:
    shape = REVIEW
    _parent_of(parent, shape.parents)
    payload = _payload(shape, fields)
    return _child(
        shape.object_type,
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
    in_reply_to: ObjectRef | None = None,
    **fields: Any,
) -> CanonicalObject:
    shape = REVIEW_COMMENT
    _parent_of(parent, shape.parents)
    payload = _payload(shape, fields, is_reply=in_reply_to is not None)
    if in_reply_to is not None:
        _parent_of(in_reply_to, (ObjectType.REVIEW_COMMENT,))
    return _child(
        shape.object_type,
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
    identity: str, revision: str, *, parent: ObjectRef, parent_key: str | None, **fields: Any
) -> CanonicalObject:
    shape = REVIEW_REQUEST
    _parent_of(parent, shape.parents)
    payload = _payload(shape, fields)
    reviewer = payload["reviewer"]
    return _child(
        shape.object_type,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"review request {reviewer} on {parent_key or parent.identity}",
        unique_key=child_key(parent_key, f"reviewer {reviewer}"),
        created_at=payload["requested_at"],
    )


def release_asset(
    identity: str, revision: str, *, parent: ObjectRef, parent_key: str | None, **fields: Any
) -> CanonicalObject:
    shape = RELEASE_ASSET
    _parent_of(parent, shape.parents)
    payload = _payload(shape, fields)
    name = payload["name"]
    return _child(
        shape.object_type,
        identity,
        revision,
        payload,
        parent=parent,
        object_key=f"asset {name} of {parent_key or parent.identity}",
        unique_key=child_key(parent_key, name),
        timed=False,
    )


def reaction(
    identity: str, revision: str, *, parent: ObjectRef, parent_key: str | None, **fields: Any
) -> CanonicalObject:
    shape = REACTION
    _parent_of(parent, shape.parents)
    payload = _payload(shape, fields)
    content, user = payload["content"], payload["user"]
    return _child(
        shape.object_type,
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
