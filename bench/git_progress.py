"""Benchmark: how long a sync's progress stands still while git pushes (issue 25).

Generates (or takes, with --repo) a repository of about 1,000 refs and enough history
that pushing it takes more than ten seconds on this machine, syncs it in this process
to a new local repository and to the Forgejo test server over smart HTTP, and prints for
each the longest time a progress figure stayed unchanged while git was sending (from
git's first progress update to its last):

* the command line's: what its terminal bar and log line are handed (items, git's
  phase, objects and bytes);
* the Run's, as ``GET /runs/{id}/progress`` answers it (``queries.run_progress``,
  polled every 0.2 s from another thread);
* the Run's ``git_progress`` events (``reposync runs events --follow``).

Target: at most 5 s for each. Also printed: the push's share of the sync and, for
comparison, the longest gap over the whole sync (planning and read-back included).

    python bench/git_progress.py                    # 500 branches + 500 tags, 60,000 commits
    python bench/git_progress.py --commits 5000     # a quick look
    python bench/git_progress.py --skip-http        # the local target only
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from reposync.config import Settings  # noqa: E402
from reposync.models import Run, RunEvent  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service import queries  # noqa: E402
from reposync.service.accounts.users import operator  # noqa: E402
from reposync.service.bindings import SyncRequest  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.embedded import Progress, sync  # noqa: E402
from tests.gitrepo import generate  # noqa: E402

POLL = 0.2


@dataclass
class Figures:
    """When each observer saw its figure change, and when git reported at all."""

    line: list[tuple[float, Any]] = field(default_factory=list)
    api: list[tuple[float, Any]] = field(default_factory=list)
    pushing: list[float] = field(default_factory=list)

    def heard(self, progress: Progress) -> None:
        now = time.monotonic()
        figure = (progress.items_done, progress.transfer)
        if progress.transfer is not None:
            self.pushing.append(now)
        if not self.line or self.line[-1][1] != figure:
            self.line.append((now, figure))


def longest_gap(times: list[float], start: float, end: float) -> float:
    """The longest stretch of [start, end] without one of ``times`` in it."""
    inside = sorted(t for t in times if start <= t <= end)
    edges = [start, *inside, end]
    return max((b - a for a, b in itertools.pairwise(edges)), default=end - start)


@contextmanager
def polling(ctx: ServiceContext, figures: Figures) -> Iterator[None]:
    """Reads the newest Run's progress as the API answers it, every ``POLL`` seconds."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(POLL):
            with ctx.db.session() as session:
                run_id = session.execute(select(func.max(Run.id))).scalar_one_or_none()
            if run_id is None:
                continue
            shown = queries.run_progress(ctx, operator(), run_id)
            figure = (shown["totals"], shown.get("transfer"))
            if not figures.api or figures.api[-1][1] != figure:
                figures.api.append((time.monotonic(), figure))

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def event_times(
    ctx: ServiceContext, run_id: int, started_wall: datetime, started: float
) -> list[float]:
    """The Run's ``git_progress`` events on this process's monotonic clock."""
    with ctx.db.session() as session:
        stamps = session.execute(
            select(RunEvent.created_at).where(
                RunEvent.run_id == run_id, RunEvent.type == "git_progress"
            )
        ).scalars()
        return [started + (stamp - started_wall).total_seconds() for stamp in stamps]


def measure(name: str, ctx: ServiceContext, request: SyncRequest) -> None:
    from reposync.models import utcnow

    figures = Figures()
    started_wall, started = utcnow(), time.monotonic()
    with polling(ctx, figures):
        run = sync(ctx, request, figures.heard)
    ended = time.monotonic()
    if run.status != "completed" or not figures.pushing:
        raise SystemExit(f"{name}: run {run.id} {run.status}, {len(figures.pushing)} updates")
    first, last = figures.pushing[0], figures.pushing[-1]
    line = longest_gap([t for t, _ in figures.line], first, last)
    api = longest_gap([t for t, _ in figures.api], first, last)
    events = longest_gap(event_times(ctx, run.id, started_wall, started), first, last)
    print(
        f"{name}: sync {ended - started:.1f} s, git sending {last - first:.1f} s "
        f"({len(figures.pushing)} updates)"
    )
    print(
        f"  longest unchanged while git sends: line {line:.2f} s, API {api:.2f} s, "
        f"events {events:.2f} s (target <= 5 s)"
    )
    whole_line = longest_gap([t for t, _ in figures.line], started, ended)
    whole_api = longest_gap([t for t, _ in figures.api], started, ended)
    print(f"  over the whole sync: line {whole_line:.2f} s, API {whole_api:.2f} s")


def local_context(work: Path) -> tuple[ServiceContext, Callable[[], None]]:
    db = Database(f"sqlite:///{work / 'reposync.db'}")
    db.upgrade()
    return ServiceContext(settings=Settings(data_dir=work / "data"), db=db), db.dispose


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="use this repository instead of generating")
    parser.add_argument("--refs", type=int, default=1000, help="refs to generate (half tags)")
    parser.add_argument("--commits", type=int, default=60_000)
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="reposync-progress-bench-"))
    try:
        source = args.repo
        if source is None:
            started = time.perf_counter()
            source = generate(
                work / "source.git",
                commits=args.commits,
                branches=args.refs // 2,
                tags=args.refs - args.refs // 2,
                files_per_commit=3,
                file_bytes=600,
            )
            print(f"source: generated in {time.perf_counter() - started:.0f} s")
        (work / "local").mkdir()
        ctx, close = local_context(work / "local")
        try:
            target = work / "target.git"
            measure("local", ctx, SyncRequest(f"local:{source}", f"local:{target}"))
        finally:
            close()
        if not args.skip_http:
            from tests.fakes.forgejo import ForgejoFake
            from tests.forgejo_env import embedded_world, locator

            (work / "http").mkdir()
            with (
                ForgejoFake(validate_responses=False, validate_requests=False) as fake,
                embedded_world(fake, work / "http") as ctx,
            ):
                fake.state.create_repo("acme/mirror", private=True)
                target_locator = f"forgejo:{locator(fake, 'acme/mirror')}"
                measure("smart HTTP", ctx, SyncRequest(f"local:{source}", target_locator))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
