"""Benchmark: a local forge to the Forgejo test server, then back, then again unchanged.

A local forge of ``--objects`` forge objects (20,000 by default: issues and pull requests
interleaved in one number sequence, comments, reviews with line comments and replies,
review requests, labels, milestones, a release with an asset: ``tests/forge_population``)
is bootstrapped to the Forgejo test server, read back from Forgejo into a local forge,
and read again with nothing changed. Prints, from the server's own request log:

* API write requests per object the bootstrap created (target: <= 1; Git refs move by
  Git and are not counted), and which requests they were;
* objects the no-change Run read from Forgejo, by listing (target: 0 outside the ones
  Forgejo filters by nothing: labels, milestones, releases, and the repository itself).

    python bench/forgejo_sync.py                  # 20,000 objects
    python bench/forgejo_sync.py --objects 2000   # a quick look
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reposync.service.bindings import SyncRequest  # noqa: E402
from reposync.service.embedded import sync  # noqa: E402
from reposync.sync.vocabulary import ObjectType  # noqa: E402
from tests.fakes.forge_server.clock import ManualClock  # noqa: E402
from tests.fakes.forgejo import ForgejoFake  # noqa: E402
from tests.forge_population import populate  # noqa: E402
from tests.forgejo_env import embedded_world, locator  # noqa: E402

REPO = "acme/mirror"
#: What Forgejo narrows by nothing, and the repository's own look-ups.
UNFILTERED = ("/labels", "/milestones", "/releases", "/")


def _shape(path: str) -> str:
    """A request's path with numbers as ``N`` (one line per kind of request)."""
    return re.sub(r"/\d+", "/N", path.removeprefix(f"/repos/{REPO}") or "/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="reposync-forgejo-bench-"))
    clock = ManualClock()
    try:
        source = work / "source.git"
        started = time.perf_counter()
        population = populate(source, args.objects)
        print(f"source: {population.total} forge objects in {time.perf_counter() - started:.1f} s")
        print("        " + ", ".join(f"{t} {n}" for t, n in sorted(population.counts.items())))
        with (
            ForgejoFake(clock=clock, validate_responses=False, validate_requests=False) as fake,
            embedded_world(fake, work) as ctx,
        ):
            fake.state.create_repo(REPO, private=True)
            forgejo = f"forgejo:{locator(fake, REPO)}"

            start, started = len(fake.requests), time.perf_counter()
            first = sync(ctx, SyncRequest(f"local:{source}", forgejo))
            bootstrap_time = time.perf_counter() - started
            writes = [r for r in fake.requests[start:] if r.method != "GET"]
            refs_created = first.report["object_types"].get(ObjectType.GIT_REF.value, {})
            objects = first.counters["created"] - refs_created.get("created", 0)
            kinds = Counter(f"{r.method} {_shape(r.path)}" for r in writes)

            clock.advance(60)
            back = SyncRequest(forgejo, f"local:{work / 'back.git'}")
            started = time.perf_counter()
            returned = sync(ctx, back)
            back_time = time.perf_counter() - started
            clock.advance(60)
            start, started = len(fake.requests), time.perf_counter()
            again = sync(ctx, back)
            again_time = time.perf_counter() - started
            reads: Counter[str] = Counter()
            for record in fake.requests[start:]:
                reads[_shape(record.path)] += record.returned
            requests = len(fake.requests) - start

        per_object = len(writes) / max(objects, 1)
        unneeded = {p: n for p, n in reads.items() if n and p not in UNFILTERED}
        unfiltered = sum(n for p, n in reads.items() if p in UNFILTERED)
        print()
        print(f"bootstrap local -> Forgejo          {first.status}, {bootstrap_time:.1f} s")
        print(f"  forge objects created             {objects}")
        print(f"  API write requests                {len(writes)}")
        print(f"  write requests per object         {per_object:.3f}   (target: <= 1)")
        for kind, count in kinds.most_common():
            print(f"      {count:7d}  {kind}")
        print(f"Forgejo -> local                    {returned.status}, {back_time:.1f} s")
        print(f"no-change Run Forgejo -> local      {again.status}, {again_time:.1f} s")
        print(f"  requests                          {requests}")
        print(f"  objects read, filterable          {sum(unneeded.values())}   (target: 0)")
        print(f"  objects read, unfiltered lists    {unfiltered}   (labels, milestones, ")
        print("                                        releases, the repository)")
        ok = (
            first.status == returned.status == again.status == "completed"
            and per_object <= 1
            and not unneeded
        )
        print("RESULT", "meets every target" if ok else "MISSES a target")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
