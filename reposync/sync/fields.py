"""The fields of every canonical forge object, described once.

A type's ``Shape`` lists its payload ``Field``s in payload order: the name, what a value
must be (its ``Kind``) and its default (``REQUIRED``: the caller must give it). Everything
that knows an object's fields reads them here:

* the builders (``objects``) check and normalize a payload by its fields, and add the
  rules of their own type (keys, creation order, one field depending on another);
* the local forge's authoring API takes its keyword arguments from them, and stamps
  ``Shape.created`` with the current time when it is left out;
* GitHub's mapping (``providers.github.objects``) names a GitHub source for every field,
  and a test fails while a field of this description has none.

What is not payload is here too, as structure: an issue's own number (``numbered``), a
nested object's parent (``parents``) and a reply's comment (``replies``) are identity
and references, never hashed.

A changed field changes hashes, and hashes are persisted: adding one needs
``omit_default`` (objects without it hash as before) or a ``MAPPER_VERSION`` bump.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any

from reposync.sync.vocabulary import ObjectType

ISSUE_STATES = ("open", "closed")
STATE_REASONS = (None, "completed", "not_planned", "reopened")
#: Why a conversation is locked: GitHub's four reasons (``None``: locked without one).
LOCK_REASONS = (None, "off-topic", "too heated", "resolved", "spam")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
REVIEW_SIDES = ("LEFT", "RIGHT")
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


class Kind(Enum):
    """What a field's value must be, and how it is stored."""

    TEXT = "text"  #: a string, possibly empty
    NAME = "name"  #: a string with more than white space
    OPTIONAL_TEXT = "optional text"  #: a string or ``None`` (a milestone's title)
    CHOICE = "choice"  #: one of ``Field.choices``
    NAMES = "names"  #: a set of names (logins, label names), stored sorted
    TIME = "time"  #: a time or ``None``, stored as ``YYYY-MM-DDTHH:MM:SSZ``
    FLAG = "flag"  #: anything, stored as its truth value
    COLOR = "color"  #: 6 hex digits, stored lower case without ``#``
    LINE = "line"  #: a positive integer or ``None``
    SIZE = "size"  #: a non-negative integer
    SHA256 = "sha256"  #: 64 lower-case hex digits


class _Required(Enum):
    REQUIRED = "required"


#: The default of a field the caller must give.
REQUIRED = _Required.REQUIRED


