"""Benchmark: a local forge to the GitHub test server with GitHub's limits switched on.

2,000 issues with 8,000 comments (adjustable) go from a local forge to the GitHub test
server, whose primary and secondary (content-creation: 80/min, 500/h) limits are on and
whose clock runs ``--scale`` times faster than the wall, shared with reposync so hours
of pacing pass in minutes. Prints, from the server's own request log:

* content-creating requests per issue (an issue and its comments, plus placeholders);
* secondary-limit responses received during the bootstrap (target: 0);
* primary-quota requests of a no-change Run, per object type (target: <= 1 each).

    python bench/github_sync.py                 # 2,000 issues, 8,000 comments
    python bench/github_sync.py --issues 200    # a quick look
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reposync.config import Settings  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.providers.base import EndpointSpec, ProviderEnvironment  # noqa: E402
from reposync.providers.local import LocalProvider  # noqa: E402
from reposync.providers.local.authoring import ForgeAuthoring  # noqa: E402
from reposync.service.accounts.budgets import DatabaseWriteBudget  # noqa: E402
from reposync.service.bindings import SyncRequest  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.embedded import sync  # noqa: E402
from reposync.sync.vocabulary import ObjectType  # noqa: E402
from tests.fakes.github import GitHubFake, accelerated_clock  # noqa: E402
from tests.gitrepo import generate  # noqa: E402

REPO = "bench/mirror"


class SharedClock:
    """reposync's Clock on top of the server's accelerated clock."""

    def __init__(self, clock) -> None:
        self._clock = clock

    def now(self) -> datetime:
        return self._clock()

    def sleep(self, seconds: float) -> None:
        self._clock.sleep(seconds)


def build_source(path: Path, issues: int, comments: int) -> None:
    generate(path, commits=3, branches=1, tags=0)
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    forge = ForgeAuthoring(provider.forge)
    ids = forge.create_many(
        "issue",
        [
            {"title": f"Issue {n}", "body": f"Details of {n}", "author": f"user{n % 50}"}
            for n in range(issues)
        ],
    )
    per_issue = comments // max(issues, 1)
    for n, issue in enumerate(ids):
        forge.create_many(
            "issue_comment",
            [{"body": f"comment {c} on {n}", "author": f"user{c % 7}"} for c in range(per_issue)],
            parent=("issue", issue),
        )
    provider.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=2000)
    parser.add_argument("--comments", type=int, default=8000)
    parser.add_argument(
        "--scale",
        type=float,
        default=600.0,
        help="fake seconds per real second (600: an hour in 6 s)",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="reposync-gh-bench-"))
    clock = accelerated_clock(args.scale)
    try:
        source = work / "source.git"
        build_source(source, args.issues, args.comments)
        with GitHubFake(clock=clock, validate_responses=False, validate_requests=False) as fake:
            fake.state.create_repo(REPO, private=True)
            token = fake.add_token("bench")
            db = Database(f"sqlite:///{work / 'reposync.db'}")
            db.upgrade()
            settings = Settings(
                data_dir=work / "data",
                github_api_url=fake.api_url,
                github_uploads_url=fake.uploads_url,
                github_git_url=fake.git_url,
                github_token=token,
                github_write_interval=1.0,
                http_timeout=30.0,
                embedded_max_wait=7200.0,
                lease_ttl=300.0,
            )
            environment = ProviderEnvironment(
                settings=settings, budget=DatabaseWriteBudget(db), clock=SharedClock(clock)
            )
            ctx = ServiceContext(settings=settings, db=db, environment=environment)
            request = SyncRequest(f"local:{source}", f"github:{REPO}")

            started, fake_started = time.perf_counter(), clock()
            first = sync(ctx, request)
            real = time.perf_counter() - started
            fake_hours = (clock() - fake_started).total_seconds() / 3600
            log = fake.requests_log
            creating = log.content_creating_count()
            secondary = log.secondary_limited_count()
            primary_limited = log.primary_limited_count()

            before = len(log)
            second = sync(ctx, request)
            no_change = list(log)[before:]
            per_type: dict[str, int] = {}
            for record in no_change:
                if record.counted_primary:
                    per_type[record.path] = per_type.get(record.path, 0) + 1
            primary_no_change = sum(per_type.values())

        print()
        print(f"issues / comments                  {args.issues} / {args.comments}")
        print(
            f"bootstrap status                   {first.status} "
            f"({first.counters['created']} created)"
        )
        print(f"bootstrap time                     {real:.1f} s real, {fake_hours:.1f} h GitHub")
        print(
            f"content-creating requests          {creating}  "
            f"({creating / args.issues:.2f} per issue with its comments, "
            f"{creating / (args.issues + args.comments):.3f} per object)"
        )
        print(f"secondary-limit responses          {secondary}   (target: 0)")
        print(f"primary-limit responses            {primary_limited}")
        print(f"no-change Run status               {second.status}")
        print(
            f"no-change primary-quota requests   {primary_no_change}   "
            f"(target: <= 1 per object type; {len(ObjectType)} types) {per_type}"
        )
        ok = first.status == "completed" and secondary == 0 and primary_no_change <= len(ObjectType)
        print("RESULT", "meets every target" if ok else "MISSES a target")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
