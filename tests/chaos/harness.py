"""The chaos harness: servers, processes, rounds, faults, checks and the summary.

One soak is ``run(ChaosConfig(...))``. Everything random (mutations, which faults, when
they fire, how long a pause lasts) comes from RNGs seeded by ``config.seed``; process
timing is real, so a seed reproduces the plan, not the interleaving.

A round:

1. mutate the source (from round 1 on) and record what the Run will be given;
2. queue a Run through the API, as an operator would;
3. inject the round's faults while the Run executes, each at a seeded trigger: a stage
   (and a share of its items), or one of three windows the suite holds open for a
   moment in every Run: inside the target's SQLite transaction before COMMIT
   (``local_forge.before_commit``, milestone batches), right after that COMMIT before
   the engine recorded it (``local_forge.after_commit``, label batches), and while a
   ``git push`` holds the target's ref locks (a ``reference-transaction`` hook);
4. wait (a generous limit, never a timing assertion) until every Run of the Binding has
   ended *by itself*, and require ``completed``;
5. compare the target with the source: refs by value, forge objects by marker and by
   canonical content; count lost, duplicated, undeleted, diverged and written-twice
   (reflog lengths and forge revisions against the ledger);
6. queue a follow-up Run: it must complete and write nothing.

A round that fails is recorded with its evidence (Run rows, events, item states, log
lines of every process since the round began); only then, and counted as manual steps,
does the harness cancel or recover what the system left stuck, so a soak can go on.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos.processes import Exit, Supervisor
from tests.chaos.servers import OwnPostgres, OwnRedis
from tests.chaos.world import (
    Ledger,
    TargetState,
    World,
    forge_rows,
    repository_id,
    source_state,
    target_state,
    verify,
    write_locked,
)
from tests.workers import worker_environment

STAGES = (
    "queued",
    "checking_access",
    "inventory_source",
    "inventory_target",
    "planning",
    "applying",
    "verifying",
    "finalizing",
    "completed",
)
ACTIVE = ("queued", "running")
#: Where a fault lands: at a stage (and a share of the items), inside the target's
#: transaction, right after its COMMIT, or while a push holds the target's ref locks.
WINDOWS = ("stage", "txn", "post_commit", "push")
KINDS = (
    "sigkill_worker",
    "sigkill_holder",
    "sigstop_holder",
    "sigstop_in_txn",
    "redis_restart",
    "postgres_restart",
    "duplicate_messages",
)
#: Fault points (``reposync.faults``) that hold a worker for a moment inside the target's
#: transaction, before COMMIT, on milestone batches, and right after the COMMIT, before
#: the engine recorded anything, on label batches. Every round edits a milestone and a
#: label, so every Run passes both windows; faults may be aimed at them.
TXN_TYPE = "milestone"
POST_COMMIT_TYPE = "label"
WINDOW_SLEEP = 1.5
WORKER_FAULTS = (
    f"local_forge.before_commit:sleep={WINDOW_SLEEP}:object_type={TXN_TYPE};"
    f"local_forge.after_commit:sleep={WINDOW_SLEEP}:object_type={POST_COMMIT_TYPE}"
)
#: Log lines worth showing as evidence.
INTERESTING = re.compile(
    r"ERROR|CRITICAL|WARNING|Traceback|Error|Unrecoverable|refused|stalled|lost|"
    r"Restoring|exited|reclaim|retry|Connection to broker|lock"
)


@dataclass
class ChaosConfig:
    rounds: int = 7
    seed: int = 1
    workers: int = 2
    scale: float = 1.0
    #: Generous limit for a Run (and any follow-up it queued) to end by itself.
    round_timeout: float = 150.0
    lease_ttl: float = 3.0
    #: Probability of each further fault in a round, up to ``max_faults`` (the first comes
    #: from a seeded cycle through every kind, so len(KINDS) rounds cover them all).
    extra_fault: float = 0.5
    max_faults: int = 2
    #: A targeted soak: these faults only ("kind" or "kind@window"), one per round in turn.
    faults: tuple[str, ...] = ()
    stop_on_failure: bool = False
    keep: bool = False
    workdir: Path | None = None
    quiet: bool = False


@dataclass
class FaultRecord:
    round_no: int
    kind: str
    detail: str = ""
    at: float = 0.0  # seconds after the Run was queued
    stage: str = ""
    generation: int | None = None
    missed: bool = False

    def __str__(self) -> str:
        where = f"at +{self.at:.1f}s in {self.stage or '?'} (generation {self.generation})"
        if self.missed:
            return f"{self.kind}: missed (the Run ended before its trigger) {self.detail}"
        return f"{self.kind} {where}: {self.detail}"


@dataclass
class RoundRecord:
    round_no: int
    mutations: list[str] = field(default_factory=list)
    faults: list[FaultRecord] = field(default_factory=list)
    run_id: int | None = None
    follow_up_id: int | None = None
    status: str = ""
    follow_up_status: str = ""
    problems: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    #: What the checks found, in detail (reflogs of refs written twice, rows).
    details: list[str] = field(default_factory=list)
    evidence: str = ""
    seconds: float = 0.0


@dataclass
class Summary:
    seed: int
    rounds_planned: int
    rounds: list[RoundRecord] = field(default_factory=list)
    manual_steps: list[str] = field(default_factory=list)
    worker_exits: list[Exit] = field(default_factory=list)
    fault_restarts: int = 0
    aborted: str = ""
    workdir: str = ""
    seconds: float = 0.0

    def faults_by_kind(self) -> Counter[str]:
        return Counter(f.kind for r in self.rounds for f in r.faults if not f.missed)

    def missed_by_kind(self) -> Counter[str]:
        return Counter(f.kind for r in self.rounds for f in r.faults if f.missed)

    def total(self, name: str) -> int:
        return sum(r.counts[name] for r in self.rounds)

    @property
    def failed_rounds(self) -> list[RoundRecord]:
        return [r for r in self.rounds if r.problems]

    def ok(self) -> bool:
        return (
            not self.aborted
            and len(self.rounds) == self.rounds_planned
            and not self.failed_rounds
            and not self.manual_steps
            and not self.worker_exits
        )

    def render(self) -> str:
        kinds = self.faults_by_kind()
        missed = self.missed_by_kind()
        exits = ", ".join(
            f"{e.name} in round {e.round_no} status {e.returncode}" for e in self.worker_exits
        )
        lines = [
            "=" * 78,
            f"chaos summary  seed={self.seed}  rounds={len(self.rounds)}/{self.rounds_planned}"
            f"  failed rounds={len(self.failed_rounds)}  time={self.seconds:.0f}s",
            "faults by kind: "
            + (", ".join(f"{k}={kinds[k]}" for k in KINDS if kinds[k]) or "none")
            + (f"  (missed: {', '.join(f'{k}={v}' for k, v in missed.items())})" if missed else ""),
            f"manual steps: {len(self.manual_steps)}"
            + (f"  ({'; '.join(self.manual_steps)})" if self.manual_steps else ""),
            f"worker exits: {len(self.worker_exits)}"
            + (f"  ({exits})" if exits else "")
            + f"  [restarts after injected kills: {self.fault_restarts}]",
            f"lost: {self.total('lost')}  duplicated: {self.total('duplicated')}  "
            f"written twice: {self.total('written_twice')}  undeleted: "
            f"{self.total('undeleted')}  diverged: {self.total('diverged')}",
            f"runs not ended by themselves: {self.total('not_terminal')}  "
            f"runs not completed: {self.total('not_completed')}  "
            f"follow-up Runs that wrote: {self.total('follow_up_wrote')}  "
            f"items completed twice: {self.total('completed_twice')}",
        ]
        if self.aborted:
            lines.append(f"ABORTED: {self.aborted}")
        for record in self.failed_rounds:
            lines.append("-" * 78)
            lines.append(
                f"FAILED round {record.round_no} (seed {self.seed}): run {record.run_id} "
                f"{record.status}, follow-up {record.follow_up_id} {record.follow_up_status}"
            )
            lines.extend(f"  fault: {fault}" for fault in record.faults)
            lines.extend(f"  problem: {problem}" for problem in record.problems)
            if record.evidence:
                lines.append(record.evidence)
        for exit_ in self.worker_exits:
            lines.append("-" * 78)
            lines.append(f"EXIT {exit_.name} in round {exit_.round_no}, status {exit_.returncode}:")
            lines.extend(f"    | {line}" for line in exit_.log_tail[-25:])
        if self.workdir:
            lines.append(f"logs and evidence: {self.workdir}")
        lines.append("=" * 78)
        return "\n".join(lines)


class Abort(Exception):
    """The soak cannot go on (a Run stuck even after a manual cancel, a server down)."""


# -- observing the database -----------------------------------------------------------------


@dataclass
class RunView:
    id: int
    status: str
    stage: str
    generation: int | None
    stage_attempts: int
    error_code: str | None
    error_message: str | None
    lease_owner: str | None
    lease_live: bool
    completed: int
    total: int

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def holder_pid(self) -> int | None:
        if not self.lease_live or not self.lease_owner:
            return None
        parts = self.lease_owner.split("/")
        return int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else None

    def reached(self, stage: str, fraction: float = 0.0) -> bool:
        here = STAGES.index(self.stage) if self.stage in STAGES else 0
        if here < STAGES.index(stage):
            return False
        if self.stage == "applying" and stage == "applying" and self.total:
            return self.completed >= fraction * self.total
        return True


class Observer:
    """Read-only queries, retried while the database is away (a fault may stop it)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: Any = None

    def query(self, sql: str, params: tuple[Any, ...] = (), timeout: float = 120.0) -> list[Any]:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._conn is None:
                    self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=3)
                return list(self._conn.execute(sql, params).fetchall())
            except psycopg.Error:
                self.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None

    def run(self, run_id: int) -> RunView:
        [row] = self.query(
            "SELECT r.id, r.status, r.stage, r.lease_generation, r.stage_attempts, r.error_code,"
            " r.error_message, b.lease_owner,"
            " coalesce(b.lease_run_id = r.id AND b.lease_expires_at > now(), false),"
            " (SELECT count(*) FROM run_items i WHERE i.run_id = r.id AND i.state = 'completed'),"
            " (SELECT count(*) FROM run_items i WHERE i.run_id = r.id)"
            " FROM runs r JOIN bindings b ON b.id = r.binding_id WHERE r.id = %s",
            (run_id,),
        )
        return RunView(*row)

    def active_runs(self, binding_id: int) -> list[int]:
        return [
            row[0]
            for row in self.query(
                "SELECT id FROM runs WHERE binding_id = %s AND status = ANY(%s) ORDER BY id",
                (binding_id, list(ACTIVE)),
            )
        ]

    def items_applying(self, run_id: int, object_type: str) -> int:
        [(count,)] = self.query(
            "SELECT count(*) FROM run_items WHERE run_id = %s AND object_type = %s "
            "AND state = 'applying'",
            (run_id, object_type),
        )
        return int(count)


