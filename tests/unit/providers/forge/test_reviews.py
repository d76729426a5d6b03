"""A review or review comment a forge shows otherwise than the source had it says so in
its header and visible line, is counted as the data gap it is, and reads back as the
source's."""

from __future__ import annotations

from typing import Any

import pytest

from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose, parse
from reposync.providers.forge.reviews import (
    GONE_COMMENT,
    PLACEMENT_FIELDS,
    is_vessel,
    kept_placement,
    native_review_identity,
    placed_review,
    placement_representation,
    review_body,
    review_comment_body,
    review_representation,
    review_state_notes,
)
from reposync.sync.fields import REVIEW_STATES
from reposync.sync.vocabulary import Action, ObjectType, Representation

WHEN = "2026-01-02T03:04:05Z"


def write(object_type: ObjectType, payload: dict[str, Any]) -> TargetWrite:
    return TargetWrite(1, Action.CREATE, object_type, None, payload, "src-1")


def review(state: str) -> TargetWrite:
    return write(
        ObjectType.REVIEW,
        {"state": state, "body": "ok", "commit_id": "c", "author": "cat", "submitted_at": WHEN},
    )


@pytest.mark.parametrize("state", sorted(REVIEW_STATES))
def test_a_state_the_forge_cannot_give_is_a_comment_that_says_so(state):
    """Approvals, change requests, dismissals and drafts are shown as comments, and the
    visible line says why in the forge's name; the header keeps the state either way."""
    notes = review_state_notes("Forgejo")
    body = review_body(review(state), source_label=None, notes=notes)
    parsed = parse(body)
    assert (parsed.attribution or {})["state"] == state
    if state in notes:
        assert review_representation(review(state), notes) is Representation.STATE_AS_COMMENT
        assert notes[state] in body
        assert "Forgejo" in notes[state]
    else:
        assert review_representation(review(state), notes) is Representation.ATTRIBUTED
        assert "(" not in body.splitlines()[1]


def test_a_state_the_forge_gives_natively_is_no_data_gap():
    """A provider that can approve (authoring as the reviewer) leaves it out of ``notes``."""
    notes = {k: v for k, v in review_state_notes("Forgejo").items() if k != "APPROVED"}
    assert review_representation(review("APPROVED"), notes) is Representation.ATTRIBUTED


def test_only_the_comment_state_is_given_as_is():
    """Every canonical state but a plain comment needs a note on a sync account's review."""
    assert set(review_state_notes("GitHub")) == set(REVIEW_STATES) - {"COMMENTED"}


@pytest.mark.parametrize(
    ("extra", "representation", "said"),
    [
        ({}, Representation.ATTRIBUTED, None),
        ({"review": "3/9"}, Representation.OWN_REVIEW, "part of review 3/9"),
        ({"review": "3/9", "in_reply_to": "41"}, Representation.REPLY_TO_ROOT, "comment 41"),
        ({"review": "3/9", "in_reply_to": GONE_COMMENT}, Representation.DETACHED_REPLY, "deleted"),
    ],
)
def test_a_placed_comment_keeps_its_place_in_its_header(extra, representation, said):
    """Where the forge put a comment is counted, said in the visible line, and kept."""
    comment = write(
        ObjectType.REVIEW_COMMENT,
        {"commit_id": "c", "author": "dan", "created_at": WHEN, "body": "nit", "path": "a"},
    )
    body = review_comment_body(comment, extra, source_label=None, forge="Forgejo")
    assert placement_representation(extra) is representation
    assert kept_placement(body) == extra
    visible = body.splitlines()[1]
    if said is None:
        assert "(" not in visible
    else:
        assert said in visible
    assert parse(body).body == "nit"


def test_an_edit_keeps_only_the_placement_of_the_header():
    """Placement fields survive an edit; the other header fields are the edit's own."""
    body = compose(
        "x",
        marker="m",
        attribution={"author": "dan", "review": "3/9", "in_reply_to": "41", "path": "a"},
    )
    assert kept_placement(body) == {"review": "3/9", "in_reply_to": "41"}
    assert set(kept_placement(body)) <= set(PLACEMENT_FIELDS)
    assert kept_placement("no header") == {}


def test_a_comment_is_placed_in_the_native_review_its_header_names():
    """Only a native review identity counts as the review a header places a comment in."""
    assert placed_review(compose("x", marker=None, attribution={"review": "3/9"})) == "3/9"
    assert placed_review(compose("x", marker=None, attribution={"review": "comment-9"})) is None
    assert placed_review("plain") is None
    assert native_review_identity(3, 9) == "3/9"


@pytest.mark.parametrize(
    ("body", "commented", "comment_reviews", "vessel"),
    [
        ("", True, ["3/1"], True),  # its comment belongs to review 3/1
        ("", True, [], True),  # left empty when its comments were deleted
        ("", True, ["3/1", "3/9"], False),  # a comment of its own
        ("said something", True, ["3/1"], False),
        ("\n\n<!-- reposync:marker m -->", True, ["3/1"], False),  # reposync's own review
        ("", False, ["3/1"], False),  # an approval is someone's review
    ],
)
def test_a_vessel_is_a_review_that_says_nothing_of_its_own(
    body, commented, comment_reviews, vessel
):
    """A review the forge opened for another review's comment is no review of the source."""
    assert is_vessel("3/9", body, commented=commented, comment_reviews=comment_reviews) is vessel
