"""What the writes of one batch share: the repository, its client, who may be acted as,
and what the batch learnt on the way (the next free number, label ids, milestone ids,
what each issue number is, what the batch created), so a family's handler needs nothing
else."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from reposync.errors import PermissionDenied, WriteRefused
from reposync.providers.base import TargetWrite
from reposync.providers.forge.attribution import (
    ATTRIBUTED_FIELDS,
    BatchReferences,
    attributed_body,
    parent_number,
)
from reposync.providers.forge.numbers import NumberAllocator
from reposync.providers.forgejo.accounts import People
from reposync.providers.forgejo.client import ForgejoClient
from reposync.providers.forgejo.reads import Reader
from reposync.providers.forgejo.writes.numbers import ForgejoNumbers
from reposync.sync.vocabulary import Action, ObjectType, Representation

log = logging.getLogger(__name__)
R = TypeVar("R")

#: Fields Forgejo's API cannot set, per type: they travel in the attributed header
#: (``forge.attribution``'s list, with a pull request's draft: Forgejo's API sets none).
HEADER_FIELDS: dict[ObjectType, tuple[str, ...]] = {
    **ATTRIBUTED_FIELDS,
    ObjectType.PULL_REQUEST: (*ATTRIBUTED_FIELDS[ObjectType.PULL_REQUEST], "draft"),
}


class WriteContext(BatchReferences):
    """One batch's view of one repository (keeps per-batch caches)."""

    def __init__(
        self,
        client: ForgejoClient,
        repo: str,
        people: People,
        source_label: Callable[[TargetWrite], str | None],
        forge: str,
    ) -> None:
        super().__init__(repo, forge)  # "Forgejo" or "Gitea"
        self.client = client
        self.people = people
        self.source_label = source_label
        self.space = ForgejoNumbers(client, repo)
        self.numbers = NumberAllocator(self.space, forge=forge)
        self.reader = Reader(client, repo, people)
        self.milestones: dict[str, int] | None = None  # title -> id
        self.labels: dict[str, int] | None = None  # name -> id
        self.kinds: dict[int, str] = {}  # number -> "pull" | "carrier" | "issue"

    def body(
        self,
        write: TargetWrite,
        kind: ObjectType,
        *,
        account: str | None = None,
        extra: Mapping[str, Any] | None = None,
        note: str | None = None,
        omit: Sequence[str] = (),
    ) -> str:
        """The write's body with a header of what Forgejo cannot set for ``kind`` (and
        ``extra``, which wins) and its marker. Written as ``account`` (the author's own,
        through ``Sudo``), the header leaves the author out and its visible line says
        only when and where the object was first written."""
        payload = write.payload or {}
        fields = [f for f in HEADER_FIELDS.get(kind, ()) if f not in omit]
        headline = None
        if account is not None:
            fields = [f for f in fields if f != "author"]
            when = payload.get("created_at") or payload.get("submitted_at")
            source = self.source_label(write)
            headline = (
                f"Originally written{' on ' + str(when) if when else ''}"
                f"{' in ' + source if source else ''}"
            )
        return attributed_body(
            write,
            fields,
            source_label=self.source_label(write),
            extra=extra,
            note=note,
            headline=headline,
        )

    def acting_as(self, write: TargetWrite, key: str = "author") -> str | None:
        """The instance account ``write`` is sent as (``Sudo``), or ``None``."""
        return self.people.acting_as((write.payload or {}).get(key))

    def authored(self, write: TargetWrite, send: Callable[[str | None], R]) -> R:
        """``send(account)`` as the author's own account where the map names one; an
        account Forgejo will not let write here (no access to the repository: 403, or
        404 for a private one) is dropped, and ``send(None)`` writes as the token's own,
        the author then in the header. Nothing was written by the refused request."""
        account = self.acting_as(write)
        if account is None:
            return send(None)
        try:
            return send(account)
        except (PermissionDenied, WriteRefused) as refused:
            if isinstance(refused, WriteRefused) and refused.status not in (403, 404):
                raise
            log.info("%s may not write to %s as %s: %s", self.forge, self.repo, account, refused)
            self.people.refused(account)
            return send(None)

    # -- the comment requests forge.carriers and forge.review_requests send through ------

    def post_comment(self, number: int, body: str) -> object:
        created = self.client.write(
            "POST", self.path(f"/issues/{number}/comments"), json_body={"body": body}
        )
        return created["id"]

    def edit_comment(self, comment: str, body: str) -> None:
        self.client.write(
            "PATCH", self.path(f"/issues/comments/{comment}"), json_body={"body": body}
        )

    def delete_comment(self, comment: str) -> None:
        self.client.write("DELETE", self.path(f"/issues/comments/{comment}"))

    def withdraw_review_request(self, pull: str, login: str) -> None:
        self.client.write(
            "DELETE",
            self.path(f"/pulls/{pull}/requested_reviewers"),
            json_body={"reviewers": [login]},
        )

    # -- names Forgejo's requests take as ids -------------------------------------------

    def label_ids(self, names: Sequence[str]) -> list[int]:
        """The ids of labels ``names`` (listed once per batch, again for a new name);
        ``dependency_missing`` while one is not on the instance."""
        if names and (self.labels is None or any(n not in self.labels for n in names)):
            self.labels = {
                lb["name"]: int(lb["id"]) for lb in self.client.paginate(self.path("/labels"))
            }
        missing = [n for n in names if n not in (self.labels or {})]
        if missing:
            raise WriteRefused(
                f"label {missing[0]!r} is not on {self.forge}",
                refusal="dependency_missing",
                status=422,
            )
        return [(self.labels or {})[n] for n in names]

    def milestone_id(self, title: str | None) -> int | None:
        """The id of the milestone titled ``title``; ``dependency_missing`` without one."""
        if title is None:
            return None
        if self.milestones is None or title not in self.milestones:
            self.milestones = {
                m["title"]: int(m["id"])
                for m in self.client.paginate(self.path("/milestones"), {"state": "all"})
            }
        if title not in self.milestones:
            raise WriteRefused(
                f"milestone {title!r} is not on {self.forge}",
                refusal="dependency_missing",
                status=422,
            )
        return self.milestones[title]


#: The issue number a reference names (``dependency_missing`` while it names nothing).
number = parent_number


#: Performs one write of one (action, type): the target identity, and how the object
#: exists on Forgejo when that is not its type's own representation.
Handler = Callable[[WriteContext, TargetWrite], tuple[str, Representation | None]]
#: A family's handlers; a pair without one is refused ``unsupported``.
Handlers = Mapping[tuple[Action, ObjectType], Handler]
