"""Local forge <-> Forgejo, end to end through the pipeline, against the Forgejo test server.

Every request reposync sends and every answer it gets is checked against Forgejo's own
description (the fake's client recorder); the server checks its answers too. The test
server's clock stands still until a test moves it, so what a Run reads again "since" the
last listing is exactly what changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reposync.providers.forge.bodies import parse
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.fakes.forge_server.clock import ManualClock
from tests.fakes.forgejo import ForgejoFake
from tests.forgejo_env import embedded_world, locator
from tests.gitrepo import commit_on, generate, refs, set_ref
from tests.integration.forges.test_forge_sync import WHEN, content_hashes, forge, items_of, populate

REPO = "acme/widgets"
#: Types whose canonical content must be equal after a round trip through Forgejo.
KEPT = [t for t in ObjectType if t not in (ObjectType.GIT_REF, ObjectType.REACTION)]
#: Listings Forgejo narrows by nothing (no ``since``, no ETag): read whole every Run.
UNFILTERED = ("/labels", "/milestones", "/releases")
#: The repository itself: each stage that opens a side looks it up (no object of it).
OPENED = ("/",)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Any, ForgejoFake, ManualClock]]:
    clock = ManualClock()
    with ForgejoFake(clock=clock) as fake:
        fake.state.create_repo(REPO, private=True)
        with embedded_world(fake, tmp_path) as ctx:
            yield ctx, fake, clock
        fake.assert_clean(requests_too=True)


def target(fake: ForgejoFake) -> str:
    return f"forgejo:{locator(fake, REPO)}"


def test_local_to_forgejo_converges_then_a_rerun_reads_nothing_of_it(tmp_path, world):
    """Every type reaches Forgejo with its numbers; what Forgejo cannot hold is counted;
    the next Run writes nothing and asks Forgejo for no object."""
    ctx, fake, clock = world
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    ids = populate(source)
    request = SyncRequest(f"local:{source}", target(fake))

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    # The reaction is archived; + 3 refs and the open pull request's shadow branch (its
    # head "fix" is no branch): Forgejo opens it there (it checks branch names only).
    assert first.counters["created"] == len(ids) - 1 + 3 + 1
    gaps = first.report["data_gaps"]
    assert gaps["archive_only"] == {"reaction": 1}
    assert gaps["projected"] == {"review_request": 1}
    assert gaps["reply_by_line"] == {"review_comment": 1}  # a reply, at its comment's line
    assert gaps["attributed"]["issue"] == 2  # Forgejo's API sets no author: headers
    assert [(p.head_ref, p.head_sha) for p in _pulls(fake)] == [
        ("reposync/pr/2/head", refs(source)["refs/heads/main"])
    ]
    repo = fake.state.repo(REPO)
    assert {1, 2, 3} <= set(repo.issues)  # numbers kept
    assert {i.index: i.state for i in repo.issues.values()} == {1: "open", 2: "open", 3: "closed"}
    forgejo_refs = refs(repo.git_dir)
    assert {n for n in forgejo_refs if n.startswith("refs/heads/")} == {
        n for n in refs(source) if n.startswith("refs/heads/")
    } | {"refs/heads/reposync/pr/2/head"}

    clock.advance(60)
    before = len(fake.requests)
    second = sync(ctx, request)
    assert second.status == "completed"
    assert items_of(ctx, second.id) == []
    rest = fake.requests[before:]
    assert rest, "the second Run still opens the repository"
    assert all(r.method == "GET" for r in rest)
    # A checkpoint Run reads the source only: of Forgejo, its repository and nothing else.
    assert {r.path for r in rest} == {f"/repos/{REPO}"}


def _pulls(fake: ForgejoFake) -> list[Any]:
    return [i.pull for i in fake.state.repo(REPO).issues.values() if i.pull is not None]


def _listing_reads(records: list[Any]) -> dict[str, int]:
    """Objects Forgejo answered, per path (the repository's own path cut off)."""
    read: Counter[str] = Counter()
    for record in records:
        read[record.path.removeprefix(f"/repos/{REPO}") or "/"] += record.returned
    return dict(read)


def test_forgejo_to_local_round_trips_and_a_no_change_run_reads_no_object(tmp_path, world):
    """local -> Forgejo -> local: canonical states equal. Reading Forgejo again with
    nothing changed lists nothing but what Forgejo cannot filter (labels, milestones,
    releases); one changed issue is the one object read."""
    ctx, fake, clock = world
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    populate(source)
    assert sync(ctx, SyncRequest(f"local:{source}", target(fake))).status == "completed"
    clock.advance(60)
    back = tmp_path / "back.git"
    request = SyncRequest(target(fake), f"local:{back}")

    returned = sync(ctx, request)

    assert returned.status == "completed", returned.report["problems"]
    assert content_hashes(back, KEPT) == content_hashes(source, KEPT)
    with forge(back) as f:
        bodies = [c.payload["body"] for c in f.reader.objects_of(ObjectType.ISSUE_COMMENT)]
    assert sorted(bodies) == sorted(["me too", "LGTM?"])
    # Forgejo creates a release's tag when it does not exist: it comes back as a ref.
    assert set(refs(back)) == set(refs(source)) | {
        "refs/tags/v1.0",
        "refs/heads/reposync/pr/2/head",
    }

    clock.advance(60)
    before = len(fake.requests)
    again = sync(ctx, request)
    assert (again.status, items_of(ctx, again.id)) == ("completed", [])
    reads = _listing_reads(fake.requests[before:])
    unneeded = {path: n for path, n in reads.items() if n and path not in UNFILTERED + OPENED}
    assert unneeded == {}
    assert set(reads) >= {"/issues", "/issues/comments"}  # asked, answered nothing

    clock.advance(60)
    fake.state.repo(REPO).issues[1].title = "It crashes (edited on Forgejo)"
    fake.state.repo(REPO).issues[1].updated = clock()
    before = len(fake.requests)
    edited = sync(ctx, request)
    assert edited.status == "completed", edited.report["problems"]
    assert [(i.object_type, i.action) for i in items_of(ctx, edited.id)] == [("issue", "update")]
    reads = _listing_reads(fake.requests[before:])
    changed = {path: n for path, n in reads.items() if n and path not in UNFILTERED + OPENED}
    assert changed == {"/issues": 1, "/issues/1": 1}  # listed once, read once
    with forge(back) as f:
        [issue] = [i for i in f.reader.objects_of(ObjectType.ISSUE) if i.number == 1]
    assert issue.payload["title"] == "It crashes (edited on Forgejo)"


def test_issues_and_pull_requests_keep_their_numbers_as_native_pull_requests(tmp_path, world):
    """Issues 1 and 3, pull requests 2 and 4 with branches of their own: Forgejo gets
    each under its number, the pull requests as pull requests (a placeholder made for
    one would be kept by an issue: Forgejo cannot turn it into a pull request)."""
    ctx, fake, _ = world
    source = generate(tmp_path / "src.git", commits=3, branches=0, tags=0)
    base = refs(source)["refs/heads/main"]
    heads = {}
    for branch in ("two", "four"):
        set_ref(source, f"refs/heads/{branch}", base)
        heads[branch] = commit_on(source, f"refs/heads/{branch}", f"work on {branch}")
    with forge(source) as f:
        for number in (1, 2, 3, 4):
            if number % 2:
                f.create_issue(f"issue {number}", author="ann", created_at=WHEN, number=number)
                continue
            branch = "two" if number == 2 else "four"
            f.create_pull_request(
                f"pull {number}",
                author="bob",
                created_at=WHEN,
                base_ref="main",
                base_sha=base,
                head_ref=branch,
                head_sha=heads[branch],
                number=number,
            )

    run = sync(ctx, SyncRequest(f"local:{source}", target(fake)))

    assert run.status == "completed", run.report["problems"]
    repo = fake.state.repo(REPO)
    kinds = {i.index: ("pull" if i.pull else "issue", i.title) for i in repo.issues.values()}
    assert kinds == {
        1: ("issue", "issue 1"),
        2: ("pull", "pull 2"),
        3: ("issue", "issue 3"),
        4: ("pull", "pull 4"),
    }
    assert "pull_request" not in run.report["data_gaps"].get("projected", {})


def test_an_author_with_a_mapped_account_writes_as_that_account(tmp_path):
    """With an account map and an administrator's token, ann's issue and carol's review
    are theirs on Forgejo (``Sudo``): no author in the header, the approval given natively.
    bob's account may not write to the repository: his pull request is the token's, his
    name in the header. All read back as the source had them."""
    with ForgejoFake() as fake:
        fake.state.create_repo(REPO, private=True)
        for login in ("ann-fj", "carol-fj"):
            fake.state.add_collaborator(REPO, login)
        fake.state.user("bob-fj")  # no access to the private repository
        accounts = {"ann": "ann-fj", "carol": "carol-fj", "bob": "bob-fj"}
        db_world = embedded_world(fake, tmp_path, owner="admin")
        fake.state.user("admin", is_admin=True)
        with _mapped(db_world, accounts) as ctx:
            source = generate(tmp_path / "src.git", commits=3, branches=0, tags=0)
            base = refs(source)["refs/heads/main"]
            set_ref(source, "refs/heads/feature", base)
            head = commit_on(source, "refs/heads/feature", "a change")
            with forge(source) as f:
                f.create_issue("Mapped", author="ann", created_at=WHEN, body="mine")
                pull = f.create_pull_request(
                    "Reviewed",
                    author="bob",
                    created_at=WHEN,
                    base_ref="main",
                    base_sha=base,
                    head_ref="feature",
                    head_sha=head,
                )
                f.add_review(
                    pull,
                    state="APPROVED",
                    body="ship it",
                    commit_id=head,
                    author="carol",
                    submitted_at=WHEN,
                )

            run = sync(ctx, SyncRequest(f"local:{source}", target(fake)))

            assert run.status == "completed", run.report["problems"]
            repo = fake.state.repo(REPO)
            issue = repo.issues[1]
            assert issue.poster.login == "ann-fj"
            assert "author" not in (parse(issue.body).attribution or {})
            [review] = repo.reviews.values()
            assert (review.reviewer.login, review.state) == ("carol-fj", "APPROVED")
            pull_issue = repo.issues[2]
            assert pull_issue.poster.login == "admin"
            assert (parse(pull_issue.body).attribution or {})["author"] == "bob"
            back = tmp_path / "back.git"
            returned = sync(ctx, SyncRequest(target(fake), f"local:{back}"))
            assert returned.status == "completed", returned.report["problems"]
            types = [ObjectType.ISSUE, ObjectType.PULL_REQUEST, ObjectType.REVIEW]
            assert content_hashes(back, types) == content_hashes(source, types)
        fake.assert_clean(requests_too=True)


def _mapped(world: Any, accounts: dict[str, str]) -> Any:
    """``world`` (an embedded world) with the instance's account map set."""
    from contextlib import contextmanager
    from dataclasses import replace

    @contextmanager
    def wrapped() -> Iterator[Any]:
        with world as ctx:
            [instance] = ctx.settings.forgejo_instances
            settings = ctx.settings.with_overrides(
                forgejo_instances=(replace(instance, accounts=accounts),)
            )
            environment = replace(ctx.environment, settings=settings)
            yield replace(ctx, settings=settings, environment=environment, open_provider=None)

    return wrapped()
