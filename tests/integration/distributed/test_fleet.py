"""The fleet bench's CI profile: 30 Bindings, beat and 2 real workers (issue 26).

Real workers and beat because what is checked is how they share the queue: a pass of
every Binding's scheduled Run must not lose the ticks beat sends meanwhile, and one tick
must create the Run of every due Binding. About 40 s (worker starts, a bootstrap, a
pass, one tick interval of grace); ``bench/fleet.py`` measures the same at 1,000 and
prints the timings, which are never asserted here.
"""

from __future__ import annotations

from datetime import timedelta

from bench.fleet import Fleet
from tests.servers import database_name

BINDINGS = 30


def test_a_scheduled_pass_of_every_binding_loses_no_tick(tmp_path, postgres_server, broker_url):
    """Every due Binding gets its slot's Run, every tick sent during the pass runs (none
    expires in the queue behind the pass's stage messages), and a manual Run queued
    mid-pass completes."""
    database = database_name("fleet")
    fleet = Fleet(
        tmp_path,
        postgres_server,
        broker_url,
        tick=3.0,
        database=database,
        # A tick waits for a free pool slot: at most one chain of steps plus one step.
        REPOSYNC_STEP_CHAIN_SECONDS="0.5",
    )
    try:
        fleet.build(BINDINGS)
        fleet.up(workers=2)
        fleet.bootstrap(timeout=300)
        slot = fleet.now().replace(second=0, microsecond=0) - timedelta(minutes=1)  # due now
        result = fleet.scheduled_pass(slot, timeout=300)  # a manual Run that fails raises
        not_completed = fleet.failed()
    finally:
        fleet.down()
        postgres_server.admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    assert result.created == BINDINGS
    on_time, late, lost = result.ticks
    assert on_time + late >= 1, "no tick was seen during the pass"
    assert lost == 0
    assert not_completed == 0
