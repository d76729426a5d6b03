"""A hosted forge's JSON as canonical objects, where the forges' APIs name the fields
alike (Forgejo's copies GitHub's for conversations, comments, reviews and releases).

An attribution header's values replace what the forge reports (its token's account as
author, the write's time: ``forge.attribution``), so an object read back equals the
object written; an issue comment that carries another object reads as that object
(``carriers.carried_object``). What a forge keeps its own way is its provider's
argument: how a login is read (``Login``: GitHub's as is, Forgejo's mapped back through
the instance's account map), and the values it reports otherwise (a review's state and
time, a comment's line and reply link, a release's times, a pull request's merge).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reposync.providers.forge import carriers
from reposync.providers.forge.attribution import header_value
from reposync.providers.forge.bodies import Parsed, parse
from reposync.providers.forge.reviews import native_review_identity, placed_review
from reposync.sync import objects
from reposync.sync.canonical import CanonicalObject, ObjectRef
from reposync.sync.objects import number_key
from reposync.sync.vocabulary import ObjectType

#: The source login of a forge's user JSON (``None``: a deleted account).
Login = Callable[[Mapping[str, Any] | None], str]


def conversation(data: Mapping[str, Any], parsed: Parsed, login: Login) -> dict[str, Any]:
    """The fields issues and pull requests share, the header's where the forge has none."""
    assignees = [login(a) for a in data.get("assignees") or []]
    return {
        "number": data["number"],
        "title": data["title"],
        "body": parsed.body,
        "state": data["state"],
        "labels": [item["name"] for item in data.get("labels") or []],
        "milestone": (data.get("milestone") or {}).get("title"),
        "assignees": header_value(parsed, "assignees", assignees),
        "author": header_value(parsed, "author", login(data.get("user"))),
        "created_at": header_value(parsed, "created_at", data["created_at"]),
        "closed_at": header_value(parsed, "closed_at", data.get("closed_at")),
    }


def pull_request(
    data: Mapping[str, Any],
    parsed: Parsed,
    login: Login,
    *,
    carrier: bool,
    merged_at: object,
    draft: object,
) -> CanonicalObject:
    """A pull request from ``pulls`` JSON (``merged_at`` and ``draft``: what the forge
    reports of it), or from the issue that carries one (its header's); ``parsed``: its
    body."""
    if carrier:
        carried = carriers.carried_pull(parsed)
        head = {"ref": carried.head_ref, "sha": carried.head_sha}
        base = {"ref": carried.base_ref, "sha": carried.base_sha}
        merged_at, draft = carried.merged_at, carried.draft
    else:
        head, base = data["head"], data["base"]
    return objects.pull_request(
        str(data["number"]),
        data.get("updated_at") or "",
        merged=header_value(parsed, "merged", merged_at is not None),
        merged_at=header_value(parsed, "merged_at", merged_at),
        draft=draft,
        base_ref=base["ref"],
        base_sha=header_value(parsed, "base_sha", base["sha"]),
        head_ref=header_value(parsed, "head_ref", head["ref"]),
        head_sha=header_value(parsed, "head_sha", head["sha"]),
        **conversation(data, parsed, login),
    )


def issue_comment(
    data: Mapping[str, Any], parent_type: ObjectType, number: int, login: Login
) -> CanonicalObject:
    """A comment on issue or pull request ``number``, or what reposync carried in one."""
    parsed = parse(data.get("body"))
    carried = carriers.carried_object(data["id"], data.get("updated_at") or "", parsed, number)
    if carried is not None:
        return carried
    return objects.issue_comment(
        str(data["id"]),
        data.get("updated_at") or "",
        parent=ObjectRef(parent_type, str(number)),
        parent_key=number_key(number),
        body=parsed.body,
        author=header_value(parsed, "author", login(data.get("user"))),
        created_at=header_value(parsed, "created_at", data["created_at"]),
    )


def review(
    data: Mapping[str, Any], number: int, login: Login, *, updated_at: str, state: str
) -> CanonicalObject:
    """A review of pull request ``number`` (``state``: the forge's, in the model's words)."""
    parsed = parse(data.get("body"))
    return objects.review(
        native_review_identity(number, data["id"]),
        updated_at,
        parent=ObjectRef(ObjectType.PULL_REQUEST, str(number)),
        parent_key=number_key(number),
        state=header_value(parsed, "state", state),
        body=parsed.body,
        commit_id=header_value(parsed, "commit_id", data.get("commit_id") or ""),
        author=header_value(parsed, "author", login(data.get("user"))),
        submitted_at=header_value(parsed, "submitted_at", data.get("submitted_at")),
    )


def review_identity(comment: Mapping[str, Any], number: int) -> str:
    """The review a review comment belongs to: the one its header names when the forge
    holds it in another (a reply, a file-level comment), else its own."""
    return placed_review(comment.get("body")) or native_review_identity(
        number, comment.get("pull_request_review_id")
    )


def review_comment(
    data: Mapping[str, Any],
    review_identity: str,
    review_key: str | None,
    login: Login,
    *,
    identity: str,
    line: int | None,
    side: str,
    in_reply_to: object,
) -> CanonicalObject:
    """A line comment of a review; what it answered is the header's where it names one,
    else the forge's reply link (``in_reply_to``: ``None`` where it keeps none)."""
    parsed = parse(data.get("body"))
    reply_to = header_value(parsed, "in_reply_to", in_reply_to)
    return objects.review_comment(
        identity,
        data.get("updated_at") or "",
        parent=ObjectRef(ObjectType.REVIEW, review_identity),
        parent_key=review_key,
        path=data["path"],
        line=line,
        side=side,
        commit_id=header_value(parsed, "commit_id", data.get("commit_id") or ""),
        body=parsed.body,
        author=header_value(parsed, "author", login(data.get("user"))),
        created_at=header_value(parsed, "created_at", data["created_at"]),
        in_reply_to=None
        if reply_to is None
        else ObjectRef(ObjectType.REVIEW_COMMENT, str(reply_to)),
    )


def review_request(number: int, login: str) -> CanonicalObject:
    """A native requested reviewer (no request time: GitHub keeps none, so the model
    has none for native requests)."""
    return objects.review_request(
        f"{number}:{login}",
        "",
        parent=ObjectRef(ObjectType.PULL_REQUEST, str(number)),
        parent_key=number_key(number),
        reviewer=login,
        requested_at=None,
    )


def release(
    data: Mapping[str, Any], login: Login, *, updated_at: str, published_at: object
) -> CanonicalObject:
    """A release (``published_at``: when the forge says it was published)."""
    parsed = parse(data.get("body"))
    return objects.release(
        str(data["id"]),
        updated_at,
        tag=data["tag_name"],
        name=data.get("name") or "",
        body=parsed.body,
        draft=bool(data.get("draft")),
        prerelease=bool(data.get("prerelease")),
        author=header_value(parsed, "author", login(data.get("author"))),
        created_at=header_value(parsed, "created_at", data["created_at"]),
        published_at=header_value(parsed, "published_at", published_at),
    )
