"""Rate limits defer a Run as often as they must; a wait is never an item's attempt.

Two kinds of test of one promise (issue 23, item 1):

* a bootstrap of 2,000 issues with comments to the GitHub test server with GitHub's
  content-creation limits on (80 a minute, 500 an hour), deferred dozens of times;
* seeded fault injection: rate limits strike a local target (and source) at random
  calls, writes cut short at random points, some of them after the write landed.

Time is virtual and shared by both sides: it moves only when someone waits (a deferred
Run's wait, reposync's pacing), so hours of GitHub time pass in seconds, and how often a
Run is deferred does not depend on how fast the machine is. The bootstrap still sends
~6,200 requests to the test server (~40 s): 2,000 issues is the size the issue names.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from reposync.config import Settings
from reposync.errors import RateLimited
from reposync.models import RunEvent, RunItem
from reposync.models.db import Database
from reposync.providers.base import (
    ApplyResult,
    EndpointSpec,
    ItemError,
    Provider,
    ProviderEnvironment,
    TargetWrite,
    WriteStatus,
)
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.service.bindings import SyncRequest
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.sync.canonical import CanonicalObject, IndexEntry
from reposync.sync.vocabulary import Action, ItemState, ObjectType
from tests.fakes.github import GitHubFake, ManualClock, SecondaryLimits
from tests.github_env import github_settings
from tests.gitrepo import generate, init_bare
from tests.integration.forges.test_forge_sync import snapshot

REPO = "acme/archive"
ISSUES = 2000


class WaitingClock(ManualClock):
    """Virtual time that moves only when someone waits: the GitHub test server reads it
    as its clock (``clock()``), reposync as its providers' ``Clock`` (``now``/``sleep``)."""

    def now(self) -> datetime:
        return self()

    def sleep(self, seconds: float) -> None:
        self.advance(max(seconds, 0.0))


def deferrals(db: Database, run_id: int) -> int:
    """The Run's ``deferred`` events: one per rate limit that stopped it."""
    with db.session() as session:
        return session.execute(
            select(func.count())
            .select_from(RunEvent)
            .where(RunEvent.run_id == run_id, RunEvent.type == "deferred")
        ).scalar_one()


def item_summary(db: Database, run_id: int) -> tuple[dict[str, int], dict[int, int], set[str]]:
    """Items per state, per attempt count, and every error code they ended with."""
    with db.session() as session:
        rows = session.execute(
            select(RunItem.state, RunItem.attempt_count, RunItem.error_code).where(
                RunItem.run_id == run_id
            )
        ).all()
    states: dict[str, int] = {}
    attempts: dict[int, int] = {}
    for state, attempt_count, _ in rows:
        states[state] = states.get(state, 0) + 1
        attempts[attempt_count] = attempts.get(attempt_count, 0) + 1
    return states, attempts, {code for _, _, code in rows if code is not None}


# -- 2,000 issues to the GitHub test server ------------------------------------------------


def build_archive(path: Path) -> set[int]:
    """Issues #1..#2000 and a comment on every fourth; returns the numbers of the closed
    ones. A closed issue is a create and a closing edit, which a limit can fall between;
    which are closed is drawn (seeded): a pattern would make the limit strike the same
    place of it every minute."""
    generate(path, commits=2, branches=0, tags=0)
    draw = random.Random(23)
    closed = {n for n in range(1, ISSUES + 1) if draw.random() < 0.25}
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        forge = ForgeAuthoring(provider.forge)
        ids = forge.create_many(
            "issue",
            [
                {
                    "title": f"Issue {n}",
                    "body": f"What happened in {n}",
                    "author": f"user{n % 40}",
                    **({"state": "closed", "state_reason": "completed"} if n in closed else {}),
                }
                for n in range(1, ISSUES + 1)
            ],
        )
        for issue in ids[::4]:
            forge.add_comment("issue", issue, f"About {issue}", author="ann")
    finally:
        provider.close()
    return closed


@pytest.fixture
def clock() -> WaitingClock:
    return WaitingClock()


@pytest.fixture
def limited_github(clock: WaitingClock) -> Iterator[GitHubFake]:
    """The GitHub test server with GitHub's content-creation limits, on the shared clock.

    Requests are checked against GitHub's description; its ~2,500 listed and read-back
    issues are not (the other GitHub tests check responses: here it would double the
    time of a test about deferrals)."""
    with GitHubFake(
        clock=clock,
        secondary=SecondaryLimits(per_minute=80, per_hour=500),
        validate_responses=False,
    ) as fake:
        fake.state.create_repo(REPO, private=True)
        yield fake
        fake.assert_clean(requests_too=True)


