"""Two local forges kept in sync for everything a forge holds, through the real pipeline."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.errors import PermissionDenied
from reposync.models import RunItem
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import commit_on, delete_refs, generate, init_bare, refs, set_ref

WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FORGE_TYPES = [t for t in ObjectType if t is not ObjectType.GIT_REF]


@contextmanager
def forge(path: Path) -> Iterator[Any]:
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        yield ForgeAuthoring(provider.forge)
    finally:
        provider.close()


def snapshot(path: Path, *, skip: tuple[ObjectType, ...] = ()) -> dict[str, list[Any]]:
    """Every object's canonical content per type (identities left out: they differ)."""
    with forge(path) as f:
        state: dict[str, list[Any]] = {}
        for object_type in FORGE_TYPES:
            if object_type in skip:
                continue
            state[object_type.value] = sorted(
                (obj.number or 0, obj.unique_key or "", obj.content_hash)
                for obj in f.reader.objects_of(object_type)
            )
        return state


def content_hashes(path: Path, types: list[ObjectType]) -> dict[str, Counter[str]]:
    """Content hashes per type, as a multiset: what a round trip through another forge
    must keep (identities and numbers may differ between forges; content must not)."""
    with forge(path) as f:
        return {t.value: Counter(o.content_hash for o in f.reader.objects_of(t)) for t in types}


def populate(path: Path) -> dict[str, str]:
    """One of everything, with cross references, replies, a projected and an archived type."""
    head = refs(path)["refs/heads/main"]
    with forge(path) as f:
        ids: dict[str, str] = {}
        ids["bug"] = f.create_label("bug", color="d73a4a", description="Something is broken")
        ids["ui"] = f.create_label("needs design 🎨", color="0e8a16")
        ids["m1"] = f.create_milestone("v1.0", description="first", due_on=WHEN)
        ids["i1"] = f.create_issue(
            "It crashes",
            author="ann",
            body="See #2",
            created_at=WHEN,
            labels=["bug"],
            milestone="v1.0",
        )
        ids["p2"] = f.create_pull_request(
            "Fix the crash (fixes #1)",
            author="bob",
            created_at=WHEN,
            base_ref="main",
            base_sha=head,
            head_ref="fix",
            head_sha=head,
            labels=["needs design 🎨"],
        )
        ids["i3"] = f.create_issue(
            "Closed one",
            author="ann",
            created_at=WHEN,
            state="closed",
            state_reason="completed",
            closed_at=WHEN,
        )
        ids["c1"] = f.add_comment("issue", ids["i1"], "me too", author="carol", created_at=WHEN)
        ids["c2"] = f.add_comment("pull_request", ids["p2"], "LGTM?", author="ann", created_at=WHEN)
        ids["r1"] = f.add_review(
            ids["p2"],
            state="COMMENTED",
            body="a few notes",
            commit_id=head,
            author="carol",
            submitted_at=WHEN,
        )
        ids["rc1"] = f.add_review_comment(
            ids["r1"],
            path="app.py",
            line=3,
            body="why?",
            commit_id=head,
            author="carol",
            created_at=WHEN,
        )
        ids["rc2"] = f.add_review_comment(
            ids["r1"],
            path="app.py",
            line=3,
            body="because",
            commit_id=head,
            author="bob",
            created_at=WHEN,
            in_reply_to=ids["rc1"],
        )
        ids["rq"] = f.request_review(ids["p2"], "dave")
        ids["rel"] = f.create_release(
            "v1.0", author="ann", name="First", body="notes", created_at=WHEN
        )
        ids["asset"] = f.upload_asset(
            ids["rel"], "app.tar.gz", b"\x1f\x8b" + b"x" * 5000, content_type="application/gzip"
        )
        ids["re"] = f.add_reaction("issue", ids["i1"], "+1", "dave")
        return ids


@pytest.fixture
def pair(tmp_path: Path):
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    target = tmp_path / "dst.git"
    return source, target, SyncRequest(f"local:{source}", f"local:{target}")


def items_of(ctx: ServiceContext, run_id: int) -> list[RunItem]:
    with ctx.db.session() as session:
        return list(session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars())


