"""Forgejo's JSON as canonical objects: every field of the one description has a Forgejo
source, and what Forgejo keeps otherwise (review states, a line's side, a lock it
cannot set, an attachment's type, its accounts' names) reads as the model has it."""

from __future__ import annotations

from typing import Any

import pytest

from reposync.providers.forge.bodies import compose
from reposync.providers.forgejo import objects as fj
from reposync.providers.forgejo.accounts import People
from reposync.providers.forgejo.writes.context import HEADER_FIELDS
from reposync.sync import objects
from reposync.sync.fields import SHAPES
from reposync.sync.vocabulary import ObjectType

T = ObjectType
WHEN = "2025-01-01T00:00:00Z"
LATER = "2025-02-01T00:00:00Z"
SHA_A, SHA_B = "a" * 40, "b" * 40
USER = {"login": "octo"}
PEOPLE = People({"octocat": "octo"}, may_sudo=False)
#: Types Forgejo's reads never build: reactions are archive-only everywhere.
NOT_READ = {T.REACTION}


def header(**fields: Any) -> str:
    return compose("text", marker=None, attribution=fields)


def samples() -> dict[str, Any]:
    issue = {
        "id": 1,
        "number": 12,
        "title": "Crash",
        "body": "text",
        "state": "closed",
        "labels": [{"name": "bug"}],
        "milestone": {"title": "v1"},
        "assignees": [USER],
        "user": USER,
        "created_at": WHEN,
        "updated_at": LATER,
        "closed_at": LATER,
        "is_locked": True,
    }
    pull = {
        **issue,
        "number": 13,
        "state": "open",
        "closed_at": None,
        "head": {"ref": "fix", "sha": SHA_B},
        "base": {"ref": "main", "sha": SHA_A},
        "merged": False,
        "merged_at": None,
        "draft": False,
    }
    carrier = {
        **issue,
        "number": 14,
        "body": header(
            reposync_type="pull_request",
            head_ref="gone",
            head_sha=SHA_B,
            base_ref="main",
            base_sha=SHA_A,
            merged=True,
            merged_at=LATER,
            draft=False,
        ),
    }

    def comment(ident: int, body: str) -> dict[str, Any]:
        return {
            "id": ident,
            "body": body,
            "user": USER,
            "created_at": WHEN,
            "updated_at": LATER,
            "issue_url": "",
            "pull_request_url": "http://forgejo.test/acme/app/pulls/14",
        }

    review = {
        "id": 3,
        "body": "ok",
        "state": "REQUEST_CHANGES",
        "commit_id": SHA_B,
        "user": USER,
        "submitted_at": WHEN,
        "dismissed": False,
    }
    line_comment = {
        "id": 9,
        "body": "nit",
        "path": "b.py",
        "position": 0,
        "original_position": 4,
        "commit_id": SHA_B,
        "user": USER,
        "created_at": WHEN,
        "updated_at": LATER,
        "pull_request_review_id": 3,
    }
    release = {
        "id": 10,
        "tag_name": "v1.0",
        "name": "One",
        "body": "notes",
        "draft": False,
        "prerelease": False,
        "author": USER,
        "created_at": WHEN,
        "published_at": WHEN,
    }
    asset = {"id": 11, "name": "app.tar.gz", "size": 5, "created_at": WHEN}
    return {
        "label": fj.label({"id": 1, "name": "bug", "color": "D73A4A", "description": ""}),
        "milestone": fj.milestone(
            {"id": 2, "title": "v1", "description": "", "state": "open", "due_on": WHEN}
        ),
        "issue": fj.issue(issue, PEOPLE),
        "pull request": fj.pull_request(pull, PEOPLE),
        "carrier": fj.pull_request(carrier, PEOPLE, carrier=True),
        "comment": fj.issue_comment(comment(5, "hello"), T.PULL_REQUEST, PEOPLE),
        "carried review": fj.issue_comment(
            comment(
                6,
                header(
                    reposync_type="review",
                    state="APPROVED",
                    commit_id=SHA_B,
                    author="cat",
                    submitted_at=WHEN,
                ),
            ),
            T.PULL_REQUEST,
            PEOPLE,
        ),
        "carried review comment": fj.issue_comment(
            comment(
                7,
                header(
                    reposync_type="review_comment",
                    review="comment-6",
                    path="a.py",
                    line=4,
                    side="LEFT",
                    commit_id=SHA_B,
                    author="dan",
                    created_at=WHEN,
                    in_reply_to=None,
                ),
            ),
            T.PULL_REQUEST,
            PEOPLE,
        ),
        "carried review request": fj.issue_comment(
            comment(8, header(reposync_type="review_request", reviewer="eve", requested_at=WHEN)),
            T.PULL_REQUEST,
            PEOPLE,
        ),
        "review": fj.review(review, 13, PEOPLE),
        "review comment": fj.review_comment(
            line_comment, "13/3", "#13:k", PEOPLE, identity="13/3/9"
        ),
        "review request": fj.review_request(13, "fay"),
        "release": fj.release(release, PEOPLE),
        "asset": fj.release_asset(asset, "10", "v1.0", content_type="text/plain", sha256="c" * 64),
    }


