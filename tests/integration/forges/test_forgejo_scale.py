"""A bootstrap to Forgejo costs at most one write request per object, and a Run with
nothing changed reads no object Forgejo can filter: the bar of ``bench/forgejo_sync.py``
(20,000 objects), at a size CI affords (a few hundred objects, some seconds)."""

from __future__ import annotations

from pathlib import Path

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.fakes.forge_server.clock import ManualClock
from tests.fakes.forgejo import ForgejoFake
from tests.forge_population import populate
from tests.forgejo_env import embedded_world, locator

REPO = "acme/scale"
#: Listings Forgejo narrows by nothing (no ``since``, no ETag): read whole every Run, and
#: the repository itself, which each stage that opens a side looks up.
UNFILTERED = {"/labels", "/milestones", "/releases", "/"}


def _reads(records: list, start: int) -> dict[str, int]:
    read: dict[str, int] = {}
    for record in records[start:]:
        path = record.path.removeprefix(f"/repos/{REPO}") or "/"
        read[path] = read.get(path, 0) + record.returned
    return read


def test_a_bootstrap_writes_once_per_object_and_a_no_change_run_reads_none(tmp_path: Path):
    """~300 objects to Forgejo: API writes <= objects created (refs go by Git); then from
    Forgejo to a local forge, and again with nothing changed: nothing is read but the
    listings Forgejo cannot narrow."""
    clock = ManualClock()
    with ForgejoFake(clock=clock) as fake:
        fake.state.create_repo(REPO, private=True)
        source = tmp_path / "source.git"
        population = populate(source, 300)
        with embedded_world(fake, tmp_path) as ctx:
            forgejo = f"forgejo:{locator(fake, REPO)}"
            start = len(fake.requests)

            first = sync(ctx, SyncRequest(f"local:{source}", forgejo))

            assert first.status == "completed", first.report["problems"]
            writes = [r for r in fake.requests[start:] if r.method != "GET"]
            created = first.report["object_types"][ObjectType.GIT_REF.value]["created"]
            objects = first.counters["created"] - created
            assert objects >= population.total - population.counts["reaction"]
            assert len(writes) <= objects, (len(writes), objects)

            clock.advance(60)
            back = SyncRequest(forgejo, f"local:{tmp_path / 'back.git'}")
            assert sync(ctx, back).status == "completed"
            clock.advance(60)
            start = len(fake.requests)
            again = sync(ctx, back)
            assert again.status == "completed"
            reads = _reads(fake.requests, start)
            assert {p: n for p, n in reads.items() if n and p not in UNFILTERED} == {}
        fake.assert_clean(requests_too=True)
