"""Pinned canonical objects: hashes and keys are persisted (ObjectLinks, stored payloads),
so a builder change that moves any of them would re-sync every Binding.

The pins were taken before the field lists moved into ``reposync.sync.fields``; they
must never change unless ``MAPPER_VERSION`` does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from reposync.sync import objects
from reposync.sync.canonical import CanonicalObject, ObjectRef
from reposync.sync.vocabulary import ObjectType as T

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LATER = "2026-02-03T04:05:06+02:00"
SHA_A, SHA_B = "a" * 40, "b" * 40
ISSUE = ObjectRef(T.ISSUE, "17")
PULL = ObjectRef(T.PULL_REQUEST, "18")
REVIEW = ObjectRef(T.REVIEW, "18/5")
RELEASE = ObjectRef(T.RELEASE, "9")
COMMENT = ObjectRef(T.REVIEW_COMMENT, "7")

SAMPLES = [
    ("label minimal", T.LABEL, "1", "r1", {"name": "bug"}),
    (
        "label full",
        T.LABEL,
        "2",
        "r2",
        {"name": "Good first issue ✨", "color": "#A1B2C3", "description": "for newcomers"},
    ),
    ("milestone minimal", T.MILESTONE, "1", "", {"title": "v1.0"}),
    (
        "milestone full",
        T.MILESTONE,
        "2",
        "x",
        {"title": "v2", "description": "two", "state": "closed", "due_on": LATER},
    ),
    (
        "issue minimal",
        T.ISSUE,
        "17",
        "1",
        {"number": 12, "title": "Crash", "author": "ann", "created_at": WHEN},
    ),
    (
        "issue full",
        T.ISSUE,
        "18",
        "2",
        {
            "number": 13,
            "title": "Lock",
            "body": "text\n",
            "state": "closed",
            "state_reason": "not_planned",
            "labels": ["ui", "bug", "bug"],
            "milestone": "v1.0",
            "assignees": ["zed", "amy"],
            "author": "ann",
            "created_at": "2026-01-02T03:04:05Z",
            "closed_at": LATER,
            "locked": True,
            "active_lock_reason": "too heated",
        },
    ),
    (
        "issue locked without reason",
        T.ISSUE,
        "19",
        "3",
        {
            "number": 14,
            "title": "L",
            "author": "a",
            "created_at": WHEN,
            "locked": True,
            "milestone": "",
        },
    ),
    (
        "pull request minimal",
        T.PULL_REQUEST,
        "20",
        "1",
        {
            "number": 15,
            "title": "Fix",
            "author": "bob",
            "created_at": WHEN,
            "base_ref": "main",
            "base_sha": SHA_A,
            "head_ref": "fix",
            "head_sha": SHA_B,
        },
    ),
    (
        "pull request full",
        T.PULL_REQUEST,
        "21",
        "1",
        {
            "number": 16,
            "title": "Feat",
            "body": "b",
            "state": "closed",
            "merged": True,
            "merged_at": LATER,
            "draft": True,
            "base_ref": "main",
            "base_sha": SHA_A,
            "head_ref": "feat",
            "head_sha": SHA_B,
            "labels": ["x"],
            "milestone": "v2",
            "assignees": ["c"],
            "author": "bob",
            "created_at": WHEN,
            "closed_at": LATER,
        },
    ),
    ("release minimal", T.RELEASE, "9", "1", {"tag": "v1.0", "author": "ann", "created_at": WHEN}),
    (
        "release full",
        T.RELEASE,
        "10",
        "1",
        {
            "tag": "v2.0",
            "name": "Two",
            "body": "notes",
            "draft": True,
            "prerelease": True,
            "author": "ann",
            "created_at": LATER,
            "published_at": LATER,
        },
    ),
    (
        "issue comment",
        T.ISSUE_COMMENT,
        "5",
        "1",
        {"parent": ISSUE, "parent_key": "#12", "body": "hi", "author": "bob", "created_at": WHEN},
    ),
    (
        "issue comment on a pull request, no key",
        T.ISSUE_COMMENT,
        "6",
        "1",
        {"parent": PULL, "parent_key": None, "body": "", "author": "bob", "created_at": LATER},
    ),
    (
        "review minimal",
        T.REVIEW,
        "18/5",
        "1",
        {
            "parent": PULL,
            "parent_key": "#15",
            "state": "APPROVED",
            "commit_id": SHA_B,
            "author": "cat",
            "submitted_at": WHEN,
        },
    ),
    (
        "review full",
        T.REVIEW,
        "18/6",
        "1",
        {
            "parent": PULL,
            "parent_key": "#15",
            "state": "CHANGES_REQUESTED",
            "body": "no",
            "commit_id": SHA_B,
            "author": "cat",
            "submitted_at": None,
        },
    ),
    (
        "review comment",
        T.REVIEW_COMMENT,
        "7",
        "1",
        {
            "parent": REVIEW,
            "parent_key": "#15:sha256:x",
            "path": "a.py",
            "line": 3,
            "commit_id": SHA_B,
            "body": "nit",
            "author": "cat",
            "created_at": WHEN,
        },
    ),
    (
        "review comment reply",
        T.REVIEW_COMMENT,
        "10",
        "1",
        {
            "parent": REVIEW,
            "parent_key": None,
            "path": "a.py",
            "line": None,
            "side": "LEFT",
            "commit_id": SHA_B,
            "body": "ok",
            "author": "dan",
            "created_at": LATER,
            "in_reply_to": COMMENT,
        },
    ),
    (
        "review request minimal",
        T.REVIEW_REQUEST,
        "18:eve",
        "",
        {"parent": PULL, "parent_key": "#15", "reviewer": "eve"},
    ),
    (
        "review request timed",
        T.REVIEW_REQUEST,
        "3",
        "1",
        {"parent": PULL, "parent_key": "#15", "reviewer": "fay", "requested_at": WHEN},
    ),
    (
        "release asset",
        T.RELEASE_ASSET,
        "4",
        "1",
        {
            "parent": RELEASE,
            "parent_key": "v1.0",
            "name": "app.tgz",
            "content_type": "application/gzip",
            "size": 3,
            "sha256": "c" * 64,
        },
    ),
    (
        "reaction minimal",
        T.REACTION,
        "8",
        "1",
        {"parent": ISSUE, "parent_key": "#12", "content": "heart", "user": "gus"},
    ),
    (
        "reaction timed",
        T.REACTION,
        "9",
        "1",
        {"parent": COMMENT, "parent_key": None, "content": "+1", "user": "gus", "created_at": WHEN},
    ),
]


#: (content hash, object key, unique key, order key, number, refs) of each sample.
PINNED: dict[str, tuple[Any, ...]] = {
    "label minimal": (
        "sha256:59f649fd0a09b4d0e694ba2f8d0511e072ee5eca20bcc38f43fb15e21dee7d6c",
        "label bug",
        "bug",
        "1",
        None,
        {},
    ),
    "label full": (
        "sha256:e52f8c3311871895dc7f489a7f241e2b460e1b8385430d0c7adaec83dfe3e03c",
        "label Good first issue ✨",
        "Good first issue ✨",
        "2",
        None,
        {},
    ),
    "milestone minimal": (
        "sha256:0a3722710fd8613f893392323517a053a0a3184f0d86c6edf094683c87878259",
        "milestone v1.0",
        "v1.0",
        "1",
        None,
        {},
    ),
    "milestone full": (
        "sha256:c91c7d76a564f7fa8717d9f73cd9f5ec3196d031348f7729f9a8fe87116cde6c",
        "milestone v2",
        "v2",
        "2",
        None,
        {},
    ),
    "issue minimal": (
        "sha256:ad712d35c66e476e285b3dea5b22fc933b78ef78389730165d8f3b4c8126273a",
        "issue #12",
        "#12",
        "000000000012",
        12,
        {},
    ),
    "issue full": (
        "sha256:27b6a62a24ebdba7477fc88f4d34c9a5ff2de952905f9eaffbb0524ec6cd6a8d",
        "issue #13",
        "#13",
        "000000000013",
        13,
        {},
    ),
    "issue locked without reason": (
        "sha256:f53f0b0e6345c0dcf5e492f6e7af463945349d8b2ec25ae6a3e202c69952ca66",
        "issue #14",
        "#14",
        "000000000014",
        14,
        {},
    ),
    "pull request minimal": (
        "sha256:4f92d9f4e8e953ce1a01a1f3d3929f77fe47996c97711837f4bc82e1bcfa5f86",
        "pull request #15",
        "#15",
        "000000000015",
        15,
        {},
    ),
    "pull request full": (
        "sha256:9a14433c086f750f169958dcd8a73c6e7063996a2e81e0a5862b86949dcbab64",
        "pull request #16",
        "#16",
        "000000000016",
        16,
        {},
    ),
    "release minimal": (
        "sha256:2da18cd4c52d5316aa774e4582da868fe28d9ce5ad9c9507a6755550904dffa9",
        "release v1.0",
        "v1.0",
        "2026-01-02T03:04:05Z|000000000009",
        None,
        {},
    ),
    "release full": (
        "sha256:6391e53b4532f58011e4e86b52d2eaec849fc3f93be77e6231ec255b71547434",
        "release v2.0",
        "v2.0",
        "2026-02-03T02:05:06Z|000000000010",
        None,
        {},
    ),
    "issue comment": (
        "sha256:414a4aa4918754c3282ce34361a001805e7945c2cdc3850c93c01deb7cab0c28",
        "comment 5 on #12",
        "#12:sha256:414a4aa4918754c3282ce34361a001805e7945c2cdc3850c93c01deb7cab0c28",
        "2026-01-02T03:04:05Z|000000000005",
        None,
        {"parent": ("issue", "17")},
    ),
    "issue comment on a pull request, no key": (
        "sha256:2ec0814a1216052e05c5fad1ba4b4994e58efe4e11ea3cf0bbf71e7e44ab9e8a",
        "comment 6 on 18",
        None,
        "2026-02-03T02:05:06Z|000000000006",
        None,
        {"parent": ("pull_request", "18")},
    ),
    "review minimal": (
        "sha256:b7a5b37665184f78557af4e4880b531542a2c8834c7970da804c1fbd4f5062b9",
        "review 18/5 on #15",
        "#15:sha256:b7a5b37665184f78557af4e4880b531542a2c8834c7970da804c1fbd4f5062b9",
        "2026-01-02T03:04:05Z|18/5",
        None,
        {"parent": ("pull_request", "18")},
    ),
    "review full": (
        "sha256:f26aa05171eb4787c644f236f2f5fa02bacdb199f0eeef351dd1fa9934bc820a",
        "review 18/6 on #15",
        "#15:sha256:f26aa05171eb4787c644f236f2f5fa02bacdb199f0eeef351dd1fa9934bc820a",
        "|18/6",
        None,
        {"parent": ("pull_request", "18")},
    ),
    "review comment": (
        "sha256:02eeb4093724ddcb7d4887665c3a9d09e1e5575c1abf5c15d75c7f894b268b97",
        "review comment 7 on #15:sha256:x",
        "#15:sha256:x:sha256:02eeb4093724ddcb7d4887665c3a9d09e1e5575c1abf5c15d75c7f894b268b97",
        "2026-01-02T03:04:05Z|000000000007",
        None,
        {"parent": ("review", "18/5")},
    ),
    "review comment reply": (
        "sha256:5161fe1fcd8024e4950965fc899e00393c2e112f6de908f2b9cfe99a5ae4d3b0",
        "review comment 10 on 18/5",
        None,
        "2026-02-03T02:05:06Z|000000000010",
        None,
        {"parent": ("review", "18/5"), "in_reply_to": ("review_comment", "7")},
    ),
    "review request minimal": (
        "sha256:1b0d97a9e8211588be65baeccf70eff5f0e0b284c8d4c17bfc9adda5bcc8f5c2",
        "review request eve on #15",
        "#15:reviewer eve",
        "|18:eve",
        None,
        {"parent": ("pull_request", "18")},
    ),
    "review request timed": (
        "sha256:b47684a11e1160ae2e0e44259b52fe43b59c5c3712bfd76e532d079355d780f1",
        "review request fay on #15",
        "#15:reviewer fay",
        "2026-01-02T03:04:05Z|000000000003",
        None,
        {"parent": ("pull_request", "18")},
    ),
    "release asset": (
        "sha256:f57831d81ea14b955b0f3dd44a165732ed3b633cf59c1984c411392b51ef58df",
        "asset app.tgz of v1.0",
        "v1.0:app.tgz",
        "4",
        None,
        {"parent": ("release", "9")},
    ),
    "reaction minimal": (
        "sha256:a8b29b880a0003236c0827e6a3ea99605daedad29675748dd1e274fdc45e0d93",
        "reaction heart by gus on #12",
        "#12:gus heart",
        "8",
        None,
        {"parent": ("issue", "17")},
    ),
    "reaction timed": (
        "sha256:1e678ce51864af07cde5c2431303981bc812711b7aa29f89b1d3f8f036b62e50",
        "reaction +1 by gus on 7",
        None,
        "9",
        None,
        {"parent": ("review_comment", "7")},
    ),
}

#: Refused samples: (sample, changed fields, the exact message).
MALFORMED = [
    ("label minimal", dict(name=""), "name must not be empty"),
    ("label minimal", dict(name=3), "name must be a string, not int"),
    ("label minimal", dict(color="red"), "color must be 6 hex digits, not 'red'"),
    ("label minimal", dict(color=None), "color must be a string, not NoneType"),
    ("label minimal", dict(description=None), "description must be a string, not NoneType"),
    (
        "milestone minimal",
        dict(state="done"),
        "state must be one of ('open', 'closed'), not 'done'",
    ),
    ("milestone minimal", dict(due_on="soon"), "not an ISO 8601 time: 'soon'"),
    ("milestone minimal", dict(description=3), "description must be a string, not int"),
    ("issue minimal", dict(number=0), "number must be a positive integer, not 0"),
    ("issue minimal", dict(number=True), "number must be a positive integer, not True"),
    ("issue minimal", dict(title=" "), "title must not be empty"),
    (
        "issue minimal",
        dict(state_reason="duplicate"),
        "state_reason must be one of (None, 'completed', 'not_planned', 'reopened')"
        ", not 'duplicate'",
    ),
    ("issue minimal", dict(labels=["ok", ""]), "labels must not be empty"),
    ("issue minimal", dict(assignees=[None]), "assignees must be a string, not NoneType"),
    ("issue minimal", dict(milestone=5), "milestone must be a string, not int"),
    (
        "issue minimal",
        dict(created_at=datetime(2026, 1, 1)),
        "time without a timezone: datetime.datetime(2026, 1, 1, 0, 0)",
    ),
    (
        "issue minimal",
        dict(active_lock_reason="spam"),
        "an issue that is not locked has no lock reason",
    ),
    (
        "issue minimal",
        dict(locked=True, active_lock_reason="rude"),
        "active_lock_reason must be one of (None, 'off-topic', 'too heated', 'resolved', 'spam')"
        ", not 'rude'",
    ),
    (
        "issue minimal",
        dict(title="", active_lock_reason="spam"),
        "an issue that is not locked has no lock reason",
    ),
    ("issue minimal", dict(title="", number=-1), "number must be a positive integer, not -1"),
    ("pull request minimal", dict(merged=True), "a merged pull request must be closed"),
    ("pull request minimal", dict(head_sha=""), "head_sha must not be empty"),
    ("pull request minimal", dict(title="", merged=True), "a merged pull request must be closed"),
    ("release minimal", dict(tag=""), "tag must not be empty"),
    ("release minimal", dict(author=None), "author must be a string, not NoneType"),
    (
        "issue comment",
        dict(parent=ObjectRef(T.LABEL, "1")),
        "parent must reference one of ['issue', 'pull_request']"
        ", not ObjectRef(object_type=<ObjectType.LABEL: 'label'>, identity='1')",
    ),
    ("issue comment", dict(body=None), "body must be a string, not NoneType"),
    (
        "review minimal",
        dict(state="LGTM"),
        "state must be one of ('APPROVED', 'CHANGES_REQUESTED', "
        "'COMMENTED', 'DISMISSED', 'PENDING')"
        ", not 'LGTM'",
    ),
    (
        "review minimal",
        dict(parent=ISSUE),
        "parent must reference one of ['pull_request']"
        ", not ObjectRef(object_type=<ObjectType.ISSUE: 'issue'>, identity='17')",
    ),
    ("review comment", dict(line=0), "line must be a positive integer or None, not 0"),
    ("review comment", dict(line="3"), "line must be a positive integer or None, not '3'"),
    ("review comment", dict(side="UP"), "side must be one of ('LEFT', 'RIGHT'), not 'UP'"),
    (
        "review comment",
        dict(in_reply_to=ISSUE),
        "parent must reference one of ['review_comment']"
        ", not ObjectRef(object_type=<ObjectType.ISSUE: 'issue'>, identity='17')",
    ),
    ("review request minimal", dict(reviewer=""), "reviewer must not be empty"),
    ("release asset", dict(size=-1), "size must be a non-negative integer, not -1"),
    (
        "release asset",
        dict(sha256="C" * 64),
        "sha256 must be 64 hex digits"
        ", not 'CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC'",
    ),
    ("release asset", dict(name=""), "name must not be empty"),
    (
        "reaction minimal",
        dict(content="tada"),
        "content must be one of ('+1', '-1', 'laugh', 'confused', "
        "'heart', 'hooray', 'rocket', 'eyes')"
        ", not 'tada'",
    ),
    (
        "reaction minimal",
        dict(parent=ObjectRef(T.REVIEW, "1")),
        "parent must reference one of ['issue', 'pull_request', 'issue_comment', "
        "'review_comment', 'release']"
        ", not ObjectRef(object_type=<ObjectType.REVIEW: 'review'>, identity='1')",
    ),
    ("reaction minimal", dict(user=""), "user must not be empty"),
]


def build(sample: str, **changes: Any) -> CanonicalObject:
    [(object_type, identity, revision, fields)] = [
        (t, i, r, f) for name, t, i, r, f in SAMPLES if name == sample
    ]
    return objects.BUILDERS[object_type](identity, revision, **{**fields, **changes})


def test_every_type_has_a_sample():
    """The pins cover every type with a builder."""
    assert {t for _, t, *_ in SAMPLES} == set(objects.BUILDERS)


@pytest.mark.parametrize("sample", list(PINNED))
def test_hashes_and_keys_are_pinned(sample):
    """Each sample builds to exactly the hash, keys, order and refs it always had."""
    obj = build(sample)
    refs = {name: (ref.object_type.value, ref.identity) for name, ref in obj.refs.items()}
    assert (
        obj.content_hash,
        obj.object_key,
        obj.unique_key,
        obj.order_key,
        obj.number,
        refs,
    ) == PINNED[sample]


@pytest.mark.parametrize(("sample", "changes", "message"), MALFORMED)
def test_refusals_name_the_field_as_before(sample, changes, message):
    """Malformed fields are refused with the same message, first fault first."""
    with pytest.raises(objects.MalformedObject) as refused:
        build(sample, **changes)
    assert str(refused.value) == message