def test_every_mapping_passes_every_field_of_its_type(monkeypatch: pytest.MonkeyPatch):
    """Each Forgejo mapping (native, attributed, carried in a comment) names every field
    of its type's description, so none silently falls back to a builder default."""
    given: list[tuple[ObjectType, frozenset[str]]] = []
    for object_type, builder in objects.BUILDERS.items():

        def recording(
            *args: Any, _type: ObjectType = object_type, _builder: Any = builder, **kwargs: Any
        ) -> Any:
            given.append((_type, frozenset(kwargs)))
            return _builder(*args, **kwargs)

        monkeypatch.setattr(objects, builder.__name__, recording)
    samples()
    assert {t for t, _ in given} == set(SHAPES) - NOT_READ
    structure = {"number", "parent", "parent_key", "in_reply_to"}
    for object_type, names in given:
        assert names - structure == {f.name for f in SHAPES[object_type].arguments}, object_type


@pytest.mark.parametrize("object_type", sorted(HEADER_FIELDS, key=str))
def test_the_attribution_header_carries_canonical_fields_only(object_type):
    """What Forgejo's writes put in the attribution header are fields of the type."""
    assert set(HEADER_FIELDS[object_type]) <= set(SHAPES[object_type].names)


def test_what_forgejo_keeps_otherwise_reads_as_the_model_has_it():
    """A change request reads CHANGES_REQUESTED, a line of the old file is LEFT, a
    mapped account reads as the source's login, an issue's own lock reads as a lock
    without a reason, a carrier as the pull request it holds."""
    found = samples()
    assert found["review"].payload["state"] == "CHANGES_REQUESTED"
    assert (found["review comment"].payload["line"], found["review comment"].payload["side"]) == (
        4,
        "LEFT",
    )
    assert found["issue"].payload["author"] == "octocat"
    assert found["issue"].payload["locked"] is True
    assert found["issue"].payload.get("active_lock_reason") is None  # omitted: no reason
    assert (found["carrier"].payload["merged"], found["carrier"].payload["head_ref"]) == (
        True,
        "gone",
    )
    assert fj.review_state({"state": "APPROVED", "dismissed": True}) == "DISMISSED"
    assert fj.review_state({"state": "COMMENT"}) == "COMMENTED"


def test_a_lock_the_api_could_not_set_is_the_header_s():
    """Forgejo shows the issue unlocked; the header keeps the source's lock and reason."""
    data = {
        "number": 3,
        "title": "t",
        "body": header(author="ann", locked=True, active_lock_reason="resolved"),
        "state": "open",
        "user": USER,
        "created_at": WHEN,
        "is_locked": False,
    }
    read = fj.issue(data, PEOPLE).payload
    assert (read["locked"], read["active_lock_reason"], read["author"]) == (
        True,
        "resolved",
        "ann",
    )


def test_an_attachment_s_type_is_its_release_header_s_else_what_its_name_says():
    """A type kept in the release's header by attachment id wins; otherwise the name's."""
    body = compose("notes", marker=None, attribution={fj.ASSETS: {"11": {"content_type": "x/y"}}})
    assert fj.asset_facts(body) == {"11": {"content_type": "x/y"}}
    assert fj.asset_facts("plain notes") == {}
    assert fj.guessed_type("notes.txt") == "text/plain"
    assert fj.guessed_type("blob.unknown-ext") == fj.DEFAULT_CONTENT_TYPE
