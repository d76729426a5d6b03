"""Pinned provider mappings: GitHub's JSON and the local authoring API build exactly the
canonical objects (hashes, keys, creation order) they built before the field lists moved
into ``reposync.sync.fields``. Hashes are persisted: these pins never change unless
``MAPPER_VERSION`` does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reposync.providers.github import objects as gh
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.providers.local.forge import LocalForge
from reposync.sync.canonical import CanonicalObject
from reposync.sync.vocabulary import ObjectType as T
from tests.gitrepo import init_bare

WHEN = "2026-01-02T03:04:05Z"
LATER = "2026-02-03T04:05:06Z"
SHA_A, SHA_B = "a" * 40, "b" * 40
HEADER = (
    '<!-- reposync:attribution {"author": "ann", "created_at": "2025-12-01T00:00:00Z",'
    ' "assignees": ["zed"], "closed_at": null, "state_reason": "reopened"} -->\n'
    "> Originally by ann\n\nthe body\n\n<!-- reposync:marker src-17 -->"
)
USER = {"login": "octo"}

USER = {"login": "octo"}


def github_samples():
    issue = {
        "number": 12,
        "title": "Crash",
        "body": "text",
        "state": "closed",
        "state_reason": "duplicate",
        "labels": [{"name": "ui"}, {"name": "bug"}],
        "milestone": {"title": "v1"},
        "assignees": [USER],
        "user": USER,
        "created_at": WHEN,
        "closed_at": LATER,
        "updated_at": LATER,
        "locked": True,
        "active_lock_reason": "resolved",
    }
    pull = {
        "number": 13,
        "title": "Fix",
        "body": HEADER,
        "state": "open",
        "labels": [],
        "milestone": None,
        "assignees": [],
        "user": USER,
        "created_at": WHEN,
        "updated_at": LATER,
        "head": {"ref": "fix", "sha": SHA_B},
        "base": {"ref": "main", "sha": SHA_A},
        "merged_at": None,
        "draft": True,
    }
    carrier_header = (
        '<!-- reposync:attribution {"reposync_type": "pull_request", "author": "bob",'
        ' "created_at": "2025-01-01T00:00:00Z", "closed_at": "2025-02-01T00:00:00Z",'
        ' "assignees": [], "merged": true, "merged_at": "2025-02-01T00:00:00Z",'
        ' "draft": false, "base_ref": "main", "base_sha": "' + SHA_A + '",'
        ' "head_ref": "gone", "head_sha": "' + SHA_B + '"} -->\n> x\n\nold pr'
    )
    carrier = {**pull, "number": 14, "body": carrier_header, "state": "closed"}
    del carrier["head"], carrier["base"]
    review_header = (
        '<!-- reposync:attribution {"reposync_type": "review", "state": "APPROVED",'
        ' "commit_id": "' + SHA_B + '", "author": "cat", "submitted_at": "' + WHEN + '"} -->'
        "\n> x\n\nlgtm"
    )
    rc_header = (
        '<!-- reposync:attribution {"reposync_type": "review_comment", "review": "14/3",'
        ' "review_key": "#14:k", "path": "a.py", "line": 4, "side": "LEFT",'
        ' "commit_id": "' + SHA_B + '", "author": "dan", "created_at": "' + WHEN + '",'
        ' "in_reply_to": "comment-8"} -->\n> x\n\nnit'
    )
    rr_header = (
        '<!-- reposync:attribution {"reposync_type": "review_request", "reviewer": "eve",'
        ' "requested_at": "' + WHEN + '"} -->\n> x\n'
    )

    def comment(ident, body):
        return {
            "id": ident,
            "body": body,
            "user": USER,
            "created_at": WHEN,
            "updated_at": LATER,
            "issue_url": "https://api.github.com/repos/o/r/issues/14",
        }

    return {
        "label": gh.label({"id": 1, "name": "bug", "color": "D73A4A", "description": None}),
        "milestone": gh.milestone(
            {
                "number": 2,
                "title": "v1",
                "description": "first",
                "state": "open",
                "due_on": "2026-03-01T08:00:00Z",
                "updated_at": LATER,
            }
        ),
        "issue": gh.issue(issue),
        "issue attributed": gh.issue({**issue, "number": 15, "body": HEADER, "locked": False}),
        "pull request": gh.pull_request(pull),
        "pull request carried": gh.pull_request(carrier, carrier=True),
        "issue comment": gh.issue_comment(comment(5, "hello"), T.ISSUE),
        "carried review": gh.issue_comment(comment(6, review_header), T.PULL_REQUEST),
        "carried review comment": gh.issue_comment(comment(7, rc_header), T.PULL_REQUEST),
        "carried review request": gh.issue_comment(comment(8, rr_header), T.PULL_REQUEST),
        "review": gh.review(
            {
                "id": 3,
                "body": "ok",
                "state": "COMMENTED",
                "commit_id": SHA_B,
                "user": USER,
                "submitted_at": WHEN,
            },
            13,
        ),
        "review comment": gh.review_comment(
            {
                "id": 9,
                "body": "nit",
                "path": "b.py",
                "line": None,
                "side": None,
                "commit_id": SHA_B,
                "user": USER,
                "created_at": WHEN,
                "updated_at": LATER,
                "in_reply_to_id": 4,
            },
            "13/3",
            "#13:k",
        ),
        "review request": gh.review_request(13, "fay"),
        "release": gh.release(
            {
                "id": 10,
                "tag_name": "v1.0",
                "name": None,
                "body": "notes",
                "draft": False,
                "prerelease": True,
                "author": USER,
                "created_at": WHEN,
                "published_at": LATER,
            }
        ),
        "release asset": gh.release_asset(
            {
                "id": 11,
                "name": "checksums.file.txt",
                "label": "checksums file.txt",
                "content_type": "text/plain",
                "size": 3,
                "digest": "sha256:" + "c" * 64,
                "updated_at": LATER,
            },
            "10",
            "v1.0",
        ),
    }


def local_samples(forge):
    label = forge.create_label("bug", color="D73A4A", description="Something is broken")
    milestone = forge.create_milestone("v1.0", description="first", state="closed", due_on=LATER)
    issue = forge.create_issue(
        "Crash",
        author="ann",
        body="b",
        created_at=WHEN,
        labels=["bug"],
        milestone="v1.0",
        assignees=["zed", "amy"],
        state="closed",
        state_reason="completed",
        closed_at=LATER,
        locked=True,
        active_lock_reason="spam",
    )
    issue_min = forge.create_issue("Min", author="ann", created_at=WHEN, number=40)
    pull = forge.create_pull_request(
        "Fix",
        author="bob",
        base_ref="main",
        base_sha=SHA_A,
        head_ref="fix",
        head_sha=SHA_B,
        created_at=WHEN,
        state="closed",
        merged=True,
        merged_at=LATER,
        draft=False,
        labels=["bug"],
        milestone="v1.0",
        closed_at=LATER,
    )
    comment = forge.add_comment(T.ISSUE, issue, "hi", author="cat", created_at=WHEN)
    review = forge.add_review(
        pull, state="APPROVED", body="lgtm", commit_id=SHA_B, author="dan", submitted_at=WHEN
    )
    rc = forge.add_review_comment(
        review, path="a.py", line=3, body="nit", commit_id=SHA_B, author="dan", created_at=WHEN
    )
    reply = forge.add_review_comment(
        review,
        path="a.py",
        line=None,
        body="ok",
        commit_id=SHA_B,
        author="eve",
        in_reply_to=rc,
        side="LEFT",
        created_at=LATER,
    )
    request = forge.request_review(pull, "fay")
    request_timed = forge.request_review(pull, "gus", requested_at=WHEN)
    release = forge.create_release(
        "v1.0",
        author="ann",
        name="One",
        body="notes",
        draft=False,
        prerelease=True,
        created_at=WHEN,
        published_at=LATER,
    )
    asset = forge.upload_asset(release, "app.tgz", b"abc", "application/gzip")
    reaction = forge.add_reaction(T.ISSUE_COMMENT, comment, "heart", "hal", created_at=WHEN)
    many = forge.create_many(
        T.ISSUE,
        [
            {"title": "m1", "author": "a", "created_at": WHEN, "number": 50},
            {"title": "m2", "author": "b", "created_at": LATER, "labels": ["x", "a"], "number": 51},
        ],
    )
    many_comments = forge.create_many(
        T.REVIEW_COMMENT,
        [
            {
                "path": "c.py",
                "line": 1,
                "commit_id": SHA_B,
                "body": "m",
                "author": "i",
                "created_at": WHEN,
                "in_reply_to": rc,
            }
        ],
        parent=(T.REVIEW, review),
    )
    return {
        "label": (T.LABEL, label),
        "milestone": (T.MILESTONE, milestone),
        "issue": (T.ISSUE, issue),
        "issue minimal": (T.ISSUE, issue_min),
        "pull request": (T.PULL_REQUEST, pull),
        "issue comment": (T.ISSUE_COMMENT, comment),
        "review": (T.REVIEW, review),
        "review comment": (T.REVIEW_COMMENT, rc),
        "review comment reply": (T.REVIEW_COMMENT, reply),
        "review request": (T.REVIEW_REQUEST, request),
        "review request timed": (T.REVIEW_REQUEST, request_timed),
        "release": (T.RELEASE, release),
        "release asset": (T.RELEASE_ASSET, asset),
        "reaction": (T.REACTION, reaction),
        "many 1": (T.ISSUE, many[0]),
        "many 2": (T.ISSUE, many[1]),
        "many reply": (T.REVIEW_COMMENT, many_comments[0]),
    }


#: (content hash, unique key, order key) of each GitHub sample.
GITHUB_PINNED: dict[str, tuple[Any, ...]] = {
    "label": (
        "sha256:4295bd394f041d9f0e9ea8074c65cda2081da2efbd2d6be23685b9ef2bce2098",
        "bug",
        "1",
    ),
    "milestone": (
        "sha256:943fffe1e88cc9a8a6675c375fbe1351b3e9e9630125b218751819873c927da0",
        "v1",
        "2",
    ),
    "issue": (
        "sha256:ae8977180d13b54f25261ed93de21d03a4a6929d642034e9909b49a6dc07cac4",
        "#12",
        "000000000012",
    ),
    "issue attributed": (
        "sha256:59c8a79006a8ea6dd96380a4dd1af4f357448f122e5f1094ab94f66e788cb4e1",
        "#15",
        "000000000015",
    ),
    "pull request": (
        "sha256:bdf2fe1e6541b18885800a39e564dc86bc85642afdbf70be1bb03fa7e19f4468",
        "#13",
        "000000000013",
    ),
    "pull request carried": (
        "sha256:6cef9ad2d66683616c594de598640de97c8a47f18b22b8df098d8d62ce0f931e",
        "#14",
        "000000000014",
    ),
    "issue comment": (
        "sha256:faa2ce9c40494a6cdcc405c701e6c9d5c0f348a6d01c01370ad4118d03bec75c",
        "#14:sha256:faa2ce9c40494a6cdcc405c701e6c9d5c0f348a6d01c01370ad4118d03bec75c",
        "2026-01-02T03:04:05Z|000000000005",
    ),
    "carried review": (
        "sha256:efec3dfb14ebc446af5cb205b988f5fe802c9d1e4ea582a31d3f0f6b27e12bbc",
        "#14:sha256:efec3dfb14ebc446af5cb205b988f5fe802c9d1e4ea582a31d3f0f6b27e12bbc",
        "2026-01-02T03:04:05Z|comment-6",
    ),
    "carried review comment": (
        "sha256:83d67216019d0f04966732510276d436eed6d69f17253d827f4d91f57d7bd897",
        "#14:k:sha256:83d67216019d0f04966732510276d436eed6d69f17253d827f4d91f57d7bd897",
        "2026-01-02T03:04:05Z|comment-7",
    ),
    "carried review request": (
        "sha256:42760930ec61c8a6bcbb8663d89faa5f7ba1ee957d8b9f1231bb7aad3a41c01b",
        "#14:reviewer eve",
        "2026-01-02T03:04:05Z|comment-8",
    ),
    "review": (
        "sha256:ad95730477302a9d22378bbf386181d99760684cf15aaf780643a1512a646b1c",
        "#13:sha256:ad95730477302a9d22378bbf386181d99760684cf15aaf780643a1512a646b1c",
        "2026-01-02T03:04:05Z|13/3",
    ),
    "review comment": (
        "sha256:3af02a33a79c3bd924d8aed851e7f043256b448195f274eb647fa3b77c6085d3",
        "#13:k:sha256:3af02a33a79c3bd924d8aed851e7f043256b448195f274eb647fa3b77c6085d3",
        "2026-01-02T03:04:05Z|000000000009",
    ),
    "review request": (
        "sha256:17470cba0f1d79463a20242e98b8c278649548d7f7f80019a15a14de0b6e3e1b",
        "#13:reviewer fay",
        "|13:fay",
    ),
    "release": (
        "sha256:afc5496a82c9a1b0bc8894ea9396a6856c4ecd57ef5dd8c6d7501f97ca81b1c7",
        "v1.0",
        "2026-01-02T03:04:05Z|000000000010",
    ),
    "release asset": (
        "sha256:e2d2cfef2bfffbc4783f5368440fa7935ec74d65b13da774b96a04234c977705",
        "v1.0:checksums file.txt",
        "11",
    ),
}

#: (content hash, unique key, order key) of each object authored on a new local forge.
LOCAL_PINNED: dict[str, tuple[Any, ...]] = {
    "label": (
        "sha256:ebb8e2999dc7d0d526b19f567cf58b9839ac4ed040a803d823268062820cb2ac",
        "bug",
        "1",
    ),
    "milestone": (
        "sha256:a7788f87e39cbca24c9d927128e593b3621f4f6627eeb91539f0327fa7d0e224",
        "v1.0",
        "1",
    ),
    "issue": (
        "sha256:197665c3be7c14b2c8176b10e7620ea8023ed9803fc96d97cd2eda992caee989",
        "#1",
        "000000000001",
    ),
    "issue minimal": (
        "sha256:31b80117ef41137470a7e8e16e0dc4e0ebf913d409518737a49bdf74d937e44d",
        "#40",
        "000000000040",
    ),
    "pull request": (
        "sha256:8eb0f056faeb61c1d4682a1fdf8ed0457fe08400b11c4e7de1d4ca20567f26e3",
        "#41",
        "000000000041",
    ),
    "issue comment": (
        "sha256:5984267a2fb99ffad6f5df35cbd6eb43eb13f8726d082d80bc75c1ca6daa45de",
        "#1:sha256:5984267a2fb99ffad6f5df35cbd6eb43eb13f8726d082d80bc75c1ca6daa45de",
        "2026-01-02T03:04:05Z|000000000001",
    ),
    "review": (
        "sha256:d864e47513f729151fd0f22dfd9ba5da4a89de611cfaaf63cb08ae869c96d6c6",
        "#41:sha256:d864e47513f729151fd0f22dfd9ba5da4a89de611cfaaf63cb08ae869c96d6c6",
        "2026-01-02T03:04:05Z|000000000001",
    ),
    "review comment": (
        "sha256:85faa7bde9ee8fdce7f2f515eaf7b3addeecb1028bddba0bf398c7b89b1be3dd",
        "#41:sha256:d864e47513f729151fd0f22dfd9ba5da4a89de611cfaaf63cb08ae869c96d6c6:sha256:85faa7bde9ee8fdce7f2f515eaf7b3addeecb1028bddba0bf398c7b89b1be3dd",
        "2026-01-02T03:04:05Z|000000000001",
    ),
    "review comment reply": (
        "sha256:8ed7a5d3989b42793f5a58e3b32a3af26eb53144d2d135bd556e8d2d9826d080",
        "#41:sha256:d864e47513f729151fd0f22dfd9ba5da4a89de611cfaaf63cb08ae869c96d6c6:sha256:8ed7a5d3989b42793f5a58e3b32a3af26eb53144d2d135bd556e8d2d9826d080",
        "2026-02-03T04:05:06Z|000000000002",
    ),
    "review request": (
        "sha256:17470cba0f1d79463a20242e98b8c278649548d7f7f80019a15a14de0b6e3e1b",
        "#41:reviewer fay",
        "|000000000001",
    ),
    "review request timed": (
        "sha256:88f01b12ec34fb40cf9e87160b5841b9a26095c82e1254b1da20ee0ce3e22b61",
        "#41:reviewer gus",
        "2026-01-02T03:04:05Z|000000000002",
    ),
    "release": (
        "sha256:b931094a7f694d7e96415c2c404b407b7eb6d401132d14d16ee89363e32a0593",
        "v1.0",
        "2026-01-02T03:04:05Z|000000000001",
    ),
    "release asset": (
        "sha256:4057c5ab60de28f9ce968184449f416e58a27d7f1f0192159a744fba484f8089",
        "v1.0:app.tgz",
        "1",
    ),
    "reaction": (
        "sha256:0241942cc70ded2ec41b22519d24c02c27aad711f1ceff5ff1e9cd0f8d98605c",
        "#1:sha256:5984267a2fb99ffad6f5df35cbd6eb43eb13f8726d082d80bc75c1ca6daa45de:hal heart",
        "1",
    ),
    "many 1": (
        "sha256:ec8a07b35a24668aa12fec61366ce942756e3c9f76c4940e1cf95b4ed6d7f4f5",
        "#50",
        "000000000050",
    ),
    "many 2": (
        "sha256:dcbbf40abde295b9e931ecb13f2abf8b60f2689f946c891e77e30164411d044f",
        "#51",
        "000000000051",
    ),
    "many reply": (
        "sha256:fd75687debb0ccf8dceef78208f0dbdc5aa3c8eb487b0f5703768ebc013ac500",
        "#41:sha256:d864e47513f729151fd0f22dfd9ba5da4a89de611cfaaf63cb08ae869c96d6c6:sha256:fd75687debb0ccf8dceef78208f0dbdc5aa3c8eb487b0f5703768ebc013ac500",
        "2026-01-02T03:04:05Z|000000000003",
    ),
}


def pinned(obj: CanonicalObject) -> tuple[Any, ...]:
    return (obj.content_hash, obj.unique_key, obj.order_key)


@pytest.fixture
def forge(tmp_path: Path) -> Iterator[ForgeAuthoring]:
    authoring = ForgeAuthoring(LocalForge(init_bare(tmp_path / "repo.git")))
    yield authoring
    authoring.store.close()


def test_githubs_json_maps_to_the_pinned_objects():
    """Every GitHub mapping (native, attributed, carried) hashes as it always did."""
    assert {name: pinned(obj) for name, obj in github_samples().items()} == GITHUB_PINNED


def test_the_authoring_api_stores_the_pinned_objects(forge):
    """Each authoring call (defaults, every field, many at once) stores the same payload."""
    made = local_samples(forge)
    got = {name: pinned(forge.reader.get(t, identity)) for name, (t, identity) in made.items()}
    assert got == LOCAL_PINNED
