"""Issue 24's bar for whole owners, on real workers (PostgreSQL, Redis, ``celery worker``
subprocesses with beat): binding an owner of fifty repositories makes fifty Bindings whose
first Runs converge, the tick switches their sync on after those full applies, and a pass
after a new source repository appears (sent to a worker as the API sends it) binds just
that one. Local to local, and local to the GitHub test server.

Why real workers and fifty repositories: the issue's bar is exactly this. Each repository
holds one commit, so the cost is the Runs' stages, not Git: fifty converged in about 11 s
(local) and 17 s (GitHub test server) on two workers when measured; about 25 s and 30 s
per test in all (each prints its own time)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.models import Binding, Run
from reposync.service import owners
from reposync.service.context import ServiceContext
from reposync.service.owners import OwnerRequest
from tests.github_env import github_fields, github_worker_env
from tests.gitrepo import generate, refs
from tests.integration.conftest import TERMINAL
from tests.workers import start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

OWNED = 50


def make_owner(root: Path, count: int) -> list[str]:
    names = [f"repo-{n:02d}" for n in range(count)]
    for name in names:
        generate(root / f"{name}.git", commits=1, branches=0, tags=0)
    return names


def runs_of(ctx: ServiceContext, binding_ids: list[int]) -> list[Run]:
    with ctx.db.session() as session:
        return list(
            session.execute(select(Run).where(Run.binding_id.in_(binding_ids))).scalars().all()
        )


def wait_converged(ctx: ServiceContext, binding_ids: list[int], timeout: float) -> list[Run]:
    """Every Binding's first Run ended; returns them."""

    def ended() -> bool:
        found = runs_of(ctx, binding_ids)
        return len(found) >= len(binding_ids) and all(r.status in TERMINAL for r in found)

    wait_for(ended, timeout, f"the first Runs of {len(binding_ids)} Bindings")
    # Only the first of each: the tick that switched a converged Binding's sync on may
    # already have started its scheduled Run.
    first: dict[int, Run] = {}
    for run in sorted(runs_of(ctx, binding_ids), key=lambda r: r.id):
        first.setdefault(run.binding_id, run)
    return list(first.values())


def sync_enabled(ctx: ServiceContext, binding_ids: list[int]) -> list[bool]:
    with ctx.db.session() as session:
        return list(
            session.execute(
                select(Binding.sync_enabled).where(Binding.id.in_(binding_ids))
            ).scalars()
        )


def bind_and_converge(
    ctx: ServiceContext, request: OwnerRequest, names: list[str]
) -> tuple[int, list[int]]:
    """bind-all's pass, here; the fifty first Runs, on the workers."""
    started = time.monotonic()
    row, report = owners.bind_all(ctx, request)
    assert row is not None
    assert report is not None
    assert report.counts() == {"created": len(names)}, report.to_dict()
    binding_ids = [repo.binding_id for repo in report.repositories if repo.binding_id]
    assert len(binding_ids) == len(names)
    finished = wait_converged(ctx, binding_ids, timeout=600)
    assert [r.status for r in finished] == ["completed"] * len(names), [
        (r.binding_id, r.status, r.error_code) for r in finished if r.status != "completed"
    ]
    print(f"{len(names)} Bindings made and converged in {time.monotonic() - started:.1f} s")
    wait_for(lambda: all(sync_enabled(ctx, binding_ids)), 60, "the tick to switch their sync on")
    return row.id, binding_ids


def second_pass_binds_only(ctx: ServiceContext, owner_binding_id: int, new: str) -> int:
    """A pass asked for as the API asks (a worker runs it) binds just ``new``."""
    owners.request_pass(ctx, owner_binding_id)

    def passed() -> bool:
        last = owners.get_owner_binding(ctx, owner_binding_id).last_pass or {}
        return last.get("counts", {}).get("created") == 1

    wait_for(passed, 120, "the second pass")
    last = owners.get_owner_binding(ctx, owner_binding_id).last_pass
    assert last is not None
    assert last["counts"] == {"already_bound": OWNED, "created": 1}
    [made] = [repo for repo in last["repositories"] if repo["outcome"] == "created"]
    assert made["name"] == new
    [run] = wait_converged(ctx, [made["binding_id"]], timeout=120)
    assert run.status == "completed", run.report
    return int(made["binding_id"])


def test_fifty_local_repositories_are_bound_and_synced_by_real_workers(
    tmp_path, dctx, env, workers
):
    """local:/forge -> local:/mirror: fifty created targets equal their sources; a new
    source repository is bound by the next pass, alone."""
    source, target = tmp_path / "forge", tmp_path / "mirror"
    names = make_owner(source, OWNED)
    target.mkdir()
    workers.append(start_worker(env, tmp_path, "w1", beat=True))
    workers.append(start_worker(env, tmp_path, "w2"))
    request = OwnerRequest(f"local:{source}", f"local:{target}", schedule_cron="*/10 * * * *")
    owner_binding_id, _ = bind_and_converge(dctx, request, names)
    for name in names:
        assert refs(target / f"{name}.git") == refs(source / f"{name}.git"), name
    generate(source / "newcomer.git", commits=1, branches=0, tags=0)
    second_pass_binds_only(dctx, owner_binding_id, "newcomer")
    assert refs(target / "newcomer.git") == refs(source / "newcomer.git")


def test_fifty_local_repositories_are_bound_into_a_github_organization(
    tmp_path, pg_ctx, env, sender, workers, github_fake
):
    """local:/forge -> github:acme-org on the GitHub test server: fifty private
    repositories created there and synced by the workers; the next pass binds a new one
    alone."""
    from reposync.tasks.base import CeleryDispatcher

    fake = github_fake
    fake.state.add_member("acme-org", "acme")
    fake.limiter.secondary.per_minute = fake.limiter.secondary.per_hour = 100_000
    token = fake.add_token("acme")
    env.update(github_worker_env(fake, token))
    settings = pg_ctx.settings.with_overrides(**github_fields(fake, token))
    ctx = ServiceContext(settings=settings, db=pg_ctx.db, dispatcher=CeleryDispatcher(sender))
    source = tmp_path / "forge"
    names = make_owner(source, OWNED)
    workers.append(start_worker(env, tmp_path, "w1", beat=True))
    workers.append(start_worker(env, tmp_path, "w2"))
    owner_binding_id, _ = bind_and_converge(
        ctx, OwnerRequest(f"local:{source}", "github:acme-org"), names
    )
    for name in names:
        made = fake.state.repo(f"acme-org/{name}")
        assert made.private, name
        assert refs(made.git_dir) == refs(source / f"{name}.git"), name
    generate(source / "newcomer.git", commits=1, branches=0, tags=0)
    second_pass_binds_only(ctx, owner_binding_id, "newcomer")
    assert refs(fake.state.git_dir("acme-org/newcomer")) == refs(source / "newcomer.git")
