"""Canonical forge objects: validation, keys, side-neutral hashes, projections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from reposync.sync import objects
from reposync.sync.canonical import ObjectRef
from reposync.sync.objects import MalformedObject, rewrite_issue_references
from reposync.sync.vocabulary import ObjectType, Representation

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ISSUE = ObjectRef(ObjectType.ISSUE, "17")


def make_issue(**changes):
    fields = {"number": 12, "title": "Crash", "author": "ann", "created_at": WHEN}
    fields.update(changes)
    return objects.issue("17", "1", **fields)


def test_issue_keys_and_number_are_identity_not_content():
    """Number, identity and revision stay out of the hash; the key names the number."""
    one = make_issue()
    elsewhere = objects.issue("9001", "44", number=12, title="Crash", author="ann", created_at=WHEN)
    assert (one.object_key, one.unique_key, one.number) == ("issue #12", "#12", 12)
    assert one.content_hash == elsewhere.content_hash
    assert one.order_key == "000000000012"


def test_labels_are_sorted_sets_and_times_normalized():
    """Equal states hash equal whatever order or timezone a provider used."""
    a = make_issue(labels=["bug", "ui"], created_at="2026-01-02T03:04:05Z")
    b = make_issue(
        labels=["ui", "bug", "bug"], created_at=WHEN.astimezone(timezone(timedelta(hours=2)))
    )
    assert a.payload["labels"] == ["bug", "ui"]
    assert a.content_hash == b.content_hash


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"title": ""}, "title must not be empty"),
        ({"state": "merged"}, "state must be one of"),
        ({"number": 0}, "number must be a positive integer"),
        ({"created_at": "yesterday"}, "not an ISO 8601 time"),
        ({"created_at": datetime(2026, 1, 1)}, "time without a timezone"),
        ({"author": 7}, "author must be a string"),
    ],
)
def test_malformed_payloads_are_refused_with_the_field_named(changes, message):
    """A provider's bad data is a clear MalformedObject, never a half-built object."""
    with pytest.raises(MalformedObject, match=message):
        make_issue(**changes)


def test_label_colors_are_normalized_and_checked():
    """``#A1B2C3`` and ``a1b2c3`` are the same color; ``red`` is not a color."""
    assert objects.label("1", "1", name="bug", color="#A1B2C3").payload["color"] == "a1b2c3"
    with pytest.raises(MalformedObject, match="6 hex digits"):
        objects.label("1", "1", name="bug", color="red")


def test_comments_match_on_parent_and_content_and_keep_the_parent_out_of_the_hash():
    """A comment's unique key is its parent's key + its content; the parent is a ref."""
    comment = objects.issue_comment(
        "5", "1", parent=ISSUE, parent_key="#12", body="hi", author="bob", created_at=WHEN
    )
    moved = objects.issue_comment(
        "5",
        "1",
        parent=ObjectRef(ObjectType.ISSUE, "99"),
        parent_key="#12",
        body="hi",
        author="bob",
        created_at=WHEN,
    )
    assert comment.refs == {"parent": ISSUE}
    assert comment.unique_key == f"#12:{comment.content_hash}"
    assert comment.content_hash == moved.content_hash


def test_a_comment_cannot_hang_on_a_label():
    """Structural references are type-checked."""
    with pytest.raises(MalformedObject, match="parent must reference"):
        objects.issue_comment(
            "5",
            "1",
            parent=ObjectRef(ObjectType.LABEL, "1"),
            parent_key=None,
            body="x",
            author="bob",
            created_at=WHEN,
        )


def test_review_comment_replies_reference_their_parent_comment():
    """in_reply_to is a structural ref; the payload only says it is a reply."""
    review = ObjectRef(ObjectType.REVIEW, "3")
    reply = objects.review_comment(
        "8",
        "1",
        parent=review,
        parent_key="#4/x",
        path="a.py",
        line=3,
        commit_id="c" * 40,
        body="agreed",
        author="ann",
        created_at=WHEN,
        in_reply_to=ObjectRef(ObjectType.REVIEW_COMMENT, "7"),
    )
    assert reply.refs["in_reply_to"] == ObjectRef(ObjectType.REVIEW_COMMENT, "7")
    assert reply.payload["is_reply"] is True


