"""Visibility: a standby more public than its authority needs the operator's yes.

Local forges are private; the GitHub test server's repository is made public (and later
GitHub Enterprise "internal") to expose the data.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from reposync.cli import main
from reposync.errors import VisibilityUnconfirmed
from reposync.models import Binding
from reposync.models.db import Database
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.service.lookups import get_binding
from tests.github_env import embedded_world, github_env
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


def bindings(ctx) -> int:
    with ctx.db.session() as session:
        return session.execute(select(func.count()).select_from(Binding)).scalar_one()


def test_a_more_public_standby_is_refused_until_confirmed(tmp_path, world):
    """Unconfirmed: the Binding is not even made (no row, no Run, nothing pushed).
    Confirmed: the same sync makes it, with both visibilities, and converges."""
    ctx, _, fake = world
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)

    with pytest.raises(VisibilityUnconfirmed, match="public"):
        sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert bindings(ctx) == 0
    assert github_refs(fake) == {}  # nothing pushed

    confirmed = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}", confirm_visibility=True))

    assert confirmed.status == "completed", confirmed.report["problems"]
    assert confirmed.counters["created"] > 0
    binding = binding_of(ctx, confirmed.binding_id)
    assert binding.visibility_confirmation is not None
    assert (binding.a_visibility, binding.b_visibility) == ("private", "public")


def test_the_cli_refuses_to_bind_a_more_public_standby_without_its_flag(
    tmp_path, capsys, data_dir, github_fake, monkeypatch
):
    """``reposync sync`` on first use: one error line naming --confirm-visibility, no
    Binding in the data directory; with the flag the pair is bound and synced."""
    github_fake.state.create_repo(REPO, private=False)
    token = github_fake.add_token("acme")
    for name, value in {
        **github_env(github_fake, token),
        "REPOSYNC_GITHUB_WRITE_INTERVAL": "0",
    }.items():
        monkeypatch.setenv(name, value)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    argv = ["sync", f"local:{source}", f"github:{REPO}"]

    status = main(argv)

    err = capsys.readouterr().err
    assert status != 0
    assert "[visibility_unconfirmed]" in err
    assert "--confirm-visibility" in err
    database = Database(f"sqlite:///{data_dir / 'reposync.db'}")
    try:
        with database.session() as session:
            assert session.execute(select(func.count()).select_from(Binding)).scalar_one() == 0
        assert github_refs(github_fake) == {}

        assert main([*argv, "--confirm-visibility"]) == 0, capsys.readouterr().err
        with database.session() as session:
            bound = session.execute(select(Binding)).scalar_one()
            assert bound.visibility_confirmation is not None
    finally:
        database.dispose()


def test_finding_an_existing_binding_refuses_nothing(tmp_path, world):
    """Binding an already bound pair again (no confirmation asked) finds it; the Run, not
    the binding, judges the visibility that changed since."""
    ctx, repo, _ = world
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    repo.private = True  # private -> private: bound without a question
    first = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
    assert first.status == "completed", first.report["problems"]
    repo.private = False  # made public afterwards

    again = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))

    assert again.binding_id == first.binding_id
    assert [p["error_code"] for p in again.report["problems"]] == ["visibility_unconfirmed"]


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
