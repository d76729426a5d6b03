"""Reviews and review comments a forge shows otherwise than the source had them.

* **States.** A review the sync's own account submits cannot be an approval, a change
  request, a dismissal or a draft of the source's author: the forge would count the
  approval, block merging, or keep a draft of the sync's. Such a review is submitted as
  a comment, its header keeping the state (``state_as_comment``) and its visible line
  saying why (``review_state_notes``).
* **Placement.** A review comment the forge cannot put where the source had it keeps
  the source's place in its header (``PLACEMENT_FIELDS``): ``review`` when the forge
  opened a review of its own for it (``own_review``), ``in_reply_to`` when the forge
  threads a reply to the first comment of its thread (``reply_to_root``) or the comment
  answered is gone on the source (``GONE_COMMENT``: ``detached_reply``). Reads restore
  both, and the review the forge opened (a **vessel**: ``is_vessel``) is no review of
  the source's.

A native review's identity is ``<pull request number>/<review id>``: forges list
reviews per pull request.

What a forge does natively is its provider's choice: these rules only say how a review
it cannot give as the source had it is written, counted and read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forge.attribution import ATTRIBUTED_FIELDS, attributed_body
from reposync.providers.forge.bodies import parse
from reposync.sync.vocabulary import ObjectType, Representation

#: Header fields of a review comment the forge placed elsewhere than the source had it:
#: ``review`` (the review it belongs to, when the forge opened another one for it) and
#: ``in_reply_to`` (the comment it answered, when the forge threads it to the root, or
#: ``GONE_COMMENT`` when the source's was deleted). Reads restore both.
PLACEMENT_FIELDS = ("review", "in_reply_to")
#: What a reply answers when the source's comment is gone (as a local forge keeps it).
GONE_COMMENT = "deleted"


def review_state_notes(forge: str) -> dict[str, str]:
    """The states ``forge`` cannot give a review the sync's account submits, each with
    the visible note that says so (the review is submitted as a comment)."""
    return {
        "APPROVED": f"approved on the source; shown as a comment: {forge} would count an "
        "approval by the sync's account",
        "CHANGES_REQUESTED": f"requested changes on the source; shown as a comment: {forge} "
        "would block merging on the sync's account",
        "DISMISSED": f"a dismissed review on the source; shown as a comment: {forge} "
        "dismisses only approvals and change requests",
        "PENDING": "pending on the source (a draft its author had not submitted); shown as "
        f"a comment: a pending review on {forge} is the sync's own draft",
    }


def review_body(write: TargetWrite, *, source_label: str | None, notes: Mapping[str, str]) -> str:
    """A review's body: the header keeps every field, and says when the forge shows the
    review in another state than the source's (``notes``: ``review_state_notes``)."""
    payload = write.payload or {}
    return attributed_body(
        write,
        ATTRIBUTED_FIELDS[ObjectType.REVIEW],
        source_label=source_label,
        note=notes.get(str(payload.get("state"))),
    )


def review_representation(write: TargetWrite, notes: Mapping[str, str]) -> Representation:
    """``state_as_comment`` for a state in ``notes``, else ``attributed``."""
    state = str((write.payload or {}).get("state"))
    if state in notes:
        return Representation.STATE_AS_COMMENT
    return Representation.ATTRIBUTED


def placement_representation(extra: Mapping[str, Any]) -> Representation:
    """How a review comment with placement fields ``extra`` exists on the forge."""
    if extra.get("in_reply_to") == GONE_COMMENT:
        return Representation.DETACHED_REPLY
    if extra.get("in_reply_to") is not None:
        return Representation.REPLY_TO_ROOT
    if extra.get("review") is not None:
        return Representation.OWN_REVIEW
    return Representation.ATTRIBUTED


def placement_note(extra: Mapping[str, Any], *, forge: str) -> str | None:
    """The visible part of ``PLACEMENT_FIELDS``: what ``forge`` shows differently."""
    replied = extra.get("in_reply_to")
    if replied == GONE_COMMENT:
        return "in reply to a comment deleted on the source; shown as a comment of its own"
    if replied is not None:
        return (
            f"in reply to comment {replied}; {forge} threads replies to the first comment "
            "of a thread"
        )
    if extra.get("review") is not None:
        return f"part of review {extra['review']}; {forge} opened a review of its own for it"
    return None


def review_comment_body(
    write: TargetWrite, extra: Mapping[str, Any], *, source_label: str | None, forge: str
) -> str:
    """A review comment's body; ``extra`` (see ``PLACEMENT_FIELDS``) says where the source
    had it when the forge put it elsewhere, in the header and in a visible note."""
    return attributed_body(
        write,
        ATTRIBUTED_FIELDS[ObjectType.REVIEW_COMMENT],
        source_label=source_label,
        extra=extra,
        note=placement_note(extra, forge=forge),
    )


def native_review_identity(pull: object, review_id: object) -> str:
    """The identity of review ``review_id`` of pull request ``pull``."""
    return f"{pull}/{review_id}"


def placed_review(body: str | None) -> str | None:
    """The native review a review comment's header places it in (``own_review``), when
    the header names one."""
    placed = (parse(body).attribution or {}).get("review")
    if isinstance(placed, str) and "/" in placed:
        return placed
    return None


def is_vessel(
    identity: str, body: str | None, *, commented: bool, comment_reviews: Iterable[str]
) -> bool:
    """Whether review ``identity`` is one the forge opened for a single comment or reply
    that belongs, canonically, to another review (its header says which), or one left
    empty when its comments were deleted: it says nothing of its own and is no review
    of the source's.

    ``commented``: the review is in the forge's plain "commented" state;
    ``comment_reviews``: the review each of its own comments belongs to, canonically.
    """
    text = body or ""
    if text.strip() or parse(text).marker is not None or not commented:
        return False
    return all(review != identity for review in comment_reviews)


def kept_placement(body: str | None) -> dict[str, Any]:
    """The placement fields a review comment's header keeps: where the forge put it does
    not change with its text, so an edit writes them again."""
    kept = parse(body).attribution or {}
    return {key: kept[key] for key in PLACEMENT_FIELDS if key in kept}