def test_a_bootstrap_deferred_dozens_of_times_completes_in_one_run(tmp_path, limited_github, clock):
    """2,000 issues with comments under GitHub's secondary limits: each 403 defers the
    Run, which completes all the same; no wait costs an item an attempt, and an issue
    the limit cut short is found, never created twice."""
    fake = limited_github
    source = tmp_path / "source.git"
    closed = build_archive(source)
    db = Database(f"sqlite:///{tmp_path / 'reposync.db'}")
    db.upgrade()
    configured = github_settings(
        fake,
        tmp_path / "data",
        fake.add_token("acme"),
        github_write_interval=0.0,
        embedded_max_wait=7200.0,
        lease_ttl=300.0,
    )
    # No write budget of reposync's own: every deferral is GitHub's 403, as when another
    # writer shares the account's budget (or GitHub limits "for undisclosed reasons").
    environment = ProviderEnvironment(settings=configured, clock=clock)
    ctx = ServiceContext(settings=configured, db=db, environment=environment)
    try:
        run = sync(ctx, SyncRequest(f"local:{source}", f"github:{REPO}"))
        deferred = deferrals(db, run.id)
        states, attempts, codes = item_summary(db, run.id)
        with db.session() as session:
            again = set(
                session.execute(
                    select(RunItem.object_key).where(
                        RunItem.run_id == run.id, RunItem.attempt_count > 1
                    )
                ).scalars()
            )
    finally:
        db.dispose()

    assert run.status == "completed", run.report["problems"]
    assert deferred >= 10
    assert fake.requests_log.secondary_limited_count() >= deferred
    assert states == {ItemState.COMPLETED.value: ISSUES + ISSUES // 4 + 1}  # and main
    assert set(attempts) <= {1, 2}, attempts
    assert codes == set()
    # Only an issue created, then refused its closing edit for the limit, took a second
    # write (its update, once found by its marker): the waits cost nothing.
    cut_short = {
        f"issue #{record.path.rsplit('/', 1)[1]}"
        for record in fake.requests_log.matching("PATCH", r"/issues/\d+$")
        if record.secondary_limited
    }
    assert cut_short, "the limit never fell between a create and its closing edit"
    assert again == cut_short
    issues = fake.state.issues(REPO)
    assert sorted(i.number for i in issues) == list(range(1, ISSUES + 1))  # none twice
    assert {i.number for i in issues if i.state == "closed"} == closed
    assert len(fake.state.comments(REPO)) == ISSUES // 4


# -- seeded fault injection on local forges ------------------------------------------------


class Strikes:
    """Where rate limits strike: each call of a striking method draws from one seeded
    generator, until ``budget`` strikes have been spent (so every Run can finish)."""

    def __init__(self, seed: int, rate: float, budget: int, clock: WaitingClock) -> None:
        self.random = random.Random(seed)
        self.rate = rate
        self.budget = budget
        self.clock = clock
        self.struck = 0
        #: Markers of creates sent for an object the target already held.
        self.twice: list[str] = []

    def strike(self) -> datetime | None:
        """When the limit lifts, if it strikes this call."""
        if self.struck >= self.budget or self.random.random() >= self.rate:
            return None
        self.struck += 1
        return self.clock.now() + timedelta(seconds=self.random.randint(1, 120))

    def limited(self) -> None:
        retry_at = self.strike()
        if retry_at is not None:
            raise RateLimited("test limit", retry_at=retry_at)


class LimitedLocal(LocalProvider):
    """A local forge whose reads may raise ``RateLimited`` and whose batch writes a rate
    limit may cut short: the write it strikes is deferred with the rest, sometimes after
    it landed (a forge's create whose second request the limit refused).

    The local forge takes a create whose marker it holds as the object it holds; GitHub
    makes a second object. So every such create is recorded in ``strikes.twice``: it
    would have been a duplicate there."""

    strikes: Strikes

    def read_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, CanonicalObject | None]:
        self.strikes.limited()
        return super().read_batch(object_type, identities)

    def read_index_batch(
        self, object_type: ObjectType, identities: Sequence[str]
    ) -> dict[str, IndexEntry | None]:
        self.strikes.limited()
        return super().read_index_batch(object_type, identities)

    def find_by_markers(self, object_type: ObjectType, markers: Sequence[str]) -> dict[str, str]:
        self.strikes.limited()
        return super().find_by_markers(object_type, markers)

    def apply_batch(self, writes: Sequence[TargetWrite]) -> list[ApplyResult]:
        self.strikes.twice.extend(
            w.marker
            for w in writes
            if w.action is Action.CREATE
            and w.marker
            and LocalProvider.find_by_markers(self, w.object_type, [w.marker])
        )
        retry_at = self.strikes.strike()
        if retry_at is None or not writes:
            return super().apply_batch(writes)
        cut = self.strikes.random.randrange(len(writes))
        results = super().apply_batch(writes[:cut])
        if self.strikes.random.random() < 0.5:  # the struck write landed all the same
            super().apply_batch(writes[cut : cut + 1])
        error = ItemError(RateLimited.code, "test limit")
        return results + [
            ApplyResult(w.item_id, WriteStatus.DEFERRED, error=error, retry_at=retry_at)
            for w in writes[cut:]
        ]


