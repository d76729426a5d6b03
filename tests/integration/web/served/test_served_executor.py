"""Issue 25: in the embedded mode ``reposync api`` alone runs what the API and the page
queue. No worker, no beat, no Redis: the API process (gunicorn, one worker process) is
started for real on the data directory's SQLite file, and its in-process executor takes
the Runs, under the same leases as a Celery worker. A cancel stops a Run; a shutdown
gives the running step's lease up; a Run a killed API left ``running`` is resumed when
the API starts again, at once (the dead holder is seen, no TTL is waited out)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from sqlalchemy import select

from reposync.config import Settings
from reposync.models import Binding, Run, RunEvent
from reposync.models.db import Database
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from tests.gitrepo import generate, init_bare, install_gate_hook, refs
from tests.servers import free_port
from tests.workers import ROOT, WorkerProcess, start_api, wait_for

API = "/api/ext/v1/sync"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]{64})"')
TERMINAL = {"completed", "cancelled", "failed", "blocked", "requires_attention"}


class Served:
    """One embedded data directory, the ``reposync api`` processes started on it, and a
    context of the test's own on the same SQLite file."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.data = tmp_path / "data"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.processes: list[WorkerProcess] = []
        self.ctx: ServiceContext | None = None
        self.token = ""

    def environment(self) -> dict[str, str]:
        """No database, no broker configured; a lease TTL no test could wait out."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("REPOSYNC_")}
        env.update(
            REPOSYNC_DATA_DIR=str(self.data),
            REPOSYNC_LOCAL_ROOTS=str(self.tmp_path),
            REPOSYNC_LOCAL_TARGET_HOOKS="1",  # the target's hook holds a push
            REPOSYNC_LEASE_TTL="3600",
            REPOSYNC_TICK_INTERVAL="1",
            PYTHONPATH=str(ROOT),
        )
        return env

    def start(self) -> WorkerProcess:
        api = start_api(self.environment(), self.tmp_path, self.port)
        self.processes.append(api)
        if self.ctx is None:  # the API migrated the database: the test may use it now
            settings = Settings(data_dir=self.data)
            self.ctx = ServiceContext(settings, Database(settings.effective_database_url))
            self.token = issue_token(self.ctx, create_user(self.ctx, "ops", role="admin").id)
        return api

    def bind(self, source: Path, target: Path) -> int:
        assert self.ctx is not None
        return bind(self.ctx, SyncRequest(f"local:{source}", f"local:{target}")).id

    def api(self, method: str, path: str) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return requests.request(method, self.base + API + path, headers=headers, timeout=30)

    def run(self, run_id: int) -> Run:
        assert self.ctx is not None
        with self.ctx.db.session() as session:
            run = session.get(Run, run_id)
            assert run is not None
            return run

    def wait_status(self, run_id: int, statuses: set[str], timeout: float = 90) -> Run:
        wait_for(lambda: self.run(run_id).status in statuses, timeout, f"run {run_id} to end")
        return self.run(run_id)

    def events(self, run_id: int) -> list[str]:
        assert self.ctx is not None
        with self.ctx.db.session() as session:
            return list(
                session.execute(
                    select(RunEvent.type).where(RunEvent.run_id == run_id).order_by(RunEvent.seq)
                ).scalars()
            )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    served = Served(tmp_path)
    yield served
    for process in served.processes:
        process.stop()
    if served.ctx is not None:
        served.ctx.db.dispose()


def test_a_run_queued_through_the_api_is_run_by_the_api_alone(served, tmp_path):
    """POST a Run: it completes with no worker and no broker, and while it waits its
    representation says where (this API process's executor)."""
    served.start()
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = tmp_path / "dst.git"
    binding_id = served.bind(source, target)
    created = served.api("POST", f"/bindings/{binding_id}/runs")
    assert created.status_code == 202, created.text
    assert "this API process" in created.json()["waiting"]
    run = served.wait_status(created.json()["id"], TERMINAL)
    assert run.status == "completed", run.error_message
    assert refs(target) == refs(source)
    shown = served.api("GET", f"/runs/{run.id}").json()
    assert shown["status"] == "completed"
    assert "waiting" not in shown  # only a queued Run waits


def test_the_pages_sync_now_dry_run_and_full_audit_are_run_by_the_api(served, tmp_path):
    """The Binding page's three buttons, posted as a browser does (session cookie and
    CSRF token): each Run ends in the API process, the dry run writing nothing."""
    served.start()
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = init_bare(tmp_path / "dst.git")
    binding_id = served.bind(source, target)
    browser = requests.Session()
    form = browser.get(served.base + "/signin", timeout=30).text
    signed = browser.post(
        served.base + "/signin",
        data={"token": served.token, "csrf": _csrf(form), "next": "/"},
        allow_redirects=False,
        timeout=30,
    )
    assert signed.status_code == 302, signed.text
    for action in ("dry_run", "sync", "full_audit"):
        page = browser.get(f"{served.base}/bindings/{binding_id}", timeout=30).text
        queued = browser.post(
            f"{served.base}/bindings/{binding_id}/runs",
            data={"action": action, "csrf": _csrf(page)},
            allow_redirects=False,
            timeout=30,
        )
        assert queued.status_code == 302, queued.text
        run = served.wait_status(int(queued.headers["Location"].rsplit("/", 1)[1]), TERMINAL)
        assert run.status == "completed", (action, run.error_message)
        if action == "dry_run":
            assert refs(target) == {}
    assert refs(target) == refs(source)


def test_a_cancel_through_the_api_stops_a_run_the_api_runs(served, tmp_path):
    """A Run held inside its push is asked to cancel: it ends ``cancelled`` and the
    Binding is free again."""
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = init_bare(tmp_path / "dst.git")
    entered, gate = tmp_path / "push-entered", tmp_path / "push-gate"
    install_gate_hook(target, entered, gate)
    served.start()
    binding_id = served.bind(source, target)
    run_id = served.api("POST", f"/bindings/{binding_id}/runs").json()["id"]
    wait_for(entered.exists, 60, "the executor to be inside the held push")
    cancelled = served.api("POST", f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    gate.touch()
    run = served.wait_status(run_id, TERMINAL)
    assert run.status == "cancelled"
    assert served.ctx is not None
    with served.ctx.db.session() as session:
        assert session.get(Binding, binding_id).lease_run_id is None


def test_a_run_a_killed_api_left_running_is_resumed_when_it_starts_again(served, tmp_path):
    """SIGKILL the whole API mid-push: the Run stays ``running`` under a lease whose
    holder is dead. The next ``reposync api`` takes it over at once and completes it."""
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = init_bare(tmp_path / "dst.git")
    entered, gate = tmp_path / "push-entered", tmp_path / "push-gate"
    install_gate_hook(target, entered, gate)  # only the first push is held
    first = served.start()
    binding_id = served.bind(source, target)
    run_id = served.api("POST", f"/bindings/{binding_id}/runs").json()["id"]
    wait_for(entered.exists, 60, "the executor to be inside the held push")
    first.kill()
    assert served.run(run_id).status == "running"
    served.start()
    run = served.wait_status(run_id, TERMINAL)
    assert run.status == "completed", run.error_message
    assert "lease_reclaimed" in served.events(run_id)
    assert refs(target) == refs(source)


def test_stopping_the_api_gives_the_running_steps_lease_up(served, tmp_path):
    """SIGTERM to ``reposync api`` while a Run is inside its push: the step is
    interrupted (its event says so, the git child ends), and the next start resumes
    the Run to its end."""
    source = generate(tmp_path / "src.git", commits=5, branches=3, tags=2)
    target = init_bare(tmp_path / "dst.git")
    entered, gate = tmp_path / "push-entered", tmp_path / "push-gate"
    install_gate_hook(target, entered, gate)
    first = served.start()
    binding_id = served.bind(source, target)
    run_id = served.api("POST", f"/bindings/{binding_id}/runs").json()["id"]
    wait_for(entered.exists, 60, "the executor to be inside the held push")
    os.kill(first.process.pid, signal.SIGTERM)  # gunicorn's master, as systemd would
    first.process.wait(30)
    assert "interrupted" in served.events(run_id)
    assert served.run(run_id).status == "running"
    served.start()
    run = served.wait_status(run_id, TERMINAL)
    assert run.status == "completed", run.error_message
    assert refs(target) == refs(source)


def _csrf(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page has no CSRF token"
    return found.group(1)