def test_everything_a_forge_holds_is_synced_then_nothing_is_read_again(ctx, pair):
    """Bootstrap of every type; numbers kept; a second Run reads and writes nothing."""
    source, target, request = pair
    ids = populate(source)

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    # A local forge holds review requests natively: no projection, equal as they are.
    expected = snapshot(source, skip=(ObjectType.REACTION,))
    got = snapshot(target, skip=(ObjectType.REACTION,))
    assert got == expected
    with forge(target) as f:
        assert f.reader.count(ObjectType.REACTION) == 0  # archive-only: never written
        numbers = sorted(
            o.number
            for o in f.reader.objects_of(ObjectType.ISSUE)
            + f.reader.objects_of(ObjectType.PULL_REQUEST)
        )
        assert numbers == [1, 2, 3]
        [asset] = f.reader.objects_of(ObjectType.RELEASE_ASSET)
        assert f.assets.open_asset(asset.identity).read() == b"\x1f\x8b" + b"x" * 5000
        [reply] = [
            c for c in f.reader.objects_of(ObjectType.REVIEW_COMMENT) if c.payload["is_reply"]
        ]
        [parent] = [
            c for c in f.reader.objects_of(ObjectType.REVIEW_COMMENT) if not c.payload["is_reply"]
        ]
        assert reply.refs["in_reply_to"].identity == parent.identity
    assert first.report["data_gaps"]["projected"] == {}
    assert first.report["data_gaps"]["archive_only"] == {"reaction": 1}
    # - the reaction, + 3 refs, + the shadow branch of the open pull request (its head
    # branch "fix" is not in the repository, its commit is)
    assert first.counters["created"] == len(ids) - 1 + 3 + 1
    assert refs(target)["refs/heads/reposync/pr/2/head"] == refs(source)["refs/heads/main"]
    assert first.counters["unchanged"] == 1  # the reaction, archived

    second = sync(ctx, request)
    assert second.status == "completed"
    assert second.counters["checkpoint_skipped"] == second.counters["scanned"]
    assert items_of(ctx, second.id) == []
    assert "target" not in second.report["io"]


def test_edits_and_deletes_on_the_source_touch_exactly_those_objects(ctx, pair):
    """Changed and deleted objects become updates and deletes, nothing else."""
    source, target, request = pair
    ids = populate(source)
    sync(ctx, request)
    with forge(source) as f:
        f.update("issue", ids["i1"], title="It crashes on start", labels=["bug"])
        f.update("label", ids["bug"], color="ff0000")
        f.delete("issue_comment", ids["c2"])
        new_comment = f.add_comment("issue", ids["i3"], "reopening?", author="bob", created_at=WHEN)
    run = sync(ctx, request)
    assert run.status == "completed", run.report["problems"]
    touched = sorted((i.object_type, i.action) for i in items_of(ctx, run.id))
    assert touched == [
        ("issue", "update"),
        ("issue_comment", "create"),
        ("issue_comment", "delete"),
        ("label", "update"),
    ]
    assert new_comment
    assert snapshot(
        target, skip=(ObjectType.REVIEW_REQUEST, ObjectType.REACTION, ObjectType.ISSUE_COMMENT)
    ) == snapshot(
        source, skip=(ObjectType.REVIEW_REQUEST, ObjectType.REACTION, ObjectType.ISSUE_COMMENT)
    )


def test_full_audit_repairs_metadata_drift_on_the_standby(ctx, pair):
    """Someone edited a synced issue on the standby: a full audit puts it back."""
    source, target, request = pair
    populate(source)
    sync(ctx, request)
    provider = LocalProvider.open(EndpointSpec("local", str(target)))
    try:  # an operator lifts the standby guard and edits anyway
        provider.mark_standby(None)
        [issue] = [i for i in provider.forge.reader.objects_of(ObjectType.ISSUE) if i.number == 1]
        ForgeAuthoring(provider.forge).update(
            "issue", issue.identity, title="edited on the standby"
        )
    finally:
        provider.close()
    assert sync(ctx, request).counters["updated"] == 0  # a checkpoint trusts its links
    audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))
    assert audit.counters["updated"] == 1
    with forge(target) as f:
        [issue] = [i for i in f.reader.objects_of(ObjectType.ISSUE) if i.number == 1]
        assert issue.payload["title"] == "It crashes"


def test_a_standby_refuses_edits_outside_the_sync(ctx, pair):
    """Once synced, the standby's own API refuses edits: they belong to the authority."""
    source, target, request = pair
    populate(source)
    sync(ctx, request)
    with forge(target) as f, pytest.raises(PermissionDenied, match="is the standby of"):
        f.create_label("sneaky", color="000000")
    with forge(source) as f:  # the authority stays writable
        f.create_label("fine", color="000000")


def test_baseline_adopts_equal_objects_reports_target_only_and_never_overwrites(
    ctx, pair, tmp_path
):
    """A non-empty standby: equal adopted, extra kept and reported, collisions are conflicts."""
    source, target, request = pair
    with forge(source) as f:
        f.create_label("bug", color="d73a4a")
        f.create_label("docs", color="0075ca")
        f.create_milestone("v2")
        f.create_issue("Same on both", author="ann", created_at=WHEN)  # #1
    init_bare(target)
    with forge(target) as f:
        f.create_label("bug", color="d73a4a")  # equal: adopted
        f.create_label("docs", color="ffffff")  # same name, other color: conflict
        f.create_label("standby-only", color="000000")  # target only: preserved
        f.create_issue("Same on both", author="ann", created_at=WHEN)  # equal #1: adopted
    run = sync(ctx, request)
    assert run.plan_mode == "baseline"
    assert run.status == "requires_attention"
    assert run.counters["conflicts"] == 1
    assert run.counters["created"] == 1 + 3  # milestone v2, and the three refs
    assert run.counters["unchanged"] == 2
    with forge(target) as f:
        colors = {
            label.payload["name"]: label.payload["color"] for label in f.reader.objects_of("label")
        }
    assert colors == {"bug": "d73a4a", "docs": "ffffff", "standby-only": "000000"}
    problems = {p["error_code"]: p for p in run.report["problems"]}
    assert problems["conflict"]["examples"] == ["label docs"]
    assert problems["target_only_preserved"]["examples"] == ["label standby-only"]


