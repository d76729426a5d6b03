"""Labels, milestones, issues and releases keep their shape through GitHub and back
(issue 10 #3, #4, #6).

What GitHub cannot hold as the source has it is represented and counted, and read back
as the source's:

* an asset name GitHub rewrites (``checksums file.txt`` -> ``checksums.file.txt``) keeps
  the source's name in the asset's label (``renamed``);
* a milestone due at another time than midnight US Pacific keeps its exact time in a
  header of its description (``due_day_only``): GitHub stores the day only;
* an issue's lock and its reason are GitHub's own (lock/unlock), nothing is lost.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.handoff import handoff
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import WHEN, forge

REPO = "acme/widgets"
FAMILY = (
    ObjectType.LABEL,
    ObjectType.MILESTONE,
    ObjectType.ISSUE,
    ObjectType.RELEASE,
    ObjectType.RELEASE_ASSET,
)
#: Asset names GitHub rewrites, and what it makes of them.
RENAMED = {
    "checksums file.txt": "checksums.file.txt",
    "ünïcode.bin": "n.code.bin",
    "notes (draft)~1.md": "notes.draft.1.md",
}


def items_of(ctx: ServiceContext, run_id: int) -> list[RunItem]:
    with ctx.db.session() as session:
        return list(session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars())


def family_forge(path: Path) -> None:
    """Labels, milestones due at odd times, issues with unicode titles, gaps in their
    numbers and locks, releases (published, prerelease, draft) with assets whose names
    GitHub rewrites."""
    generate(path, commits=3, branches=0, tags=2)
    subprocess.run(
        ["git", f"--git-dir={path}", "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    with forge(path) as f:
        f.create_label("bug", color="d73a4a", description="Something is broken")
        f.create_label("ünïcode 🎨", color="0e8a16")
        # 12:34:56 UTC; 03:00 UTC is the day before in US Pacific time; 08:00 UTC on a
        # winter day is GitHub's own midnight (no header needed); one without a date.
        f.create_milestone("v1", description="first", due_on="2026-03-01T12:34:56Z")
        f.create_milestone("v2", due_on=datetime(2026, 7, 15, 3, 0, tzinfo=UTC))
        f.create_milestone("v0", state="closed", due_on="2026-01-10T08:00:00Z")
        f.create_milestone("someday")
        f.create_issue(
            "Ünïcode — 测试 crashes",
            author="ann",
            created_at=WHEN,
            labels=["bug", "ünïcode 🎨"],
            milestone="v1",
            locked=True,
            active_lock_reason="too heated",
        )
        f.create_issue("Gap before me", author="bob", created_at=WHEN, number=3, milestone="v2")
        f.create_issue(
            "Locked without a reason",
            author="ann",
            created_at=WHEN,
            number=4,
            state="closed",
            state_reason="not_planned",
            closed_at=WHEN,
            locked=True,
        )
        f.create_issue("Far away", author="carol", created_at=WHEN, number=9)
        v1 = f.create_release(
            "v00001", author="ann", name="One", body="notes", created_at=WHEN, published_at=WHEN
        )
        f.upload_asset(v1, "checksums file.txt", b"abc  file\n", "text/plain")
        f.upload_asset(v1, "ünïcode.bin", b"\x00\x01\x02")
        f.upload_asset(v1, "plain.tar.gz", b"\x1f\x8b data", "application/gzip")
        rc = f.create_release(
            "v00000", author="bob", prerelease=True, created_at=WHEN, published_at=WHEN
        )
        f.upload_asset(rc, "notes (draft)~1.md", b"# rc\n", "text/markdown")
        draft = f.create_release("v3.0", author="ann", draft=True, created_at=WHEN)
        f.upload_asset(draft, "draft build.zip", b"PK draft")


def family(path: Path) -> dict[str, list[Any]]:
    """The family canonically: content hashes, and each asset with its release's."""
    with forge(path) as f:
        releases = {r.identity: r for r in f.reader.objects_of(ObjectType.RELEASE)}
        out: dict[str, list[Any]] = {
            t.value: sorted((o.number or 0, o.content_hash) for o in f.reader.objects_of(t))
            for t in FAMILY
            if t is not ObjectType.RELEASE_ASSET
        }
        out["release_asset"] = sorted(
            (releases[a.refs["parent"].identity].payload["tag"], a.content_hash)
            for a in f.reader.objects_of(ObjectType.RELEASE_ASSET)
        )
        return out


@pytest.fixture
def world(tmp_path: Path, github_fake):
    github_fake.state.create_repo(REPO, private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, recorder):
        yield ctx, recorder, github_fake


