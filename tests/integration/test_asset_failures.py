"""Issue 12 #6: one asset whose source bytes cannot be read fails its own item, with a
code; the rest of its batch (up to 500 assets) still arrives. Before, it failed the
whole batch as ``provider_unavailable``."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import select

from reposync.models import RunItem
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.github_env import embedded_world
from tests.gitrepo import generate
from tests.integration.test_forge_sync import WHEN, forge

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
