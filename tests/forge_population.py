"""A local forge of a chosen size with every kind of object, for scale tests and benchmarks.

``populate(path, objects)`` makes at least ``objects`` forge objects in shares a busy
project has: issues and pull requests interleaved in one number sequence (every fifth
number a pull request on a branch of its own), a review per pull request with a line
comment and a reply, a review request each, labels, milestones, a release with an
asset, and comments on every issue and pull request making up the rest. Git data is
made first (``tests.gitrepo.generate``); objects are made in bulk through the local
forge's authoring API.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import generate, refs

WHEN = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
#: One number in this many is a pull request.
PULL_EVERY = 5


@dataclass(frozen=True)
class Population:
    """What was made, per type."""

    counts: Counter[str]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def populate(path: Path, objects: int) -> Population:
    """A local forge at ``path`` with at least ``objects`` forge objects (~60 at least)."""
    numbers = max(objects * 3 // 10, 5)
    pulls = [n for n in range(1, numbers + 1) if n % PULL_EVERY == 0]
    generate(path, commits=max(len(pulls), 2) + 1, branches=len(pulls), tags=1)
    every = refs(path)
    heads = sorted(n for n in every if n.startswith("refs/heads/branch-"))
    main = every["refs/heads/main"]
    counts: Counter[str] = Counter()
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        forge = ForgeAuthoring(provider.forge)

        def made(object_type: ObjectType, identities: list[str]) -> list[str]:
            counts[object_type.value] += len(identities)
            return identities

        labels = [f"label {n}" for n in range(12)]
        for name in labels:
            made(ObjectType.LABEL, [forge.create_label(name, color="00aa00")])
        for n in range(6):
            made(ObjectType.MILESTONE, [forge.create_milestone(f"m{n}", due_on=WHEN)])
        issue_rows = [
            {
                "number": n,
                "title": f"Issue {n}",
                "body": f"Details of {n}",
                "author": f"user{n % 40}",
                "created_at": WHEN,
                "labels": [labels[n % len(labels)]],
                "milestone": f"m{n % 6}" if n % 3 == 0 else None,
                "state": "closed" if n % 4 == 0 else "open",
                "closed_at": WHEN if n % 4 == 0 else None,
            }
            for n in range(1, numbers + 1)
            if n not in pulls
        ]
        issues = made(ObjectType.ISSUE, forge.create_many("issue", issue_rows))
        pull_ids = []
        for index, number in enumerate(pulls):
            head = every[heads[index % len(heads)]]
            pull_ids.append(
                forge.create_pull_request(
                    f"Pull {number}",
                    number=number,
                    author=f"user{number % 40}",
                    created_at=WHEN,
                    base_ref="main",
                    base_sha=main,
                    head_ref=heads[index % len(heads)].removeprefix("refs/heads/"),
                    head_sha=head,
                )
            )
        made(ObjectType.PULL_REQUEST, pull_ids)
        for pull in pull_ids:
            review = forge.add_review(
                pull,
                state="COMMENTED",
                body="notes",
                commit_id=main,
                author="reviewer",
                submitted_at=WHEN,
            )
            made(ObjectType.REVIEW, [review])
            first = forge.add_review_comment(
                review,
                path="file-1.txt",
                line=1,
                body="why?",
                commit_id=main,
                author="reviewer",
                created_at=WHEN,
            )
            reply = forge.add_review_comment(
                review,
                path="file-1.txt",
                line=1,
                body="because",
                commit_id=main,
                author="user1",
                created_at=WHEN,
                in_reply_to=first,
            )
            made(ObjectType.REVIEW_COMMENT, [first, reply])
            made(ObjectType.REVIEW_REQUEST, [forge.request_review(pull, "dave")])
        # Comments make up the rest (the release and its asset come last).
        parents = len(issues) + len(pull_ids)
        budget = max(objects - counts.total() - 2, parents)
        every_parent = [("issue", i) for i in issues] + [("pull_request", p) for p in pull_ids]
        for index, (kind, parent) in enumerate(every_parent):
            share = budget // parents + (1 if index < budget % parents else 0)
            rows = [
                {"body": f"comment {c}", "author": f"user{c % 9}", "created_at": WHEN}
                for c in range(share)
            ]
            if not rows:
                continue
            made(
                ObjectType.ISSUE_COMMENT,
                forge.create_many("issue_comment", rows, parent=(kind, parent)),
            )
        tag = next(n for n in every if n.startswith("refs/tags/")).removeprefix("refs/tags/")
        release = forge.create_release(tag, author="ann", name="First", created_at=WHEN)
        made(ObjectType.RELEASE, [release])
        asset = forge.upload_asset(
            release, "notes.txt", b"release notes\n", content_type="text/plain"
        )
        made(ObjectType.RELEASE_ASSET, [asset])
    finally:
        provider.close()
    return Population(counts)
