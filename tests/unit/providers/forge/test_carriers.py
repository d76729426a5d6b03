"""What a forge cannot hold as its own kind, carried by another object, reads back as
the object the source has: a pull request carried by an issue, reviews, review comments
and review requests carried by comments."""

from __future__ import annotations

from typing import Any

from reposync.providers.base import TargetWrite
from reposync.providers.forge.bodies import compose, parse
from reposync.providers.forge.carriers import (
    CARRIER_FIELDS,
    carried_comment_body,
    carried_object,
    carried_pull,
    carried_review_comment_extra,
    carrier_body,
    comment_id,
    comment_identity,
    is_carried,
    is_carrier,
    native_head,
)
from reposync.providers.forge.review_requests import review_request_body
from reposync.sync import objects
from reposync.sync.canonical import ObjectRef
from reposync.sync.vocabulary import Action, ObjectType

T = ObjectType
WHEN = "2026-01-02T03:04:05Z"
SHA = "b" * 40
PULL = ObjectRef(T.PULL_REQUEST, "14")


def write(object_type: ObjectType, payload: dict[str, Any]) -> TargetWrite:
    return TargetWrite(1, Action.CREATE, object_type, None, payload, f"src-{object_type}")


def test_a_carrier_issue_keeps_the_pull_requests_branches_and_merge():
    """A merged pull request carried by an issue reads back with its branches and merge."""
    pull = {
        "title": "Fix",
        "body": "old pr",
        "author": "bob",
        "created_at": WHEN,
        "closed_at": WHEN,
        "assignees": [],
        "merged": True,
        "merged_at": WHEN,
        "draft": False,
        "base_ref": "main",
        "base_sha": "a" * 40,
        "head_ref": "gone",
        "head_sha": SHA,
    }
    body = carrier_body(write(T.PULL_REQUEST, pull), source_label="local:/r")
    parsed = parse(body)
    assert is_carrier(body)
    assert set(parsed.attribution or {}) >= set(CARRIER_FIELDS)
    assert parsed.body == "old pr"
    branches = carried_pull(parsed)
    assert (branches.head_ref, branches.head_sha) == ("gone", SHA)
    assert (branches.base_ref, branches.base_sha) == ("main", "a" * 40)
    assert (branches.merged_at, branches.draft) == (WHEN, False)


def test_an_attributed_issue_is_no_carrier():
    """An ordinary issue with a header (or none) is not taken for a pull request."""
    assert not is_carrier(compose("x", marker="m", attribution={"author": "ann"}))
    assert not is_carrier("plain")
    assert not is_carrier(None)


def test_a_carried_review_reads_back_as_the_review():
    """A review written as a comment reads back with every field it had."""
    review = objects.review(
        "s1",
        WHEN,
        parent=PULL,
        parent_key="#14",
        state="APPROVED",
        body="lgtm",
        commit_id=SHA,
        author="cat",
        submitted_at=WHEN,
    )
    body = carried_comment_body(
        write(T.REVIEW, dict(review.payload)), T.REVIEW, {}, source_label="local:/r"
    )
    read = carried_object(6, WHEN, parse(body), 14)
    assert read is not None
    assert (read.object_type, read.identity, read.refs["parent"]) == (T.REVIEW, "comment-6", PULL)
    assert read.payload == review.payload


def test_a_carried_review_comment_keeps_its_place_and_reply():
    """A review comment of a carrier reads back in its review, at its line, as a reply."""
    comment = objects.review_comment(
        "s2",
        WHEN,
        parent=ObjectRef(T.REVIEW, "s1"),
        parent_key="#14:k",
        in_reply_to=ObjectRef(T.REVIEW_COMMENT, "s0"),
        path="a.py",
        line=4,
        side="LEFT",
        commit_id=SHA,
        body="nit",
        author="dan",
        created_at=WHEN,
    )
    target = write(T.REVIEW_COMMENT, dict(comment.payload))
    extra = carried_review_comment_extra(target, review="comment-6", in_reply_to="comment-8")
    body = carried_comment_body(target, T.REVIEW_COMMENT, extra, source_label=None)
    read = carried_object(7, WHEN, parse(body), 14)
    assert read is not None
    assert read.identity == "comment-7"
    assert read.refs["parent"] == ObjectRef(T.REVIEW, "comment-6")
    assert read.refs["in_reply_to"] == ObjectRef(T.REVIEW_COMMENT, "comment-8")
    assert read.payload == comment.payload


def test_a_projected_review_request_reads_back_as_the_request():
    """The comment that shows a review request is read as the request, not a comment."""
    request = objects.review_request(
        "s3", "", parent=PULL, parent_key="#14", reviewer="eve", requested_at=WHEN
    )
    body = review_request_body(
        write(T.REVIEW_REQUEST, dict(request.payload)), source_label="local:/r", forge="Forgejo"
    )
    read = carried_object(8, WHEN, parse(body), 14)
    assert read is not None
    assert (read.object_type, read.identity) == (T.REVIEW_REQUEST, "comment-8")
    assert read.payload == request.payload


def test_a_projected_review_request_names_the_reviewer_in_code_and_the_forge():
    """No notification goes to a namesake, and the line says which forge cannot request."""
    body = review_request_body(
        write(T.REVIEW_REQUEST, {"reviewer": "eve", "requested_at": None}),
        source_label=None,
        forge="Forgejo",
    )
    assert "`@eve`" in body
    assert body.replace("`@eve`", "").count("@eve") == 0
    assert "Forgejo requests reviews only from its own collaborators" in body


def test_a_plain_comment_carries_nothing():
    """A comment people wrote (with or without a header of reposync's) is a comment."""
    assert carried_object(5, WHEN, parse("hello"), 14) is None
    attributed = compose("hi", marker="m", attribution={"author": "ann"})
    assert carried_object(5, WHEN, parse(attributed), 14) is None


def test_comment_identities_name_the_comment():
    """``comment-<id>`` names a carried object; a native identity is not one."""
    assert comment_identity(42) == "comment-42"
    assert comment_id(comment_identity(42)) == "42"
    assert is_carried("comment-42")
    assert not is_carried("14/3")


def _pull(state: str = "open", merged: bool = False) -> TargetWrite:
    payload = {"state": state, "merged": merged, "head_ref": "feature", "head_sha": SHA}
    return TargetWrite(1, Action.CREATE, T.PULL_REQUEST, None, payload, "src-pr", number=14)


def test_a_pull_request_opens_on_its_head_or_else_its_shadow_branch():
    """The head branch when it is at the head commit, else a shadow branch that is."""

    def refs(at: dict[str, str]) -> Any:
        def listing(branch: str) -> list[dict[str, Any]]:
            return [
                {"ref": f"refs/heads/{name}", "object": {"sha": sha}}
                for name, sha in at.items()
                if name.startswith(branch)
            ]

        return listing

    assert native_head(_pull(), refs({"feature": SHA})) == "feature"
    shadow = {"feature": "c" * 40, "reposync/pr/14/head": SHA}
    assert native_head(_pull(), refs(shadow)) == "reposync/pr/14/head"
    assert native_head(_pull(), refs({"feature": "c" * 40})) is None


def test_a_closed_or_merged_pull_request_is_carried_without_a_look():
    """A pull request the forge cannot hold open is carried; no branch is listed."""
    asked: list[str] = []
    for write in (_pull(state="closed"), _pull(merged=True)):
        assert native_head(write, lambda branch: asked.append(branch)) is None
    assert asked == []