@dataclass(frozen=True, slots=True)
class Field:
    """One payload field."""

    name: str
    kind: Kind
    default: Any = REQUIRED
    choices: tuple[Any, ...] = ()
    #: Left out of the payload while it holds its default: a field added after hashes
    #: were stored, so objects without it hash as they did before it existed.
    omit_default: bool = False
    #: Computed by the builder from its other arguments, never given.
    derived: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Shape:
    """The fields and structure of one canonical type."""

    object_type: ObjectType
    fields: tuple[Field, ...]
    #: Issues and pull requests: an own number, shared by both (identity, not payload).
    numbered: bool = False
    #: Nested types: the types their parent may be (``refs["parent"]``).
    parents: tuple[ObjectType, ...] = ()
    #: Review comments: may answer another review comment (``refs["in_reply_to"]``).
    replies: bool = False
    #: The creation time the authoring API fills with "now" when it is left out. Review
    #: requests have none: GitHub keeps no request time, so a request made by hand has
    #: none either unless it is given.
    created: str | None = None

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Every payload field, derived ones included."""
        return tuple(f.name for f in self.fields)

    @cached_property
    def arguments(self) -> tuple[Field, ...]:
        """The fields a builder is given (all but the derived ones)."""
        return tuple(f for f in self.fields if not f.derived)

    @cached_property
    def argument_names(self) -> frozenset[str]:
        return frozenset(f.name for f in self.arguments)

    @cached_property
    def required_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.arguments if f.required)


LABEL = Shape(
    ObjectType.LABEL,
    (
        Field("name", Kind.NAME),
        Field("color", Kind.COLOR, "ededed"),
        Field("description", Kind.TEXT, ""),
    ),
)

MILESTONE = Shape(
    ObjectType.MILESTONE,
    (
        Field("title", Kind.NAME),
        Field("description", Kind.TEXT, ""),
        Field("state", Kind.CHOICE, "open", ISSUE_STATES),
        Field("due_on", Kind.TIME, None),
    ),
)

ISSUE = Shape(
    ObjectType.ISSUE,
    (
        Field("title", Kind.NAME),
        Field("body", Kind.TEXT, ""),
        Field("state", Kind.CHOICE, "open", ISSUE_STATES),
        Field("state_reason", Kind.CHOICE, None, STATE_REASONS),
        Field("labels", Kind.NAMES, ()),
        Field("milestone", Kind.OPTIONAL_TEXT, None),
        Field("assignees", Kind.NAMES, ()),
        Field("author", Kind.NAME),
        Field("created_at", Kind.TIME),
        Field("closed_at", Kind.TIME, None),
        Field("locked", Kind.FLAG, False),
        Field("active_lock_reason", Kind.CHOICE, None, LOCK_REASONS, omit_default=True),
    ),
    numbered=True,
    created="created_at",
)

PULL_REQUEST = Shape(
    ObjectType.PULL_REQUEST,
    (
        Field("title", Kind.NAME),
        Field("body", Kind.TEXT, ""),
        Field("state", Kind.CHOICE, "open", ISSUE_STATES),
        Field("merged", Kind.FLAG, False),
        Field("merged_at", Kind.TIME, None),
        Field("draft", Kind.FLAG, False),
        Field("base_ref", Kind.NAME),
        Field("base_sha", Kind.NAME),
        Field("head_ref", Kind.NAME),
        Field("head_sha", Kind.NAME),
        Field("labels", Kind.NAMES, ()),
        Field("milestone", Kind.OPTIONAL_TEXT, None),
        Field("assignees", Kind.NAMES, ()),
        Field("author", Kind.NAME),
        Field("created_at", Kind.TIME),
        Field("closed_at", Kind.TIME, None),
    ),
    numbered=True,
    created="created_at",
)

RELEASE = Shape(
    ObjectType.RELEASE,
    (
        Field("tag", Kind.NAME),
        Field("name", Kind.TEXT, ""),
        Field("body", Kind.TEXT, ""),
        Field("draft", Kind.FLAG, False),
        Field("prerelease", Kind.FLAG, False),
        Field("author", Kind.NAME),
        Field("created_at", Kind.TIME),
        Field("published_at", Kind.TIME, None),
    ),
    created="created_at",
)

ISSUE_COMMENT = Shape(
    ObjectType.ISSUE_COMMENT,
    (Field("body", Kind.TEXT), Field("author", Kind.NAME), Field("created_at", Kind.TIME)),
    parents=(ObjectType.ISSUE, ObjectType.PULL_REQUEST),
    created="created_at",
)

REVIEW = Shape(
    ObjectType.REVIEW,
    (
        Field("state", Kind.CHOICE, REQUIRED, REVIEW_STATES),
        Field("body", Kind.TEXT, ""),
        Field("commit_id", Kind.NAME),
        Field("author", Kind.NAME),
        Field("submitted_at", Kind.TIME),
    ),
    parents=(ObjectType.PULL_REQUEST,),
    created="submitted_at",
)

REVIEW_COMMENT = Shape(
    ObjectType.REVIEW_COMMENT,
    (
        Field("path", Kind.NAME),
        Field("line", Kind.LINE),
        Field("side", Kind.CHOICE, "RIGHT", REVIEW_SIDES),
        Field("commit_id", Kind.NAME),
        Field("body", Kind.TEXT),
        Field("author", Kind.NAME),
        Field("created_at", Kind.TIME),
        #: Whether ``refs["in_reply_to"]`` is set: the reference itself is not content.
        Field("is_reply", Kind.FLAG, False, derived=True),
    ),
    parents=(ObjectType.REVIEW,),
    replies=True,
    created="created_at",
)

REVIEW_REQUEST = Shape(
    ObjectType.REVIEW_REQUEST,
    (Field("reviewer", Kind.NAME), Field("requested_at", Kind.TIME, None)),
    parents=(ObjectType.PULL_REQUEST,),
)

RELEASE_ASSET = Shape(
    ObjectType.RELEASE_ASSET,
    (
        Field("name", Kind.NAME),
        Field("content_type", Kind.NAME),
        Field("size", Kind.SIZE),
        Field("sha256", Kind.SHA256),
    ),
    parents=(ObjectType.RELEASE,),
)

REACTION = Shape(
    ObjectType.REACTION,
    (
        Field("content", Kind.CHOICE, REQUIRED, REACTIONS),
        Field("user", Kind.NAME),
        Field("created_at", Kind.TIME, None),
    ),
    parents=(
        ObjectType.ISSUE,
        ObjectType.PULL_REQUEST,
        ObjectType.ISSUE_COMMENT,
        ObjectType.REVIEW_COMMENT,
        ObjectType.RELEASE,
    ),
    created="created_at",
)

#: Every forge type's shape (Git refs and the default branch are built from Git itself).
SHAPES: dict[ObjectType, Shape] = {
    shape.object_type: shape
    for shape in (
        LABEL,
        MILESTONE,
        ISSUE,
        PULL_REQUEST,
        RELEASE,
        ISSUE_COMMENT,
        REVIEW,
        REVIEW_COMMENT,
        REVIEW_REQUEST,
        RELEASE_ASSET,
        REACTION,
    )
}
