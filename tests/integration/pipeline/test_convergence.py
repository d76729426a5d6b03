"""Issue 9, model-based findings: source histories that never converged.

Each test is a history the model-based state machine (``test_model_based.py``) found,
reduced to its core: after it, one Run must end ``completed`` with no follow-up, leave
the standby equal to the source, and a next Run must plan nothing at all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reposync.models import Run
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import delete_refs, generate, refs
from tests.integration.forges.test_forge_sync import forge, items_of

WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, SyncRequest]:
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=1)
    target = tmp_path / "dst.git"
    return source, target, SyncRequest(f"local:{source}", f"local:{target}")


def converged(ctx: ServiceContext, request: SyncRequest) -> Run:
    """One Run that must end the matter, then proof that the next has nothing to do."""
    run = sync(ctx, request)
    assert run.status == "completed", run.report["problems"]
    again = sync(ctx, request)
    assert again.status == "completed", again.report["problems"]
    assert items_of(ctx, again.id) == [], "a Run after convergence planned work"
    assert again.id == run.id + 1, "a follow-up Run was queued"
    return run


def keyed(path: Path, object_type: ObjectType, field: str) -> dict[str, Any]:
    """Unique key -> one payload field: who holds which name on a forge."""
    with forge(path) as f:
        return {o.unique_key: o.payload[field] for o in f.reader.objects_of(object_type)}


# -- gone objects that need no write ------------------------------------------------------


def test_a_reaction_removed_from_the_source_is_forgotten_in_one_run(ctx, pair):
    """An archive-only object gone from the source is planned "noop, already deleted"
    (nothing exists on the target). It was judged "disappeared from the source" and
    superseded, so every Run queued a follow-up that did the same, forever."""
    source, _target, request = pair
    with forge(source) as f:
        issue = f.create_issue("Reacted to", author="ann", created_at=WHEN)
        reaction = f.add_reaction("issue", issue, "+1", "bob", created_at=WHEN)
    assert sync(ctx, request).status == "completed"
    with forge(source) as f:
        f.delete(ObjectType.REACTION, reaction)

    run = converged(ctx, request)

    [item] = items_of(ctx, run.id)
    assert (item.object_type, item.action, item.reason, item.state) == (
        "reaction",
        "noop",
        "already_deleted",
        "completed",
    )


def test_a_ref_deleted_on_both_sides_is_forgotten_in_one_run(ctx, pair):
    """A native object gone from both sides: completed, and its link dropped (it was kept
    with an empty hash, so every checkpoint planned the same no-op again)."""
    source, target, request = pair
    assert sync(ctx, request).status == "completed"
    [branch] = [r for r in refs(source) if r.startswith("refs/heads/") and r != "refs/heads/main"]
    delete_refs(source, [branch])
    delete_refs(target, [branch])

    run = converged(ctx, request)

    [item] = items_of(ctx, run.id)
    assert (item.action, item.reason, item.state) == ("noop", "already_deleted", "completed")
    assert branch not in refs(target)


# -- replies whose comment is gone ----------------------------------------------------


def review_thread(path: Path) -> tuple[str, str]:
    """A pull request with a review and its first comment: (review, comment)."""
    head = refs(path)["refs/heads/main"]
    with forge(path) as f:
        pull = f.create_pull_request(
            "Change", author="ann", base_ref="main", base_sha=head, head_ref="main", head_sha=head
        )
        review = f.add_review(
            pull, state="COMMENTED", body="notes", commit_id=head, author="bob", submitted_at=WHEN
        )
        first = f.add_review_comment(
            review,
            path="app.py",
            line=1,
            body="why?",
            commit_id=head,
            author="bob",
            created_at=WHEN,
        )
    return review, first


def reply(path: Path, review: str, to: str, body: str) -> str:
    with forge(path) as f:
        return str(
            f.add_review_comment(
                review,
                path="app.py",
                line=1,
                body=body,
                commit_id=refs(path)["refs/heads/main"],
                author="ann",
                created_at=WHEN,
                in_reply_to=to,
            )
        )


def replies(path: Path) -> dict[str, str]:
    """Reply body -> what it answers on that forge ("gone" for a deleted comment)."""
    with forge(path) as f:
        comments = f.reader.objects_of(ObjectType.REVIEW_COMMENT)
        bodies = {c.identity: c.payload["body"] for c in comments}
        return {
            c.payload["body"]: bodies.get(c.refs["in_reply_to"].identity, "gone")
            for c in comments
            if c.payload["is_reply"]
        }


def test_a_reply_whose_comment_was_deleted_before_any_sync_arrives_as_a_reply(ctx, pair):
    """The comment a reply answers was deleted before it ever reached the target: the
    reply's reference named nothing there (dependency_missing in every Run). A forge
    keeps such a reply, so the target does too, answering nothing."""
    source, target, request = pair
    review, first = review_thread(source)
    reply(source, review, first, "because")
    with forge(source) as f:
        f.delete(ObjectType.REVIEW_COMMENT, first)

    converged(ctx, request)

    assert replies(target) == replies(source) == {"because": "gone"}


def test_a_reply_to_a_comment_deleted_in_the_same_run_arrives(ctx, pair):
    """The answered comment was synced, then answered and deleted: the Run deletes it on
    the target before it creates the reply, whose reference must not need it."""
    source, target, request = pair
    review, first = review_thread(source)
    assert sync(ctx, request).status == "completed"
    reply(source, review, first, "late answer")
    with forge(source) as f:
        f.delete(ObjectType.REVIEW_COMMENT, first)

    converged(ctx, request)

    assert replies(target) == replies(source) == {"late answer": "gone"}


# -- unique keys that move between objects in one Run -------------------------------------


def rename(path: Path, object_type: ObjectType, field: str, moves: list[tuple[str, str]]) -> None:
    """Rename objects on a forge one after another (each ``old -> new`` must be free);
    ``old`` is the unique key, ``new`` the field's new value."""
    with forge(path) as f:
        for old, new in moves:
            [identity] = [
                o.identity for o in f.reader.objects_of(object_type) if o.unique_key == old
            ]
            f.update(object_type, identity, **{field: new})


