"""Benchmark: forge metadata between two local forges on the embedded default.

Generates a local forge with 20,000 issues, 60,000 comments, 200 labels and 50
milestones (sizes adjustable), then measures, in one run:

* bootstrap wall time of ``reposync sync`` to an empty local forge, and RunItems/s
  (target: at least 2,000 items/s);
* a no-change checkpoint Run: wall time (target: under 5 s) and the number of target
  objects it read (must be 0);
* the peak RSS of each sync process (target: under 500 MB).

Each sync is a separate ``python -m reposync`` process, measured with ``wait4``.

    python bench/metadata_sync.py
    python bench/metadata_sync.py --issues 2000 --comments-per-issue 3   # quick look
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.runner import timed_sync  # noqa: E402
from reposync.providers.base import EndpointSpec  # noqa: E402
from reposync.providers.local import LocalProvider  # noqa: E402
from reposync.providers.local.authoring import ForgeAuthoring  # noqa: E402
from tests.gitrepo import generate  # noqa: E402


def build_forge(
    path: Path, *, issues: int, comments_per_issue: int, labels: int, milestones: int, seed: int = 7
) -> float:
    started = time.perf_counter()
    generate(path, commits=3, branches=1, tags=1)
    rng = random.Random(seed)
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    forge = ForgeAuthoring(provider.forge)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    label_names = [f"area/{n:03d}" for n in range(labels)]
    forge.create_many(
        "label",
        [
            {"name": name, "color": f"{n * 4099 % 0xFFFFFF:06x}", "description": f"label {n}"}
            for n, name in enumerate(label_names)
        ],
    )
    titles = [f"v{n // 10}.{n % 10}" for n in range(milestones)]
    forge.create_many("milestone", [{"title": t, "description": ""} for t in titles])
    issue_ids = forge.create_many(
        "issue",
        [
            {
                "title": f"Issue {n}: something about component {n % 97}",
                "body": f"Steps to reproduce #{max(1, n - 1)}\n\n"
                + "lorem ipsum " * rng.randint(5, 60),
                "author": f"user{n % 313}",
                "created_at": base + timedelta(minutes=n),
                "labels": rng.sample(label_names, rng.randint(0, 3)),
                "milestone": rng.choice(titles) if n % 3 else None,
                "state": "closed" if n % 5 == 0 else "open",
                "closed_at": base + timedelta(minutes=n + 60) if n % 5 == 0 else None,
            }
            for n in range(issues)
        ],
    )
    for n, issue_id in enumerate(issue_ids):
        forge.create_many(
            "issue_comment",
            [
                {
                    "body": f"comment {c} on issue {n}: " + "text " * rng.randint(3, 40),
                    "author": f"user{(n + c) % 211}",
                    "created_at": base + timedelta(minutes=n, seconds=c + 1),
                }
                for c in range(comments_per_issue)
            ],
            parent=("issue", issue_id),
        )
    provider.close()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=20000)
    parser.add_argument("--comments-per-issue", type=int, default=3)
    parser.add_argument("--labels", type=int, default=200)
    parser.add_argument("--milestones", type=int, default=50)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="reposync-meta-bench-"))
    try:
        source, target, data = work / "source.git", work / "target.git", work / "data"
        took = build_forge(
            source,
            issues=args.issues,
            comments_per_issue=args.comments_per_issue,
            labels=args.labels,
            milestones=args.milestones,
        )
        objects = args.issues * (1 + args.comments_per_issue) + args.labels + args.milestones
        print(f"generated {objects} forge objects in {took:.1f}s")

        boot_s, boot_rss, boot = timed_sync(source, target, data)
        assert boot["status"] == "completed", boot["problems"]
        items = sum(boot["planned_actions"].values())
        rate = items / boot_s

        again_s, again_rss, again = timed_sync(source, target, data)
        assert again["status"] == "completed", again["problems"]
        target_io = again["io"].get("target", {})
        target_reads = target_io.get("object_reads", 0) + target_io.get("index_reads", 0)

        print()
        print(f"objects                          {objects}")
        print(f"bootstrap wall time              {boot_s:8.2f} s")
        print(f"bootstrap RunItems               {items}")
        print(f"bootstrap RunItems/s             {rate:8.0f}     (target >= 2000)")
        print(f"bootstrap peak RSS               {boot_rss / 2**20:8.0f} MB  (target < 500)")
        print(f"no-change checkpoint wall time   {again_s:8.2f} s   (target < 5)")
        print(f"no-change target objects read    {target_reads:8d}     (must be 0)")
        print(f"no-change peak RSS               {again_rss / 2**20:8.0f} MB")
        ok = (
            rate >= 2000
            and again_s < 5
            and target_reads == 0
            and max(boot_rss, again_rss) < 500 * 2**20
        )
        print("RESULT", "meets every target" if ok else "MISSES a target")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
