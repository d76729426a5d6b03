"""The engine's words of DESIGN.md as enums: actions, item states, representations,
phases, object types (a Run's and a Binding's life: ``reposync/lifecycle.py``).

They are ``StrEnum`` so the values stored in the database, shown in reports and sent over
the API are the plain strings an operator reads.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    NOOP = "noop"
    CONFLICT = "conflict"
    REPORT = "report"

    @property
    def writes(self) -> bool:
        return self in (Action.CREATE, Action.UPDATE, Action.DELETE)


class ItemState(StrEnum):
    PLANNED = "planned"
    APPLYING = "applying"
    VERIFYING = "verifying"
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"
    SUPERSEDED = "superseded"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_ITEM_STATES


TERMINAL_ITEM_STATES = frozenset(
    {ItemState.COMPLETED, ItemState.FAILED, ItemState.BLOCKED, ItemState.SUPERSEDED}
)


class Representation(StrEnum):
    """How an object exists on a target; every value but ``native`` is a counted data gap.

    Besides the DESIGN.md four, the kinds below name a shape the target forge cannot give
    an object, so the provider writes it another way, says so in its attribution header
    and reads it back as the original (values fit the 16-character column).
    """

    NATIVE = "native"
    ATTRIBUTED = "attributed"
    PROJECTED = "projected"
    ARCHIVE_ONLY = "archive_only"
    #: A review whose state the target cannot give it (an approval, a change request or
    #: a dismissal by the sync's own account): submitted as a comment, state in the header.
    STATE_AS_COMMENT = "state_as_comment"
    #: A reply to a reply where the target threads only to the root: posted as a reply to
    #: the root, the header naming the comment it answered.
    REPLY_TO_ROOT = "reply_to_root"
    #: A reply whose comment is gone on the source: posted as a comment of its own, the
    #: header saying it answered a deleted comment.
    DETACHED_REPLY = "detached_reply"
    #: A review comment the target cannot place in its review (a file-level comment, a
    #: reply): it sits in a review the target opened for it, the header naming its review.
    OWN_REVIEW = "own_review"
    #: A release asset whose name the target does not allow: stored under the name the
    #: target gave it, the source's name kept beside it (GitHub: the asset's label).
    RENAMED = "renamed"
    #: A milestone due at a time the target cannot hold (GitHub keeps the day only): the
    #: day is the target's, the exact time is kept in a header of its description.
    DUE_DAY_ONLY = "due_day_only"
    #: A reply where the target keeps no link to the comment answered (Forgejo's review
    #: comments): posted at that comment's line, where the target threads comments by
    #: position, the header naming the comment it answered.
    REPLY_BY_LINE = "reply_by_line"
    #: A locked conversation the target's API cannot lock (Forgejo 11): left as the
    #: target has it, the lock and its reason kept in the attribution header.
    LOCK_IN_HEADER = "lock_in_header"


class Phase(IntEnum):
    """Dependency phases: a batch never mixes them, N+1 starts after N settled."""

    GIT = 0
    TAXONOMY = 1
    PRIMARY = 2
    NESTED = 3
    ARCHIVE = 4


class ObjectType(StrEnum):
    GIT_REF = "git_ref"
    #: A branch or tag of the repository's wiki, its own Git repository beside the main
    #: one (GitHub: ``<repo>.wiki.git``): planned, pushed and read back like ``git_ref``.
    WIKI_REF = "wiki_ref"
    #: The repository's default branch (Git's ``HEAD``, GitHub's ``default_branch``): one
    #: object per repository, identity ``HEAD``. It must name a branch that exists, so it
    #: is written in the phase after the refs.
    DEFAULT_BRANCH = "default_branch"
    LABEL = "label"
    MILESTONE = "milestone"
    ISSUE = "issue"
    PULL_REQUEST = "pull_request"
    RELEASE = "release"
    ISSUE_COMMENT = "issue_comment"
    REVIEW = "review"
    REVIEW_COMMENT = "review_comment"
    REVIEW_REQUEST = "review_request"
    RELEASE_ASSET = "release_asset"
    REACTION = "reaction"

    @property
    def phase(self) -> Phase:
        return OBJECT_PHASES[self]

    @property
    def representation(self) -> Representation:
        """How this type exists on any target, whatever the provider."""
        return FIXED_REPRESENTATIONS.get(self, Representation.NATIVE)


OBJECT_PHASES: dict[ObjectType, Phase] = {
    ObjectType.GIT_REF: Phase.GIT,
    ObjectType.WIKI_REF: Phase.GIT,
    ObjectType.DEFAULT_BRANCH: Phase.TAXONOMY,
    ObjectType.LABEL: Phase.TAXONOMY,
    ObjectType.MILESTONE: Phase.TAXONOMY,
    ObjectType.ISSUE: Phase.PRIMARY,
    ObjectType.PULL_REQUEST: Phase.PRIMARY,
    ObjectType.RELEASE: Phase.PRIMARY,
    ObjectType.ISSUE_COMMENT: Phase.NESTED,
    ObjectType.REVIEW: Phase.NESTED,
    ObjectType.REVIEW_COMMENT: Phase.NESTED,
    ObjectType.REVIEW_REQUEST: Phase.NESTED,
    ObjectType.RELEASE_ASSET: Phase.NESTED,
    ObjectType.REACTION: Phase.ARCHIVE,
}

#: Reactions are kept in links and reports only, never written. Everything else is the
#: target provider's business (``ApplyResult.representation``): a local forge holds
#: review requests natively, GitHub projects them into comments it reads back as them.
FIXED_REPRESENTATIONS: dict[ObjectType, Representation] = {
    ObjectType.REACTION: Representation.ARCHIVE_ONLY,
}


class RefConflictPolicy(StrEnum):
    """What to do with a same-named, unmanaged target ref whose value differs.

    ``keep_target`` (the default) reports a conflict and keeps the target's ref, unless
    Git proves a branch is behind (then it is fast-forwarded). ``use_source`` lets the
    authority win for branches and tags alike.
    """

    KEEP_TARGET = "keep_target"
    USE_SOURCE = "use_source"