def test_labels_that_swap_names_arrive_swapped(ctx, pair):
    """ "bug" and "feature" trade names: whichever rename goes first finds its new name
    taken on the target (a unique-key conflict, every Run). One steps aside first."""
    source, target, request = pair
    with forge(source) as f:
        f.create_label("bug", color="ff0000")
        f.create_label("feature", color="00ff00")
    assert sync(ctx, request).status == "completed"
    rename(
        source,
        ObjectType.LABEL,
        "name",
        [("bug", "swap"), ("feature", "bug"), ("swap", "feature")],
    )

    run = converged(ctx, request)

    assert keyed(target, ObjectType.LABEL, "color") == {"bug": "00ff00", "feature": "ff0000"}
    reasons = sorted((i.reason, i.state) for i in items_of(ctx, run.id))
    assert reasons == [("changed", "completed")] * 2 + [("temporary_key", "completed")]


def test_labels_renamed_in_a_three_way_cycle_and_a_chain_arrive(ctx, pair):
    """a -> b -> c -> a (a cycle) and x -> y while y -> z (a chain: y goes first)."""
    source, target, request = pair
    with forge(source) as f:
        for name, color in [("a", "aaaaaa"), ("b", "bbbbbb"), ("c", "cccccc")]:
            f.create_label(name, color=color)
        f.create_label("x", color="111111")
        f.create_label("y", color="222222")
    assert sync(ctx, request).status == "completed"
    rename(
        source,
        ObjectType.LABEL,
        "name",
        [("c", "t"), ("b", "c"), ("a", "b"), ("t", "a"), ("y", "z"), ("x", "y")],
    )

    converged(ctx, request)

    assert keyed(target, ObjectType.LABEL, "color") == keyed(source, ObjectType.LABEL, "color")
    assert keyed(target, ObjectType.LABEL, "color") == {
        "a": "cccccc",
        "b": "aaaaaa",
        "c": "bbbbbb",
        "y": "111111",
        "z": "222222",
    }


def test_milestones_renamed_along_a_chain_arrive(ctx, pair):
    """ "1.0" becomes "1.1" while "1.1" becomes "1.2": the target must rename 1.1 first."""
    source, target, request = pair
    with forge(source) as f:
        f.create_milestone("1.0", description="first")
        f.create_milestone("1.1", description="second")
    assert sync(ctx, request).status == "completed"
    rename(source, ObjectType.MILESTONE, "title", [("1.1", "1.2"), ("1.0", "1.1")])

    converged(ctx, request)

    assert keyed(target, ObjectType.MILESTONE, "description") == {
        "1.1": "first",
        "1.2": "second",
    }


def test_releases_that_swap_tags_and_assets_that_swap_names_arrive(ctx, pair):
    """Two releases trade tags, and two assets of one release trade names."""
    source, target, request = pair
    with forge(source) as f:
        one = f.create_release("v1", author="ann", name="first", created_at=WHEN)
        f.create_release("v2", author="ann", name="second", created_at=WHEN)
        f.upload_asset(one, "a.bin", b"aaa")
        f.upload_asset(one, "b.bin", b"bbbb")
    assert sync(ctx, request).status == "completed"
    rename(source, ObjectType.RELEASE, "tag", [("v1", "v0"), ("v2", "v1"), ("v0", "v2")])
    rename(
        source,
        ObjectType.RELEASE_ASSET,
        "name",
        [("v2:a.bin", "c.bin"), ("v2:b.bin", "a.bin"), ("v2:c.bin", "b.bin")],
    )

    converged(ctx, request)

    assert keyed(target, ObjectType.RELEASE, "name") == {"v1": "second", "v2": "first"}
    assert keyed(target, ObjectType.RELEASE_ASSET, "size") == {"v2:a.bin": 4, "v2:b.bin": 3}


def test_a_deleted_pull_requests_number_given_to_an_issue_arrives(ctx, pair):
    """Pull request #2 is deleted and an issue takes #2: deletes of every type in a phase
    now run before its creates (issues sort before pull requests)."""
    source, target, request = pair
    head = refs(source)["refs/heads/main"]
    with forge(source) as f:
        f.create_issue("first", author="ann", created_at=WHEN)
        pull = f.create_pull_request(
            "to go", author="ann", base_ref="main", base_sha=head, head_ref="main", head_sha=head
        )
    assert sync(ctx, request).status == "completed"
    with forge(source) as f:
        f.delete(ObjectType.PULL_REQUEST, pull)
        f.create_issue("takes its number", author="bob", created_at=WHEN, number=2)

    converged(ctx, request)

    with forge(target) as f:
        numbered = {
            o.number: (o.object_type, o.payload["title"]) for o in f.reader.objects_of("issue")
        }
        assert f.reader.objects_of(ObjectType.PULL_REQUEST) == []
    assert numbered == {1: ("issue", "first"), 2: ("issue", "takes its number")}