def test_the_family_round_trips_through_github_and_back(tmp_path, world):
    """A -> GitHub -> B: B equals A canonically; what GitHub shows differently is counted
    by kind; full audits find nothing and write nothing; GitHub holds the lock state,
    GitHub's asset names (the source's in the label) and the due days it keeps."""
    ctx, _, fake = world
    a = tmp_path / "a.git"
    family_forge(a)
    request = SyncRequest(f"local:{a}", f"github:{REPO}")

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    gaps = first.report["data_gaps"]
    assert gaps["renamed"] == {"release_asset": 4}  # incl. the draft's
    assert gaps["due_day_only"] == {"milestone": 2}  # v1 and v2, not GitHub's midnight
    issues = {i.number: i for i in fake.state.issues(REPO)}
    assert (issues[1].locked, issues[1].active_lock_reason) == (True, "too heated")
    assert (issues[4].locked, issues[4].active_lock_reason) == (True, None)
    assert not issues[3].locked
    milestones = {m.title: m for m in fake.state.milestones(REPO)}
    assert milestones["v1"].due_on == datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    assert milestones["v2"].due_on == datetime(2026, 7, 14, 7, 0, tzinfo=UTC)  # Pacific day
    assert milestones["v0"].due_on == datetime(2026, 1, 10, 8, 0, tzinfo=UTC)
    assert "reposync:attribution" not in (milestones["v0"].description or "")
    assets = {
        asset.name: asset.label
        for release in fake.state.releases(REPO)
        for asset in fake.state.assets(REPO, release.id)
    }
    for original, shown in RENAMED.items():
        assert assets[shown] == original
    assert assets["plain.tar.gz"] is None
    assert assets["draft.build.zip"] == "draft build.zip"

    for _ in range(2):
        audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))
        assert (audit.status, items_of(ctx, audit.id)) == ("completed", [])

    b = tmp_path / "b.git"
    back = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))
    assert back.status == "completed", back.report["problems"]
    assert family(b) == family(a)
    audit = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}", full_audit=True))
    assert (audit.status, items_of(ctx, audit.id)) == ("completed", [])


def test_a_handoff_to_github_and_back_keeps_the_family(tmp_path, world):
    """local -> GitHub, hand the authority to GitHub (the reverse dry run finds nothing),
    a full apply GitHub -> local writes nothing, and the authority comes back; a fresh
    local forge from GitHub equals the original, with nothing counted as a gap."""
    ctx, _, _ = world
    a = tmp_path / "a.git"
    family_forge(a)
    original = family(a)
    request = SyncRequest(f"local:{a}", f"github:{REPO}")
    assert sync(ctx, request).status == "completed"
    binding = bind(ctx, request).id

    there = handoff(ctx, binding)

    assert there.reverse_run_id is not None
    planned = [(i.object_type, i.action, i.object_key) for i in items_of(ctx, there.reverse_run_id)]
    assert planned == []
    assert there.switched, there.reason
    reverse = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{a}", full_audit=True))
    assert (reverse.status, items_of(ctx, reverse.id)) == ("completed", [])
    back_again = handoff(ctx, binding, writes_stopped=True)  # GitHub cannot be frozen
    assert back_again.switched, back_again.reason
    assert family(a) == original

    b = tmp_path / "b.git"
    back = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))
    assert back.status == "completed", back.report["problems"]
    assert back.report["data_gaps"]["total"] == 0  # a local forge holds it all natively
    assert family(b) == original


def test_lock_changes_on_the_source_reach_github(tmp_path, world):
    """Unlocking, locking and changing the reason are updates GitHub receives (PUT and
    DELETE /lock) and reads back."""
    ctx, _, fake = world
    a = tmp_path / "a.git"
    family_forge(a)
    request = SyncRequest(f"local:{a}", f"github:{REPO}")
    assert sync(ctx, request).status == "completed"
    with forge(a) as f:
        by_number = {i.number: i.identity for i in f.reader.objects_of(ObjectType.ISSUE)}
        f.update(ObjectType.ISSUE, by_number[1], locked=False, active_lock_reason=None)
        f.update(ObjectType.ISSUE, by_number[3], locked=True, active_lock_reason="spam")
        f.update(ObjectType.ISSUE, by_number[4], active_lock_reason="resolved")

    run = sync(ctx, request)

    assert run.status == "completed", run.report["problems"]
    issues = {i.number: i for i in fake.state.issues(REPO)}
    assert (issues[1].locked, issues[1].active_lock_reason) == (False, None)
    assert (issues[3].locked, issues[3].active_lock_reason) == (True, "spam")
    assert (issues[4].locked, issues[4].active_lock_reason) == (True, "resolved")
    audit = sync(ctx, SyncRequest(request.source, request.target, full_audit=True))
    assert (audit.status, items_of(ctx, audit.id)) == ("completed", [])


def test_a_lost_answer_to_a_renamed_assets_upload_never_uploads_it_twice(tmp_path, world):
    """The upload happened under GitHub's name, its answer was lost: the asset is found by
    the source's name in its label, counted renamed, and not sent again."""
    ctx, _, fake = world
    a = tmp_path / "a.git"
    family_forge(a)
    lost = fake.faults.commit_then_drop("POST", r"/releases/\d+/assets$", host="uploads", count=1)

    run = sync(ctx, SyncRequest(f"local:{a}", f"github:{REPO}"))

    assert run.status == "completed", run.report["problems"]
    assert lost.hits == 1
    [dropped] = [r for r in fake.requests_log if r.fault == "commit_then_drop"]
    assert dropped.query["name"] in RENAMED  # the one lost was renamed by GitHub
    assert run.report["data_gaps"]["renamed"] == {"release_asset": 4}
    names = [
        asset.name
        for release in fake.state.releases(REPO)
        for asset in fake.state.assets(REPO, release.id)
    ]
    assert len(names) == len(set(names)) == 5
    b = tmp_path / "b.git"
    assert sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}")).status == "completed"
    assert family(b) == family(a)
