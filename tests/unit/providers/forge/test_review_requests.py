"""Review requests a forge cannot make are written as comments on their pull request,
through the forge's own comment requests; a native request can only be withdrawn."""

from __future__ import annotations

from typing import Any

import pytest

from reposync.errors import WriteRefused
from reposync.providers.base import TargetRef, TargetWrite
from reposync.providers.forge.attribution import BatchReferences
from reposync.providers.forge.bodies import parse
from reposync.providers.forge.review_requests import HANDLERS
from reposync.sync.vocabulary import Action, ObjectType, Representation

RR = ObjectType.REVIEW_REQUEST


class Recorder(BatchReferences):
    """A batch context that records the comment requests it is asked to send."""

    def __init__(self) -> None:
        super().__init__("o/r", "Forgejo")
        self.sent: list[tuple[Any, ...]] = []

    def source_label(self, write: TargetWrite) -> str | None:
        return "local:/src"

    def post_comment(self, number: int, body: str) -> object:
        self.sent.append(("post", number, body))
        return 77

    def edit_comment(self, comment: str, body: str) -> None:
        self.sent.append(("edit", comment, body))

    def delete_comment(self, comment: str) -> None:
        self.sent.append(("delete", comment))

    def withdraw_review_request(self, pull: str, login: str) -> None:
        self.sent.append(("withdraw", pull, login))


def request(action: Action, identity: str | None, parent: str | None = "5") -> TargetWrite:
    refs = (
        {} if parent is None else {"parent": TargetRef(ObjectType.PULL_REQUEST, parent, "src-pull")}
    )
    payload = {"reviewer": "carol", "requested_at": "2026-01-02T03:04:05Z"}
    return TargetWrite(1, action, RR, identity, payload, "src-rr", refs=refs)


def test_a_review_request_is_posted_as_a_comment_naming_the_forge():
    """A new request is a comment on its pull request whose header carries it, and
    whose visible line says the forge requests reviews only from its collaborators."""
    ctx = Recorder()
    identity, representation = HANDLERS[(Action.CREATE, RR)](ctx, request(Action.CREATE, None))
    assert (identity, representation) == ("comment-77", Representation.PROJECTED)
    [(verb, number, body)] = ctx.sent
    assert (verb, number) == ("post", 5)
    assert "Forgejo requests reviews only from its own collaborators" in body
    assert (parse(body).attribution or {})["reviewer"] == "carol"


def test_a_projected_review_request_is_edited_in_place():
    """An update of a projected request edits its comment, posting nothing."""
    ctx = Recorder()
    identity, _ = HANDLERS[(Action.UPDATE, RR)](ctx, request(Action.UPDATE, "comment-9"))
    assert identity == "comment-9"
    assert [(verb, target) for verb, target, _ in ctx.sent] == [("edit", "9")]


def test_a_native_review_request_cannot_change():
    """A request made on the forge itself is refused unsupported, naming the forge."""
    ctx = Recorder()
    with pytest.raises(WriteRefused, match="native on Forgejo") as refused:
        HANDLERS[(Action.UPDATE, RR)](ctx, request(Action.UPDATE, "5:carol"))
    assert refused.value.refusal == "unsupported"
    assert ctx.sent == []


def test_deleting_withdraws_a_native_request_and_deletes_a_projected_one():
    """A native request is withdrawn on its pull request; a projected one's comment goes."""
    ctx = Recorder()
    HANDLERS[(Action.DELETE, RR)](ctx, request(Action.DELETE, "5:carol"))
    HANDLERS[(Action.DELETE, RR)](ctx, request(Action.DELETE, "comment-9"))
    assert ctx.sent == [("withdraw", "5", "carol"), ("delete", "9")]


def test_a_request_whose_pull_request_is_not_there_yet_waits():
    """A create whose pull request names nothing on the forge is dependency_missing."""
    with pytest.raises(WriteRefused) as refused:
        HANDLERS[(Action.CREATE, RR)](Recorder(), request(Action.CREATE, None, parent=None))
    assert refused.value.refusal == "dependency_missing"
