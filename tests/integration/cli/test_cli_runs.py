"""``reposync runs`` and ``reposync bindings`` (issue 15): the API's reads and cancel from
the command line, on the embedded database and on the distributed mode's PostgreSQL, and
``reposync worker`` handing Celery its options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from reposync.config import Settings
from reposync.models import Run
from reposync.models.db import Database
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from reposync.service.runs import create_run, enqueue_run
from reposync.web.app import API_PREFIX, create_app
from tests.gitrepo import generate
from tests.integration.cli.test_cli import assert_refused, run_cli
from tests.integration.conftest import wait_terminal
from tests.workers import ROOT, WorkerProcess, wait_for

SERVER_PATH = "/srv/reposync-data/git/binding-1.git"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, str]:
    source = generate(tmp_path / "src.git", commits=4, branches=2, tags=1)
    return f"local:{source}", f"local:{tmp_path / 'dst.git'}"


def api_json(ctx: ServiceContext, path: str) -> Any:
    """What ``GET path`` answers an admin: the shape ``--json`` must have."""
    admin = create_user(ctx, f"admin-{os.urandom(4).hex()}", role="admin")
    client = create_app(ctx.settings, ctx=ctx).test_client()
    response = client.get(
        API_PREFIX + path, headers={"Authorization": f"Bearer {issue_token(ctx, admin.id)}"}
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def json_of(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = run_cli(capsys, *argv, "--json")
    assert status == 0, err
    return json.loads(out)  # the whole of stdout is one object


def test_runs_and_bindings_on_the_embedded_database(capsys, data_dir, pair):
    """Listed, shown and paged as the API shows them to an admin (the command line's
    user acts with every right: nothing redacted), readable without ``--json``."""
    source, target = pair
    assert run_cli(capsys, "sync", source, target)[0] == 0
    assert run_cli(capsys, "sync", source, target, "--dry-run")[0] == 0
    db = Database(f"sqlite:///{data_dir / 'reposync.db'}")
    try:
        ctx = ServiceContext(settings=Settings(data_dir=data_dir), db=db)
        with db.transaction() as session:  # a message naming a server path
            session.execute(update(Run).where(Run.id == 1).values(error_message=SERVER_PATH))

        listing = json_of(capsys, "runs", "list")
        assert listing == api_json(ctx, "/runs")
        assert [run["id"] for run in listing["items"]] == [2, 1]
        assert listing["next_after_id"] is None
        assert listing["items"][1]["error_message"] == SERVER_PATH
        shown = json_of(capsys, "runs", "show", "1")
        assert shown == api_json(ctx, "/runs/1")
        assert (shown["status"], shown["report"]["run_id"]) == ("completed", 1)
        events = json_of(capsys, "runs", "events", "1")
        assert events == api_json(ctx, "/runs/1/events?limit=200")
        assert events["next_after_seq"] is None
        assert json_of(capsys, "bindings", "list") == api_json(ctx, "/bindings")
        binding = json_of(capsys, "bindings", "show", "1")
        assert binding == api_json(ctx, "/bindings/1")
        assert (binding["source"], binding["target"]) == pair
    finally:
        db.dispose()

    status, out, err = run_cli(capsys, "runs", "list", "--limit", "1")
    assert status == 0
    header, row = out.splitlines()
    assert header.split() == [
        "RUN", "BINDING", "MODE", "AUDIT", "TRIGGER", "STATUS", "STAGE", "CREATED", "FINISHED"
    ]  # fmt: skip
    assert row.split()[:7] == [
        "2",
        "1",
        "dry_run",
        "checkpoint",
        "manual",
        "completed",
        "completed",
    ]
    assert err == "reposync: there is more: run the same command with --after-id 2\n"
    status, out, err = run_cli(capsys, "runs", "list", "--after-id", "2", "--status", "completed")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["1"]
    assert err == ""

    status, out, _ = run_cli(capsys, "runs", "show", "2")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("Run 2 (dry_run, checkpoint audit")
    assert lines[0].endswith(": completed")
    assert lines[1] == f"  {source} -> {target}"
    assert "  binding 1, normal run, trigger manual, attempt 1" in lines

    status, out, err = run_cli(capsys, "runs", "events", "1", "--limit", "3")
    assert status == 0
    assert [line.split()[:1] for line in out.splitlines()] == [["SEQ"], ["1"], ["2"], ["3"]]
    assert "run_created" in out.splitlines()[1]
    assert err == "reposync: there is more: run the same command with --after-seq 3\n"
    status, out, err = run_cli(capsys, "runs", "events", "1", "--after-seq", "3")
    assert out.splitlines()[1].split()[0] == "4"
    assert "run_finished" in out.splitlines()[-1]
    assert err == ""

    status, out, _ = run_cli(capsys, "bindings", "list")
    assert status == 0
    assert out.splitlines()[1].split()[:3] == ["1", source, target]
    status, out, _ = run_cli(capsys, "bindings", "show", "1")
    assert out.splitlines()[0] == f"Binding 1: {source} -> {target}"
    assert "  latest runs:" in out.splitlines()
    assert [line.split()[0] for line in out.splitlines()[-2:]] == ["2", "1"]

    status, out, _ = run_cli(capsys, "runs", "cancel", "1")
    assert (status, out) == (0, "run 1 already ended: completed\n")


def test_misuse_and_unknown_records_are_refused(capsys, data_dir, pair):
    """An id nobody has is not found, a page size outside 1..200 a usage error: exit 2,
    one line; ``--json`` prints the error as one object too."""
    assert run_cli(capsys, "sync", *pair)[0] == 0
    for argv, code in (
        (("runs", "show", "99"), "[record_not_found]"),
        (("runs", "events", "99"), "[record_not_found]"),
        (("runs", "cancel", "99"), "[record_not_found]"),
        (("bindings", "show", "7"), "[record_not_found]"),
        (("runs", "list", "--limit", "201"), "[invalid_input]"),
        (("bindings", "list", "--limit", "0"), "[invalid_input]"),
    ):
        status, out, err = run_cli(capsys, *argv)
        assert_refused(status, err, code)
        assert out == ""
    status, out, _ = run_cli(capsys, "runs", "show", "99", "--json")
    assert status == 2
    assert json.loads(out)["error_code"] == "record_not_found"


def test_cancel_of_a_run_nobody_is_executing(capsys, data_dir, pair):
    """Embedded: a Run no process holds is asked to stop; the next ``sync`` of the pair
    ends it cancelled and then syncs (issue 25: it used to answer with the cancelled
    Run, so syncing took one call more)."""
    source, target = pair
    db = Database(f"sqlite:///{data_dir / 'reposync.db'}")
    try:
        db.upgrade()
        ctx = ServiceContext(settings=Settings(data_dir=data_dir), db=db)
        run = create_run(ctx, bind(ctx, SyncRequest(source, target)).id)
    finally:
        db.dispose()
    status, out, _ = run_cli(capsys, "runs", "cancel", str(run.id))
    assert status == 0
    assert out == (
        f"run {run.id}: cancel requested; it stops at its next cancellation point, a "
        "running push within seconds (it is queued in stage queued)\n"
    )
    assert json_of(capsys, "runs", "show", str(run.id))["cancel_requested_at"] is not None
    status, out, _ = run_cli(capsys, "sync", source, target, "--json")
    report = json.loads(out)
    assert (status, report["status"]) == (0, "completed")
    assert report["run_id"] != run.id
    assert json_of(capsys, "runs", "show", str(run.id))["status"] == "cancelled"


def test_a_follower_prints_nothing_while_it_waits(capsys, tmp_path, data_dir, pair):
    """``runs events -f`` on a Run nobody executes yet polls in silence (no blank line per
    poll in a terminal or a log) and ends with the Run once a ``sync`` finishes it."""
    source, target = pair
    db = Database(f"sqlite:///{data_dir / 'reposync.db'}")
    try:
        db.upgrade()
        ctx = ServiceContext(settings=Settings(data_dir=data_dir), db=db)
        run = create_run(ctx, bind(ctx, SyncRequest(source, target)).id)
    finally:
        db.dispose()
    follower = reposync_process(
        dict(os.environ), tmp_path, "follow", "runs", "events", str(run.id), "-f"
    )
    try:
        # Several of its one-second polls find nothing new before the Run moves on.
        wait_for(lambda: "run_created" in follower.log(), 60, "the follower's first page")
        time.sleep(3.5)
        assert run_cli(capsys, "sync", source, target)[0] == 0
        assert follower.process.wait(30) == 0, follower.log()
    finally:
        if follower.process.poll() is None:
            follower.process.kill()
    followed = follower.log().splitlines()
    assert followed[0].split() == ["SEQ", "TIME", "STAGE", "EVENT", "MESSAGE"]
    assert all(line.strip() for line in followed), followed
    assert "status completed" in followed[-1]


def reposync_process(env: dict[str, str], log_dir: Path, name: str, *argv: str) -> WorkerProcess:
    """``reposync ARGV`` in its own process group, its output in a log file."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "reposync", *argv],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return WorkerProcess(name, process, log_path)


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_runs_in_the_distributed_mode_with_a_worker_given_celerys_options(
    capsys, tmp_path, dctx, env, workers, monkeypatch
):
    """On PostgreSQL: a queued Run is listed, cancelled from the command line and
    followed until it ends; ``reposync worker`` takes Celery's options (one process,
    an extra queue, a node name) and executes it."""
    monkeypatch.setenv("REPOSYNC_DATABASE_URL", env["REPOSYNC_DATABASE_URL"])
    source = generate(tmp_path / "src.git", commits=4, branches=2, tags=1)
    binding = bind(dctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}"))
    run = enqueue_run(dctx, binding.id)

    listing = json_of(capsys, "runs", "list", "--binding", str(binding.id))
    assert [(r["id"], r["status"]) for r in listing["items"]] == [(run.id, "queued")]
    status, out, _ = run_cli(capsys, "runs", "cancel", str(run.id))
    assert status == 0
    assert out.startswith(f"run {run.id}: cancel requested")
    follower = reposync_process(env, tmp_path, "follow", "runs", "events", str(run.id), "-f")
    workers.append(follower)

    worker = reposync_process(
        env,
        tmp_path,
        "worker",
        "worker",
        "--concurrency",
        "1",
        "--queues",
        "reposync,cli-extra",
        "--hostname",
        "cli-test@%h",
        "--without-heartbeat",
    )
    workers.append(worker)
    wait_for(lambda: "ready." in worker.log() or worker.process.poll() is not None, 60, "worker")
    assert worker.process.poll() is None, worker.log()

    finished = wait_terminal(dctx, run.id)
    assert finished.status == "cancelled"
    assert follower.process.wait(30) == 0, follower.log()  # --follow ends with the Run
    followed = follower.log().splitlines()
    assert all(line.strip() for line in followed), followed  # waiting printed nothing
    assert followed[0].split() == ["SEQ", "TIME", "STAGE", "EVENT", "MESSAGE"]
    assert [line.split()[4] for line in followed[1:3]] == ["run_created", "cancel_requested"]
    assert "status cancelled" in followed[-1]

    banner = worker.log()
    assert "cli-test@" in banner
    assert "concurrency: 1 (prefork)" in banner
    assert ".> cli-extra" in banner
    assert ".> reposync" in banner
    shown = json_of(capsys, "runs", "show", str(run.id))
    assert shown["status"] == "cancelled"
    status, out, _ = run_cli(capsys, "bindings", "list")
    assert out.splitlines()[1].split()[:2] == [str(binding.id), f"local:{source}"]