def test_a_merged_pull_request_must_be_closed():
    """merged implies closed."""
    with pytest.raises(MalformedObject, match="must be closed"):
        objects.pull_request(
            "1",
            "1",
            number=3,
            title="t",
            author="a",
            created_at=WHEN,
            base_ref="main",
            base_sha="a" * 40,
            head_ref="f",
            head_sha="b" * 40,
            merged=True,
            state="open",
        )


def test_release_assets_carry_a_content_address():
    """An asset is named by release tag + file name and hashed by its SHA-256."""
    release = ObjectRef(ObjectType.RELEASE, "2")
    asset = objects.release_asset(
        "6",
        "1",
        parent=release,
        parent_key="v1.0",
        name="app.tgz",
        content_type="application/gzip",
        size=3,
        sha256="a" * 64,
    )
    assert asset.unique_key == "v1.0:app.tgz"
    with pytest.raises(MalformedObject, match="64 hex digits"):
        objects.release_asset(
            "6",
            "1",
            parent=release,
            parent_key="v1.0",
            name="x",
            content_type="a/b",
            size=3,
            sha256="nope",
        )


def test_only_reactions_have_a_fixed_representation():
    """Reactions are archive-only everywhere; a review request is the target provider's
    business (a local forge holds it natively, GitHub projects it), so it is native in
    the model and a provider reports any projection per write."""
    assert ObjectType.REVIEW_REQUEST.representation is Representation.NATIVE
    assert ObjectType.REACTION.representation is Representation.ARCHIVE_ONLY
    assert ObjectType.ISSUE.representation is Representation.NATIVE


def test_every_type_but_git_refs_has_a_builder():
    """The builders table covers the whole model (refs, the wiki's too, and HEAD are Git's:
    canonical.py)."""
    assert set(objects.BUILDERS) == set(ObjectType) - {
        ObjectType.GIT_REF,
        ObjectType.WIKI_REF,
        ObjectType.DEFAULT_BRANCH,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fixes #12 and #3", "fixes #112 and #3"),
        ("see #12.", "see #112."),
        ("(#12)", "(#112)"),
        ("issue#12 stays", "issue#12 stays"),  # not a reference: glued to a word
        ("&#12; is an HTML entity", "&#12; is an HTML entity"),
        ("url/#12 anchor", "url/#12 anchor"),
        ("##12 heading-ish", "##12 heading-ish"),
        ("#123 is another issue", "#123 is another issue"),
    ],
)
def test_issue_references_are_rewritten_only_where_they_are_references(text, expected):
    """``#N`` tokens map to the target's numbers; lookalikes stay untouched."""
    assert rewrite_issue_references(text, {12: 112}) == expected


def test_no_mapping_means_no_rewriting():
    """Preserved numbers: bodies are written byte for byte."""
    assert rewrite_issue_references("#12", {}) == "#12"


def test_creation_order_compares_numeric_ids_as_numbers():
    """Same time: comment "9" comes before reply "10"."""
    nine = objects.issue_comment(
        "9", "1", parent=ISSUE, parent_key="#1", body="a", author="x", created_at=WHEN
    )
    ten = objects.issue_comment(
        "10", "1", parent=ISSUE, parent_key="#1", body="b", author="x", created_at=WHEN
    )
    assert nine.order_key < ten.order_key


def test_reactions_hang_on_issues_and_comments_only():
    """A reaction's parent is type-checked like every other reference."""
    with pytest.raises(MalformedObject, match="parent must reference"):
        objects.reaction(
            "1",
            "1",
            parent=ObjectRef(ObjectType.LABEL, "1"),
            parent_key=None,
            content="+1",
            user="ann",
        )
