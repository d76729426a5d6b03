"""Visibility: a standby more public than its authority needs the operator's yes.

Local forges are private; the GitHub test server's repository is made public (and later
GitHub Enterprise "internal") to expose the data.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update

from reposync.models import Binding
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.service.lookups import get_binding
from tests.github_env import embedded_world
from tests.gitrepo import generate, refs, set_ref

REPO = "acme/public-mirror"


@pytest.fixture
def world(tmp_path: Path, github_fake):
    repo = github_fake.state.create_repo(REPO, private=False)
    with embedded_world(github_fake, tmp_path) as (ctx, _):
        yield ctx, repo, github_fake


def github_refs(fake) -> dict[str, str]:
    return refs(Path(fake.state.git_dir(REPO)))


def binding_of(ctx, binding_id: int) -> Binding:
    with ctx.db.session() as session:
        binding = get_binding(session, binding_id)
        session.expunge(binding)
        return binding


def test_a_more_public_standby_is_refused_until_confirmed(tmp_path, world):
    """Unconfirmed: blocked before any write. Confirmed: the same sync converges."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)

    refused = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert refused.status != "completed"
    assert [p["error_code"] for p in refused.report["problems"]] == ["visibility_unconfirmed"]
    assert refused.counters["created"] == 0
    assert github_refs(fake) == {}  # nothing pushed
    binding = binding_of(ctx, refused.binding_id)
    assert (binding.a_visibility, binding.b_visibility) == ("private", "public")

    confirmed = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}", confirm_visibility=True))

    assert confirmed.status == "completed", confirmed.report["problems"]
    assert confirmed.counters["created"] > 0
    assert binding_of(ctx, confirmed.binding_id).visibility_confirmation is not None


def test_a_visibility_change_voids_the_confirmation_and_stops_the_schedule(tmp_path, world):
    """public -> internal changes the confirmed hash: blocked, scheduling turned off."""
    ctx, repo, fake = world
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    first = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}", confirm_visibility=True))
    assert first.status == "completed", first.report["problems"]
    with ctx.db.transaction() as session:  # an operator turned the schedule on
        session.execute(
            update(Binding)
            .where(Binding.id == first.binding_id)
            .values(sync_enabled=True, schedule_cron="*/5 * * * *", next_run_at=first.finished_at)
        )
    refs_before = github_refs(fake)
    set_ref(source, "refs/heads/new-work", refs(source)["refs/heads/main"])  # to be synced
    repo.private, repo.internal = True, True  # still more public than a local forge

    blocked = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert [p["error_code"] for p in blocked.report["problems"]] == ["visibility_unconfirmed"]
    binding = binding_of(ctx, blocked.binding_id)
    assert (binding.sync_enabled, binding.next_run_at) == (False, None)
    assert binding.b_visibility == "internal"
    assert github_refs(fake) == refs_before