# -- the API --------------------------------------------------------------------------------


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, body: Any = None, timeout: float = 90.0) -> Any:
        """One request; connection errors and 5xx (the API restarting, the database
        away) are retried until ``timeout``. Returns the ``requests`` response."""
        import requests

        deadline = time.monotonic() + timeout
        while True:
            try:
                response = requests.request(
                    method, self.base + path, json=body, headers=self.headers, timeout=30
                )
                if response.status_code < 500:
                    return response
            except requests.RequestException:
                response = None
            if time.monotonic() > deadline:
                if response is not None:
                    return response
                raise Abort(f"the API did not answer {method} {path} within {timeout}s")
            time.sleep(0.5)


# -- the harness ----------------------------------------------------------------------------


class Chaos:
    def __init__(self, config: ChaosConfig) -> None:
        for fault in config.faults:
            kind, _, window = fault.partition("@")
            if kind not in KINDS or (window and window not in WINDOWS):
                raise ValueError(f"unknown fault {fault!r}: kinds {KINDS}, windows {WINDOWS}")
        self.config = config
        self.say: Callable[[str], None] = (lambda _m: None) if config.quiet else _say
        self.world_rng = random.Random(f"{config.seed}:world")
        # One RNG per round plan and per fault, so a seed replays the same plan whatever
        # the timing did to earlier rounds (a missed trigger draws nothing more).
        cycle = list(KINDS)
        random.Random(f"{config.seed}:cycle").shuffle(cycle)
        self.cycle = cycle
        # The first fault of a round lands in a window from a second cycle; 7 kinds and
        # 4 windows are coprime, so 28 rounds pair every kind with every window.
        windows = list(WINDOWS)
        random.Random(f"{config.seed}:windows").shuffle(windows)
        self.windows = windows
        self.workdir = config.workdir or Path(tempfile.mkdtemp(prefix="reposync-chaos-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "logs").mkdir(exist_ok=True)
        (self.workdir / "evidence").mkdir(exist_ok=True)
        self.summary = Summary(config.seed, config.rounds, workdir=str(self.workdir))
        self.pg: OwnPostgres | None = None
        self.redis: OwnRedis | None = None
        self.supervisor = Supervisor(self.workdir / "logs", self.say)
        self.world = World(self.workdir, self.world_rng, config.scale)
        self.ledger = Ledger()
        #: The source content the current round's Run was given, per type and identity.
        self.expected: dict[str, dict[str, str]] = {}
        self.observer: Observer | None = None
        self.api: Api | None = None
        self.binding_id = 0
        self.repo_id = ""
        self.sender: Any = None
        self.started = time.monotonic()

    # -- setup ---------------------------------------------------------------------------

    def setup(self) -> None:
        config = self.config
        self.say(f"chaos: seed {config.seed}, {config.rounds} rounds, work dir {self.workdir}")
        self.pg = OwnPostgres()
        self.pg.init()
        self.pg.admin("CREATE DATABASE reposync")
        self.redis = OwnRedis(self.workdir / "redis")
        self.redis.start()
        database_url = self.pg.database_url("reposync")
        port = _free_port()
        self.env = worker_environment(
            database_url,
            self.redis.url,
            self.workdir / "data",
            REPOSYNC_LEASE_TTL=str(config.lease_ttl),
            REPOSYNC_LOCAL_ROOTS=str(self.workdir),  # the API binds the round's repositories
            REPOSYNC_LOCAL_TARGET_HOOKS="1",  # faults are timed by the target's hooks
            REPOSYNC_BATCH_MAX_ITEMS="40",
            REPOSYNC_GIT_BATCH_MAX_ITEMS="25",
            REPOSYNC_RETRY_BACKOFF="1",
            REPOSYNC_RETRY_BACKOFF_MAX="4",
            REPOSYNC_API_BIND=f"127.0.0.1:{port}",
            REPOSYNC_FAULTS=WORKER_FAULTS,
        )
        self._cli("db", "upgrade")
        token = self._cli("user", "add", "chaos", "--role", "admin").strip().splitlines()[-1]
        self.observer = Observer(database_url)
        self.api = Api(f"http://127.0.0.1:{port}/api/ext/v1/sync", token)
        from celery import Celery

        self.sender = Celery("reposync-chaos", broker=self.redis.url)
        self.sender.conf.task_default_queue = "reposync"
        self.sender.conf.broker_connection_retry_on_startup = True

        entry = _entry_point()
        started = [
            self.supervisor.add(f"worker{n}", "worker", [*entry, "worker"], self.env, "ready.")
            for n in range(1, config.workers + 1)
        ]
        started.append(
            self.supervisor.add("beat", "beat", [*entry, "beat"], self.env, "beat: Starting")
        )
        started.append(
            self.supervisor.add(
                "api", "api", [*entry, "api", "--bind", f"127.0.0.1:{port}"], self.env, "Listening"
            )
        )
        self.world.build()
        for managed in started:
            self.supervisor.wait_ready(managed)
        self.supervisor.begin()
        self.repo_id = repository_id(self.world.source)
        response = self.api.call(
            "POST",
            "/bindings",
            {"source": f"local:{self.world.source}", "target": f"local:{self.world.target}"},
        )
        if response.status_code != 201:
            raise Abort(f"POST /bindings answered {response.status_code}: {response.text}")
        self.binding_id = int(response.json()["id"])
        state = source_state(self.world.source)
        self.say(
            f"source: {len(state.refs)} refs, {len(state.objects)} forge objects; "
            f"binding {self.binding_id}; processes up after {self.elapsed():.0f}s"
        )

    def _cli(self, *args: str) -> str:
        result = subprocess.run(
            [*_entry_point(), *args],
            env=self.env,
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise Abort(f"reposync {' '.join(args)} failed: {result.stdout}{result.stderr}")
        return result.stdout

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # -- rounds --------------------------------------------------------------------------

    def play(self) -> Summary:
        try:
            self.setup()
            for round_no in range(self.config.rounds):
                record = self.play_round(round_no)
                self.summary.rounds.append(record)
                if record.problems and self.config.stop_on_failure:
                    self.summary.aborted = f"stopped after the failure of round {round_no}"
                    break
        except Abort as abort:
            self.summary.aborted = str(abort)
        finally:
            self.summary.worker_exits = list(self.supervisor.exits)
            self.summary.fault_restarts = self.supervisor.fault_restarts
            self.summary.seconds = self.elapsed()
            self.teardown()
        return self.summary

    def plan_faults(self, round_no: int) -> list[tuple[str, str | None]]:
        """(kind, window) of each fault of a round; ``None``: a window drawn at random."""
        if self.config.faults:  # a targeted soak: one listed fault per round, in turn
            kind, _, window = self.config.faults[round_no % len(self.config.faults)].partition("@")
            return [(kind, window or None)]
        rng = random.Random(f"{self.config.seed}:plan:{round_no}")
        kinds = [self.cycle[round_no % len(self.cycle)]]
        while len(kinds) < self.config.max_faults and rng.random() < self.config.extra_fault:
            kinds.append(rng.choice([k for k in KINDS if k not in kinds]))
        first = self.windows[round_no % len(self.windows)]
        return [(kind, first if index == 0 else None) for index, kind in enumerate(kinds)]

    def play_round(self, round_no: int) -> RoundRecord:
        assert self.observer is not None
        record = RoundRecord(round_no)
        started = time.monotonic()
        self.supervisor.round_no = round_no
        offsets = {m.name: m.log_size() for m in self.supervisor.processes}
        exits_before = len(self.supervisor.exits)
        if round_no > 0:
            record.mutations = self.world.mutate(round_no)
        source = source_state(self.world.source)
        self.ledger.observe(source)
        self.expected = {}
        for (object_type, identity), row in source.objects.items():
            self.expected.setdefault(object_type, {})[identity] = row.content_hash
        kinds = self.plan_faults(round_no)
        self.say(
            f"round {round_no}: {len(record.mutations)} mutations; "
            f"{len(source.refs)} refs, {len(source.objects)} objects; faults "
            f"{', '.join(kind for kind, _ in kinds)}"
        )
        record.run_id = self.create_run(record)
        queued = time.monotonic()
        first_run = record.run_id
        if record.run_id is not None:
            for index, (kind, planned) in enumerate(kinds):
                rng = random.Random(f"{self.config.seed}:fault:{round_no}:{index}")
                window = planned or rng.choice(WINDOWS)
                fault = self.inject(kind, window, rng, record.run_id, round_no, queued)
                record.faults.append(fault)
                self.say(f"  fault {fault}")
            self.settle(record, record.run_id, "run")
        self.supervisor_settled()

        target = target_state(self.world.target)
        verdict = verify(source, target, self.ledger, self.repo_id, self.world.target)
        for name in ("lost", "duplicated", "undeleted", "diverged", "written_twice"):
            record.counts[name] += len(getattr(verdict, name))
        record.problems.extend(verdict.problems())
        record.details.extend(self.write_details(verdict.written_twice))
        if record.run_id is not None:
            self.check_completions(record, record.run_id)

        if not record.problems:
            self.follow_up(record, target)
        if len(self.supervisor.exits) > exits_before:
            record.problems.append(
                "processes exited by themselves: "
                + ", ".join(e.name for e in self.supervisor.exits[exits_before:])
            )
        if record.problems:
            record.evidence = self.evidence(record, first_run, offsets)
            now = target_state(self.world.target)
            paired = verify(source, now, self.ledger, self.repo_id, self.world.target).paired
            self.ledger.rebase(now, paired)
        record.seconds = time.monotonic() - started
        verdict_text = "ok" if not record.problems else "FAILED: " + "; ".join(record.problems)
        self.say(
            f"round {round_no}: run {record.run_id} {record.status}, follow-up "
            f"{record.follow_up_id} {record.follow_up_status or '-'} in {record.seconds:.0f}s "
            f"-> {verdict_text}"
        )
        return record

    def create_run(self, record: RoundRecord) -> int | None:
        """POST /bindings/{id}/runs; a Binding that is not free is a finding, and what the
        harness then does to free it is a manual step."""
        assert self.api is not None
        for _attempt in range(3):
            response = self.api.call("POST", f"/bindings/{self.binding_id}/runs", {})
            if response.status_code == 202:
                return int(response.json()["id"])
            problem = _problem(response)
            record.problems.append(
                f"POST runs answered {response.status_code} {problem.get('code')}: "
                f"{problem.get('detail') or problem.get('title') or response.text[:200]}"
            )
            if response.status_code != 409:
                raise Abort(record.problems[-1])
            self.free_binding(record)
        raise Abort(f"round {record.round_no}: no Run could be queued")

    def settle(self, record: RoundRecord, run_id: int, what: str) -> None:
        """Wait, within the generous limit, for the Run and anything it queued to end."""
        assert self.observer is not None
        deadline = time.monotonic() + self.config.round_timeout
        while True:
            view = self.observer.run(run_id)
            active = self.observer.active_runs(self.binding_id)
            if not view.active and not active:
                break
            if time.monotonic() > deadline:
                record.counts["not_terminal"] += 1
                record.problems.append(
                    f"{what} {run_id} did not end by itself within {self.config.round_timeout:.0f}s"
                    f": status {view.status}, stage {view.stage}, generation {view.generation}, "
                    f"stage attempts {view.stage_attempts}, items {view.completed}/{view.total} "
                    f"completed, lease owner {view.lease_owner} (live: {view.lease_live}); "
                    f"active runs {active}"
                )
                self.free_binding(record)
                view = self.observer.run(run_id)
                break
            time.sleep(0.25)
        if what == "run":
            record.status = view.status
        else:
            record.follow_up_status = view.status
        if view.status != "completed":
            record.counts["not_completed"] += 1
            record.problems.append(
                f"{what} {run_id} ended {view.status} at stage {view.stage}: "
                f"{view.error_code}: {view.error_message}"
            )
        for other in self.observer.query(
            "SELECT id, status, trigger, error_code FROM runs WHERE binding_id = %s AND id > %s",
            (self.binding_id, run_id),
        ):
            if other[0] != record.follow_up_id and what == "run":
                record.problems.append(
                    f"run {other[0]} (trigger {other[2]}) was queued by the system and ended "
                    f"{other[1]} ({other[3]})"
                )

    def free_binding(self, record: RoundRecord) -> None:
        """Manual steps (counted): cancel an active Run, recover unknown writes."""
        assert self.observer is not None
        assert self.api is not None
        for run_id in self.observer.active_runs(self.binding_id):
            self.summary.manual_steps.append(f"round {record.round_no}: cancel run {run_id}")
            self.api.call("POST", f"/runs/{run_id}/cancel")
            deadline = time.monotonic() + 60
            while self.observer.run(run_id).active:
                if time.monotonic() > deadline:
                    raise Abort(f"run {run_id} did not end even after a manual cancel")
                time.sleep(0.5)
        for (run_id,) in self.observer.query(
            "SELECT DISTINCT i.run_id FROM run_items i JOIN runs r ON r.id = i.run_id "
            "WHERE r.binding_id = %s AND i.state = 'blocked' AND i.error_code = 'result_unknown'",
            (self.binding_id,),
        ):
            self.summary.manual_steps.append(f"round {record.round_no}: recover run {run_id}")
            self.api.call("POST", f"/runs/{run_id}/recover")

    def supervisor_settled(self, timeout: float = 90.0) -> None:
        """Let the restart policy finish its restarts (the follow-up needs workers)."""
        deadline = time.monotonic() + timeout
        while not self.supervisor.all_running():
            if time.monotonic() > deadline:
                raise Abort("processes were not running again after the round")
            time.sleep(0.2)
        for managed in self.supervisor.processes:
            self.supervisor.wait_ready(managed, timeout=max(5.0, deadline - time.monotonic()))

    def check_completions(self, record: RoundRecord, run_id: int) -> None:
        """Every item completed exactly once in the append-only event history."""
        assert self.observer is not None
        [(items,)] = self.observer.query(
            "SELECT count(*) FROM run_items WHERE run_id = %s AND state = 'completed'", (run_id,)
        )
        transitions = 0
        for (counts,) in self.observer.query(
            "SELECT counts FROM run_events WHERE run_id = %s "
            "AND type IN ('batch_settled', 'items_recovered')",
            (run_id,),
        ):
            transitions += int((counts or {}).get("completed", 0))
        if transitions > items:
            record.counts["completed_twice"] += transitions - items
            record.problems.append(
                f"run {run_id}: events record {transitions} item completions for {items} "
                "completed items"
            )

    def follow_up(self, record: RoundRecord, before: TargetState) -> None:
        assert self.observer is not None
        record.follow_up_id = self.create_run(record)
        if record.follow_up_id is None:
            return
        self.settle(record, record.follow_up_id, "follow-up")
        after = target_state(self.world.target)
        [(counters,)] = self.observer.query(
            "SELECT counters FROM runs WHERE id = %s", (record.follow_up_id,)
        )
        writes = {k: counters.get(k, 0) for k in ("created", "updated", "deleted")}
        if any(writes.values()) or after.fingerprint() != before.fingerprint():
            record.counts["follow_up_wrote"] += 1
            changed = _fingerprint_diff(before, after)
            record.problems.append(
                f"follow-up run {record.follow_up_id} wrote: counters {writes}; target changes "
                f"{changed}"
            )

    # -- faults --------------------------------------------------------------------------

    def inject(
        self,
        kind: str,
        window: str,
        rng: random.Random,
        run_id: int,
        round_no: int,
        queued: float,
    ) -> FaultRecord:
        fault = FaultRecord(round_no, kind)
        stage = rng.choice(
            ["checking_access", "inventory_source", "planning", "applying", "applying", "verifying"]
        )
        fraction = rng.uniform(0.0, 0.8)
        # Two kinds have a window of their own: the in-transaction pause, and a worker
        # picked at random at a stage (it may be idle).
        if kind == "sigstop_in_txn":
            window = "txn"
        elif kind == "sigkill_worker":
            window = "stage"
        needs_holder = kind in ("sigkill_holder", "sigstop_holder", "sigstop_in_txn")
        busy = needs_holder or kind == "redis_restart"
        pause = rng.uniform(1.0, 5.0) if kind == "sigstop_holder" else rng.uniform(1.0, 12.0)
        down = rng.uniform(0.0, 6.0) if kind == "redis_restart" else rng.uniform(0.5, 8.0)
        whole = rng.random() < 0.5
        pick = rng.random()
        assert self.observer is not None
        observer = self.observer

        def ready(view: RunView) -> bool:
            if busy and (
                view.holder_pid is None
                or (needs_holder and self.supervisor.owner_of(view.holder_pid) is None)
            ):
                return False
            if window == "txn":
                return (
                    observer.items_applying(run_id, TXN_TYPE) > 0
                    and view.holder_pid is not None
                    and write_locked(self.world.target)
                )
            if window == "push":
                return view.holder_pid is not None and self.world.push_holds_locks()
            if window == "post_commit":
                return (
                    observer.items_applying(run_id, POST_COMMIT_TYPE) > 0
                    and view.holder_pid is not None
                    and not write_locked(self.world.target)
                    and self.committed(POST_COMMIT_TYPE)
                )
            return view.reached(stage, fraction)

        view = self.wait_for(run_id, ready)
        trigger = {
            "stage": f"at {stage}" + (f" {fraction:.0%}" if stage == "applying" else ""),
            "txn": f"inside the target's {TXN_TYPE} transaction (before COMMIT)",
            "post_commit": f"right after the target committed a {POST_COMMIT_TYPE} batch",
            "push": "while a git push holds the target's ref locks",
        }[window]
        if view is None:
            fault.missed = True
            fault.detail = f"(trigger: {trigger})"
            return fault
        fault.at = time.monotonic() - queued
        fault.stage = view.stage
        fault.generation = view.generation
        ttl = self.config.lease_ttl
        if kind == "sigkill_worker":
            workers = self.supervisor.workers()
            victim = workers[int(pick * len(workers))]
            holds = view.holder_pid is not None and self.supervisor.owner_of(view.holder_pid)
            self.supervisor.kill(victim)
            fault.detail = f"SIGKILL {victim.name} (pid {victim.pid}; holder: {holds is victim})"
        elif kind == "sigkill_holder":
            assert view.holder_pid is not None
            victim = self.supervisor.owner_of(view.holder_pid)
            assert victim is not None
            if whole:
                self.supervisor.kill(victim)
                fault.detail = f"SIGKILL holder {victim.name} whole (owner {view.lease_owner})"
            else:
                self.supervisor.kill(victim, whole=False, pid=view.holder_pid)
                fault.detail = (
                    f"SIGKILL holder's pool child {view.holder_pid} of {victim.name} "
                    f"(owner {view.lease_owner})"
                )
        elif kind in ("sigstop_holder", "sigstop_in_txn"):
            assert view.holder_pid is not None
            victim = self.supervisor.owner_of(view.holder_pid)
            if victim is None:
                fault.missed = True
                fault.detail = f"holder {view.lease_owner} is no managed worker"
                return fault
            frozen_for = ttl + pause
            self.supervisor.freeze(victim)
            time.sleep(frozen_for)
            after = self.observer.run(run_id) if self.observer else None
            self.supervisor.thaw(victim)
            fault.detail = (
                f"SIGSTOP {victim.name} (owner {view.lease_owner}) for {frozen_for:.1f}s "
                f"(TTL {ttl:.0f}s); when thawed: generation "
                f"{after.generation if after else '?'}, stage {after.stage if after else '?'}"
            )
        elif kind == "redis_restart":
            assert self.redis is not None
            self.redis.crash()
            time.sleep(down)
            self.redis.start()
            fault.detail = f"kill -9 redis-server, restarted after {down:.1f}s (AOF replayed)"
        elif kind == "postgres_restart":
            assert self.pg is not None
            self.pg.crash()
            time.sleep(down)
            self.pg.start()
            fault.detail = f"pg_ctl -m immediate stop, started after {down:.1f}s"
        elif kind == "duplicate_messages":
            fault.detail = self.duplicate(run_id, view, rng)
        if window != "stage":
            fault.detail += f"; {trigger}"
        return fault

    def write_details(self, written_twice: list[str]) -> list[str]:
        """The reflog of each ref written twice (who wrote what, when)."""
        lines = []
        for entry in written_twice[:5]:
            name = entry.split(" ", 1)[0]
            log = self.world.target / "logs" / name
            if name.startswith("refs/") and log.exists():
                lines.append(f"  reflog of {name} on the target:")
                for line in log.read_text().splitlines():
                    head, _, message = line.partition("\t")
                    old, new, *_rest = head.split(" ")
                    stamp = time.strftime("%H:%M:%S", time.localtime(int(head.rsplit(" ", 2)[-2])))
                    lines.append(f"    {stamp} {old[:10]} -> {new[:10]} ({message})")
        return lines

    def committed(self, object_type: str) -> bool:
        """Whether the target holds the source's content of every object of this type the
        round's Run was given (its batch committed)."""
        wanted = self.expected.get(object_type, {})
        if not wanted:
            return False
        prefix = f"reposync:{self.repo_id}:{object_type}:"
        held = {
            row.marker[len(prefix) :]: row.content_hash
            for row in forge_rows(self.world.target)
            if row.object_type == object_type and row.marker and row.marker.startswith(prefix)
        }
        return all(held.get(identity) == chash for identity, chash in wanted.items())

    def wait_for(self, run_id: int, ready: Callable[[RunView], bool]) -> RunView | None:
        assert self.observer is not None
        deadline = time.monotonic() + self.config.round_timeout
        while time.monotonic() < deadline:
            view = self.observer.run(run_id)
            if not view.active:
                return None
            if ready(view):
                return view
            time.sleep(0.02)
        return None

    def duplicate(self, run_id: int, view: RunView, rng: random.Random) -> str:
        """Deliver the Run's messages again: the ones being executed (still unacked,
        acks_late) and the ones waiting in the queue, exactly as kombu's restore of an
        unacked message does, or re-published with the same task id."""
        import redis

        assert self.redis is not None
        client = redis.Redis.from_url(self.redis.url)
        messages: list[tuple[str, dict[str, Any]]] = []
        for raw in client.hvals("unacked"):
            payload = json.loads(raw)[0]
            messages.append(("running", payload))
        for raw in client.lrange("reposync", 0, -1):
            messages.append(("queued", json.loads(raw)))
        mine = []
        for where, payload in messages:
            name = payload.get("headers", {}).get("task", "")
            try:
                args = json.loads(base64.b64decode(payload["body"]))[0]
            except (KeyError, ValueError, IndexError):
                continue
            if name.startswith("reposync.") and args and args[0] == run_id:
                mine.append((where, payload, name, args))
        if not mine:
            from reposync.tasks.base import RESUME_TASK

            self.sender.send_task(RESUME_TASK, args=[run_id])
            return "no message of the run in flight; sent a resume message (as the tick would)"
        done = []
        for _ in range(rng.randint(1, 2)):
            where, payload, name, args = rng.choice(mine)
            task_id = payload["headers"].get("id")
            if rng.random() < 0.5:
                restored = copy.deepcopy(payload)
                restored["headers"]["redelivered"] = True
                restored.setdefault("properties", {}).setdefault("delivery_info", {})[
                    "redelivered"
                ] = True
                client.rpush("reposync", json.dumps(restored))
                done.append(f"restored {where} {name}{args} id {task_id}")
            else:
                self.sender.send_task(name, args=args, task_id=task_id)
                done.append(f"re-published {where} {name}{args} id {task_id}")
        return "; ".join(done)

    # -- evidence ------------------------------------------------------------------------

    def evidence(self, record: RoundRecord, first_run: int | None, offsets: dict[str, int]) -> str:
        assert self.observer is not None
        lines: list[str] = []
        data: dict[str, Any] = {"round": record.round_no, "seed": self.config.seed}
        try:
            runs = self.observer.query(
                "SELECT id, status, stage, trigger, error_code, error_message, stage_attempts,"
                " lease_generation, counters FROM runs WHERE binding_id = %s AND id >= %s"
                " ORDER BY id",
                (self.binding_id, first_run or 0),
                timeout=20,
            )
            binding = self.observer.query(
                "SELECT lease_owner, lease_run_id, lease_generation, lease_expires_at, now()"
                " FROM bindings WHERE id = %s",
                (self.binding_id,),
                timeout=20,
            )
            lines.append(f"  binding lease: {binding[0]}")
            for run in runs:
                lines.append(
                    f"  run {run[0]}: {run[1]} at {run[2]} (trigger {run[3]}) error {run[4]}: "
                    f"{(run[5] or '')[:300]} | stage attempts {run[6]}, generation {run[7]}"
                )
                states = self.observer.query(
                    "SELECT object_type, action, state, error_code, count(*) FROM run_items"
                    " WHERE run_id = %s AND state <> 'completed'"
                    " GROUP BY object_type, action, state, error_code",
                    (run[0],),
                    timeout=20,
                )
                for state in states:
                    lines.append(f"    items not completed: {state}")
                # The routine ones (a batch claimed, settled; a stage completed) only
                # counted; everything else in full.
                events = self.observer.query(
                    "SELECT seq, type, stage, generation, message FROM run_events"
                    " WHERE run_id = %s AND type NOT IN ('batch_claimed', 'batch_settled',"
                    " 'stage_completed') ORDER BY seq DESC LIMIT 40",
                    (run[0],),
                    timeout=20,
                )
                [(routine,)] = self.observer.query(
                    "SELECT count(*) FROM run_events WHERE run_id = %s AND type IN"
                    " ('batch_claimed', 'batch_settled', 'stage_completed')",
                    (run[0],),
                    timeout=20,
                )
                lines.append(f"    ({routine} routine events: batches claimed/settled, stages)")
                for event in reversed(events):
                    lines.append(
                        f"    event {event[0]} {event[1]} [{event[2]}] gen {event[3]}: "
                        f"{(event[4] or '')[:240]}"
                    )
            data["runs"] = [list(map(str, run)) for run in runs]
        except Exception as exc:
            lines.append(f"  (database unavailable for evidence: {exc!r})")
        lines.extend(record.details)
        for managed in self.supervisor.processes:
            text = managed.log_text(offsets.get(managed.name, 0))
            picked = [
                line
                for line in text.splitlines()
                if line.startswith(("[", "=====")) and INTERESTING.search(line)
            ]
            data[managed.name] = picked
            if picked:
                lines.append(f"  log {managed.name} ({managed.log_path}):")
                lines.extend(f"    | {line[:300]}" for line in picked[-30:])
        data["problems"] = record.problems
        data["faults"] = [str(f) for f in record.faults]
        data["mutations"] = record.mutations
        path = self.workdir / "evidence" / f"round-{record.round_no:03d}.json"
        path.write_text(json.dumps(data, indent=2, default=str))
        lines.append(f"  evidence file: {path}")
        return "\n".join(lines)

    # -- teardown ------------------------------------------------------------------------

    def teardown(self) -> None:
        self.supervisor.shutdown()
        if self.observer is not None:
            self.observer.close()
        if self.sender is not None:
            self.sender.close()
        if self.redis is not None:
            self.redis.stop()
        if self.pg is not None:
            self.pg.stop()
            if not self.config.keep and self.summary.ok():
                self.pg.remove()
            else:
                shutil.copy(self.pg.log, self.workdir / "logs" / "postgres.log")
                self.pg.remove()
        if not self.config.keep and self.summary.ok():
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.summary.workdir = ""


def run(config: ChaosConfig) -> Summary:
    return Chaos(config).play()


def _say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _entry_point() -> list[str]:
    script = Path(sys.executable).parent / "reposync"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "reposync"]


def _free_port() -> int:
    from tests.servers import free_port

    return free_port()


def _problem(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _fingerprint_diff(before: TargetState, after: TargetState) -> str:
    changes = []
    for name in sorted(set(before.refs) | set(after.refs)):
        if before.refs.get(name) != after.refs.get(name):
            changes.append(f"ref {name}")
        elif before.reflogs.get(name) != after.reflogs.get(name):
            changes.append(f"reflog {name}")
    rows_before = {(r.object_type, r.id): r for r in before.rows}
    rows_after = {(r.object_type, r.id): r for r in after.rows}
    for key in sorted(set(rows_before) | set(rows_after)):
        a, b = rows_before.get(key), rows_after.get(key)
        if a is None or b is None or (a.revision, a.content_hash) != (b.revision, b.content_hash):
            changes.append(f"{key[0]} {key[1]}")
    return ", ".join(changes[:10]) + (" …" if len(changes) > 10 else "") or "none"
