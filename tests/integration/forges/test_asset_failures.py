"""Issue 12 #6: one asset whose source bytes cannot be read fails its own item, with a
code; the rest of its batch (up to 500 assets) still arrives. Before, it failed the
whole batch as ``provider_unavailable``. Issue 23 #12: so does an asset larger than
REPOSYNC_MAX_ASSET_BYTES, before any byte of it is sent."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import WHEN, forge

REPO = "acme/assets"
BROKEN, FINE = b"these bytes go missing", b"these bytes arrive"


def asset_items(ctx, run_id: int) -> dict[str, tuple[str, str | None]]:
    with ctx.db.session() as session:
        rows = session.execute(
            select(RunItem).where(
                RunItem.run_id == run_id, RunItem.object_type == ObjectType.RELEASE_ASSET.value
            )
        ).scalars()
        return {r.object_key: (r.state, r.error_code) for r in rows}


def release_with_two_assets(path: Path) -> None:
    generate(path, commits=2, branches=0, tags=1)
    with forge(path) as f:
        release = f.create_release("v1", author="ann", created_at=WHEN, published_at=WHEN)
        f.upload_asset(release, "broken.bin", BROKEN)
        f.upload_asset(release, "fine.bin", FINE)


def assets_of(path: Path) -> set[str]:
    with forge(path) as f:
        return {a.payload["name"] for a in f.reader.objects_of(ObjectType.RELEASE_ASSET)}


def test_a_local_source_asset_without_its_bytes_fails_alone(tmp_path, ctx):
    source = tmp_path / "src.git"
    release_with_two_assets(source)
    (source / "reposync" / "assets" / hashlib.sha256(BROKEN).hexdigest()).unlink()
    target = tmp_path / "dst.git"

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    items = asset_items(ctx, run.id)
    assert items["asset broken.bin of v1"] == ("failed", "source_content_unavailable")
    assert items["asset fine.bin of v1"][0] == "completed"
    assert assets_of(target) == {"fine.bin"}
    [problem] = [p for p in run.report["problems"] if p["error_code"] != "conflict"]
    assert problem["error_code"] == "source_content_unavailable"


def test_a_github_download_that_fails_fails_its_asset_alone(tmp_path, github_fake):
    github_fake.state.create_repo(REPO, private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        a = tmp_path / "a.git"
        release_with_two_assets(a)
        assert sync(ctx, SyncRequest(f"local:{a}", f"github:{REPO}")).status == "completed"
        github_fake.faults.error("GET", r"/releases/download/.*/broken\.bin$", status=502, count=5)
        b = tmp_path / "b.git"

        run = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))

        items = asset_items(ctx, run.id)
        assert items["asset broken.bin of v1"] == ("failed", "source_content_unavailable")
        assert items["asset fine.bin of v1"][0] == "completed"
        assert assets_of(b) == {"fine.bin"}
        github_fake.faults.clear()
        again = sync(ctx, SyncRequest(f"github:{REPO}", f"local:{b}"))
        assert again.status == "completed", again.report["problems"]
        assert assets_of(b) == {"broken.bin", "fine.bin"}


# -- REPOSYNC_MAX_ASSET_BYTES (issue 23) ---------------------------------------------------

HUGE = b"h" * 64  # over the cap the tests set


def release_with_a_huge_asset(path: Path) -> str:
    """A release with a fine asset and one over the cap; returns the huge one's id."""
    generate(path, commits=2, branches=0, tags=1)
    with forge(path) as f:
        release = f.create_release("v1", author="ann", created_at=WHEN, published_at=WHEN)
        f.upload_asset(release, "fine.bin", FINE)
        return f.upload_asset(release, "huge.bin", HUGE)


def test_an_asset_over_the_cap_fails_alone_and_leaves_nothing_on_a_local_target(
    tmp_path, settings, sqlite_db
):
    """A local target: asset_too_large for the one asset, naming the setting; the rest of
    the Run lands, and no byte of the asset reaches the target's store."""
    ctx = ServiceContext(settings=settings.with_overrides(max_asset_bytes=32), db=sqlite_db)
    source, target = tmp_path / "src.git", tmp_path / "dst.git"
    release_with_a_huge_asset(source)

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))

    items = asset_items(ctx, run.id)
    assert items["asset huge.bin of v1"] == ("failed", "asset_too_large")
    assert items["asset fine.bin of v1"][0] == "completed"
    assert run.error_code is None  # the item failed, not the Run
    assert assets_of(target) == {"fine.bin"}
    stored = {p.name for p in (target / "reposync" / "assets").iterdir()}
    assert stored == {hashlib.sha256(FINE).hexdigest()}  # not even a temporary file
    [problem] = [p for p in run.report["problems"] if p["error_code"] == "asset_too_large"]
    assert "REPOSYNC_MAX_ASSET_BYTES" in problem["suggested_action"]
    assert problem["retryable"] is False


def test_an_asset_over_the_cap_is_never_sent_to_github_nor_replaced_there(tmp_path, github_fake):
    """GitHub: a new asset over the cap is never uploaded, and one already there whose
    update (a delete, then an upload) would go over it is left as it is."""
    github_fake.state.create_repo(REPO, private=True)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        source = tmp_path / "src.git"
        huge = release_with_a_huge_asset(source)
        request = SyncRequest(f"local:{source}", f"github:{REPO}")
        assert sync(ctx, request).status == "completed"  # under the default cap
        [release] = github_fake.state.releases(REPO)
        before = {a.name: a.id for a in github_fake.state.assets(REPO, release.id)}
        with forge(source) as f:
            f.update("release_asset", huge, content_type="text/plain")
            f.upload_asset(f.reader.objects_of("release")[0].identity, "huge2.bin", HUGE)
        ctx.settings = ctx.settings.with_overrides(max_asset_bytes=32)
        sent = len(github_fake.requests_log)

        run = sync(ctx, request)

        items = asset_items(ctx, run.id)
        assert items["asset huge.bin of v1"] == ("failed", "asset_too_large")
        assert items["asset huge2.bin of v1"] == ("failed", "asset_too_large")
        after = {a.name: a.id for a in github_fake.state.assets(REPO, release.id)}
        assert after == before  # the old huge.bin is still there, untouched
        writes = [r for r in list(github_fake.requests_log)[sent:] if r.method != "GET"]
        assert writes == []