def limited_opener(strikes: Strikes) -> Any:
    def open_limited(spec: EndpointSpec) -> Provider:
        provider = LimitedLocal.open(spec)
        provider.strikes = strikes
        return provider

    return open_limited


def build_forge(path: Path, issues: int, comments: int) -> None:
    """Labels, a milestone, issues (every third closed, labelled), their comments and a
    release: each type a batch or more at the test's small batch size."""
    generate(path, commits=2, branches=1, tags=1)
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        forge = ForgeAuthoring(provider.forge)
        for name in ("bug", "docs", "ui"):
            forge.create_label(name, color="d73a4a")
        forge.create_milestone("v1", description="first")
        ids = [
            forge.create_issue(
                f"Issue {n}",
                author="ann",
                labels=["bug", "docs", "ui"][: n % 4],
                milestone="v1" if n % 2 else None,
                **({"state": "closed", "state_reason": "completed"} if n % 3 == 0 else {}),
            )
            for n in range(issues)
        ]
        for n in range(comments):
            forge.add_comment("issue", ids[n % len(ids)], f"comment {n}", author="bob")
        forge.create_release("v0", name="First", body="notes", author="ann")
    finally:
        provider.close()


class World:
    """One example's forges, database and clock (fresh per example; migrated once)."""

    template: Path | None = None

    def __init__(self, seed: int, rate: float, budget: int, batch: int) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="reposync-limits-"))
        data = self.root / "data"
        data.mkdir()
        if World.template is None:
            World.template = Path(tempfile.mkdtemp(prefix="reposync-limits-db-")) / "t.db"
            db = Database(f"sqlite:///{World.template}")
            db.upgrade()
            db.dispose()
        shutil.copy(World.template, data / "reposync.db")
        configured = Settings(data_dir=data, lease_ttl=30, batch_max_items=batch)
        self.clock = WaitingClock()
        self.strikes = Strikes(seed, rate, budget, self.clock)
        self.db = Database(configured.effective_database_url)
        self.ctx = ServiceContext(
            settings=configured,
            db=self.db,
            environment=ProviderEnvironment(settings=configured, clock=self.clock),
            open_provider=limited_opener(self.strikes),
        )
        self.source = self.root / "src.git"
        self.target = init_bare(self.root / "dst.git")

    def close(self) -> None:
        self.db.dispose()
        shutil.rmtree(self.root, ignore_errors=True)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    rate=st.floats(0.05, 0.6),
    budget=st.integers(1, 30),
    batch=st.integers(2, 9),
)
def test_rate_limits_striking_anywhere_never_cost_an_item_an_attempt(seed, rate, budget, batch):
    """Rate limits at random calls, writes cut short at random points (some after they
    landed): one Run still completes, deferred by the strikes, every item completed on
    its first attempt, and the target holds exactly the source's objects."""
    world = World(seed, rate, budget, batch)
    try:
        build_forge(world.source, issues=10, comments=12)
        run = sync(world.ctx, SyncRequest(f"local:{world.source}", f"local:{world.target}"))
        states, attempts, codes = item_summary(world.db, run.id)

        assert run.status == "completed", run.report["problems"]
        # Each strike deferred the Run, but for one in the read-back of a batch a strike
        # already cut short: both wait in the same deferral.
        deferred = deferrals(world.db, run.id)
        assert deferred <= world.strikes.struck
        assert (deferred > 0) == (world.strikes.struck > 0)
        assert set(states) == {ItemState.COMPLETED.value}
        assert set(attempts) <= {0, 1}, attempts  # 0: settled without a write (HEAD)
        assert codes == set()
        assert world.strikes.twice == []  # never created again (GitHub: a duplicate)
        assert snapshot(world.target) == snapshot(world.source)  # nothing lost or changed
    finally:
        world.close()
