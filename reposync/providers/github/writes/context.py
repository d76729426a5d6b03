"""What the writes of one batch share: the repository, its client, and what the batch
learnt on the way (the next free number, label and milestone names, what each issue
number is, what the batch created), so a family's handler needs nothing else."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from reposync.providers.base import TargetWrite
from reposync.providers.forge.attribution import (
    ATTRIBUTED_FIELDS,
    BatchReferences,
    attributed_body,
    parent_number,
)
from reposync.providers.forge.numbers import NumberAllocator
from reposync.providers.github.client import GitHubClient
from reposync.providers.github.writes.numbers import GitHubNumbers
from reposync.sync.vocabulary import Action, ObjectType, Representation

#: The forge's name, as what reposync writes on it says it.
FORGE = "GitHub"


class WriteContext(BatchReferences):
    """One batch's view of one repository (keeps per-batch caches)."""

    def __init__(
        self,
        client: GitHubClient,
        repo: str,
        uploads_url: str,
        source_label: Callable[[TargetWrite], str | None],
    ) -> None:
        super().__init__(repo, FORGE)
        self.client = client
        self.uploads_url = uploads_url.rstrip("/")
        self.source_label = source_label
        self.numbers = NumberAllocator(GitHubNumbers(client, repo), forge=FORGE)
        self.milestones: dict[str, int] | None = None  # title -> number
        self.labels: dict[str, str] | None = None  # id -> name
        self.kinds: dict[int, str] = {}  # number -> "pull" | "carrier" | "issue"

    def body(self, write: TargetWrite, kind: ObjectType) -> str:
        """The write's body with the header of the fields GitHub cannot set for ``kind``."""
        return attributed_body(
            write, ATTRIBUTED_FIELDS.get(kind, ()), source_label=self.source_label(write)
        )

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


def number(ref_identity: str | None) -> int:
    """The issue number a reference names; ``dependency_missing`` while it names nothing."""
    return parent_number(ref_identity, FORGE)


#: Performs one write of one (action, type): the target identity, and how the object
#: exists on GitHub when that is not its type's own representation.
Handler = Callable[[WriteContext, TargetWrite], tuple[str, Representation | None]]
#: A family's handlers; a pair without one is refused ``unsupported``.
Handlers = Mapping[tuple[Action, ObjectType], Handler]