def test_dry_run_writes_no_forge_object(ctx, pair):
    """A dry run on an existing standby plans every type and writes nothing."""
    source, target, request = pair
    init_bare(target)
    populate(source)
    dry = sync(ctx, SyncRequest(request.source, request.target, dry_run=True))
    assert dry.status == "completed"
    assert dry.report["planned_actions"]["create"] >= 14
    with forge(target) as f:
        assert f.reader.count() == 0


def test_several_linked_objects_gone_from_the_source_are_deleted_in_one_checkpoint(ctx, pair):
    """Issue 9 #1: the "gone" list followed the links' row order, and the snapshot's
    digest wants sorted keys: two deletes in one checkpoint crashed inventory_source."""
    source, target, request = pair
    with forge(source) as f:
        issue = f.create_issue("Chatty", author="ann", created_at=WHEN)
        comments = [
            f.add_comment("issue", issue, f"comment {n}", author="bob", created_at=WHEN)
            for n in range(1, 13)
        ]
    assert sync(ctx, request).status == "completed"
    gone = [comments[1], comments[9]]
    with forge(source) as f:
        for identity in gone:
            f.delete("issue_comment", identity)
    # Comment identities count up ("2" before "10") as the links' rows do; the
    # inventory's order is the identities' text order ("10" before "2").

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    assert run.counters["deleted"] == 2
    with forge(target) as f:
        bodies = sorted(c.payload["body"] for c in f.reader.objects_of(ObjectType.ISSUE_COMMENT))
    assert bodies == sorted(f"comment {n}" for n in range(1, 13) if n not in (2, 10))


def fork_pull_request(path: Path) -> str:
    """An open pull request whose head is a fork's branch: its commit is here, no branch."""
    set_ref(path, "refs/heads/fork-tip", refs(path)["refs/heads/main"])
    head = commit_on(path, "refs/heads/fork-tip", "a fork's work")
    delete_refs(path, ["refs/heads/fork-tip"])
    with forge(path) as f:
        f.create_pull_request(
            "From a fork",
            author="eve",
            base_ref="main",
            base_sha=refs(path)["refs/heads/main"],
            head_ref="eve:feature",
            head_sha=head,
        )
    return head


SHADOW = "refs/heads/reposync/pr/1/head"


def test_a_shadow_branch_missing_on_a_local_standby_is_found_and_pushed_again(ctx, pair):
    """Issue 9 #5: a local standby derived shadow branches from its own pull request
    rows, so read-back and audits saw shadows that Git did not have. A standby's refs
    are what its Git holds."""
    source, target, request = pair
    head = fork_pull_request(source)
    assert sync(ctx, request).status == "completed"
    assert refs(target)[SHADOW] == head
    delete_refs(target, [SHADOW])  # lost on the standby (a failed push, a human)

    audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))

    assert audit.status == "completed", audit.report["problems"]
    assert audit.counters["created"] == 1
    assert refs(target)[SHADOW] == head


def test_a_shadow_branch_that_did_not_arrive_is_not_counted_created(ctx, pair):
    """Read-back of a shadow branch on a local standby checks Git, not PR rows: once
    the pull request reached the standby, a shadow push that failed again read back
    as created (from the PR row) and was never retried."""
    source, target, request = pair
    # The target's hook refuses the shadow push (hooks run only when the operator opts in).
    ctx = ServiceContext(settings=ctx.settings.with_overrides(local_target_hooks=True), db=ctx.db)
    assert sync(ctx, request).status == "completed"
    head = fork_pull_request(source)
    hook = target / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\ngrep -q "refs/heads/reposync/pr/" && exit 1\nexit 0\n')
    hook.chmod(0o755)
    sync(ctx, request)  # the shadow is refused; the pull request reaches the standby
    # As when receive-pack took the pack but could not lock the ref: the commit is
    # there, the branch is not.
    subprocess.run(
        ["git", "-C", str(target), "fetch", "-q", str(source), f"{head}:refs/tmp/x"], check=True
    )
    delete_refs(target, ["refs/tmp/x"])

    again = sync(ctx, request)

    assert SHADOW not in refs(target)
    with ctx.db.session() as session:
        [shadow] = session.execute(
            select(RunItem).where(RunItem.run_id == again.id, RunItem.target_identity == SHADOW)
        ).scalars()
    assert shadow.state == "failed", (shadow.state, shadow.error_code)
    # The standby lock holds the hook's name; the refusing hook runs after it from here.
    (target / "hooks" / "pre-receive.reposync-chained").unlink()
    assert sync(ctx, request).status == "completed"
    assert refs(target)[SHADOW] == head
