"""A hosted forge's JSON reads as canonical objects through the forge's own login
reading, with an attribution header's values in place of what the forge reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reposync.providers.forge import objects as forge_objects
from reposync.providers.forge.bodies import compose, parse
from reposync.sync.canonical import ObjectRef
from reposync.sync.vocabulary import ObjectType

WHEN = "2026-01-02T03:04:05Z"


def shouted(user: Mapping[str, Any] | None) -> str:
    """A login reading unlike any forge's, so the test sees it was used."""
    return str((user or {}).get("login") or "nobody").upper()


def issue_json(body: str) -> dict[str, Any]:
    return {
        "number": 3,
        "title": "T",
        "body": body,
        "state": "open",
        "labels": [{"name": "bug"}],
        "milestone": None,
        "assignees": [{"login": "ann"}],
        "user": {"login": "bot"},
        "created_at": "2030-01-01T00:00:00Z",
        "closed_at": None,
    }


def test_a_conversation_reads_logins_the_forges_way():
    """Without a header, the author and assignees are the forge's, read by its login."""
    data = issue_json("plain")
    fields = forge_objects.conversation(data, parse(data["body"]), shouted)
    assert (fields["author"], fields["assignees"]) == ("BOT", ["ANN"])
    assert fields["created_at"] == "2030-01-01T00:00:00Z"


def test_a_header_wins_over_what_the_forge_reports():
    """The header's author and time replace the token's account and the write's time."""
    body = compose("text", marker="m", attribution={"author": "carol", "created_at": WHEN})
    data = issue_json(body)
    fields = forge_objects.conversation(data, parse(body), shouted)
    assert (fields["author"], fields["created_at"], fields["body"]) == ("carol", WHEN, "text")


def test_a_review_comment_without_a_reply_link_answers_what_its_header_names():
    """The header's in_reply_to names the answered comment where the forge keeps none."""
    body = compose("reply", marker="m", attribution={"in_reply_to": "41"})
    data = {"id": 9, "body": body, "path": "a.py", "commit_id": "c" * 40, "created_at": WHEN}
    comment = forge_objects.review_comment(
        data, "3/7", None, shouted, identity="3/7/9", line=2, side="LEFT", in_reply_to=None
    )
    assert comment.refs["in_reply_to"] == ObjectRef(ObjectType.REVIEW_COMMENT, "41")
    assert (comment.payload["author"], comment.payload["line"]) == ("NOBODY", 2)
