"""The distributed mode through its front door: ``reposync api`` (gunicorn) and a real
``celery worker`` on PostgreSQL and Redis, driven over HTTP only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from tests.gitrepo import generate, refs
from tests.servers import free_port
from tests.workers import start_api, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def sse_events(response: requests.Response) -> list[tuple[str, dict]]:
    """(event name, data) of every message of a finished stream."""
    found = []
    for block in response.text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "data" in fields:
            found.append((fields.get("event", "message"), json.loads(fields["data"])))
    return found


def test_bind_run_and_watch_over_http(tmp_path: Path, dctx: ServiceContext, env, processes):
    """POST /bindings, POST /runs (202), the worker executes it, the API shows it all."""
    source = generate(tmp_path / "src.git", commits=30, branches=10, tags=5)
    target = tmp_path / "dst.git"
    port = free_port()
    processes.append(start_worker(env, tmp_path, "w1"))
    processes.append(start_api(env, tmp_path, port))
    admin = create_user(dctx, "ops", role="admin")
    headers = {"Authorization": f"Bearer {issue_token(dctx, admin.id)}"}
    base = f"http://127.0.0.1:{port}/api/ext/v1/sync"

    assert requests.get(f"{base}/overview", timeout=10).status_code == 401
    created = requests.post(
        f"{base}/bindings",
        json={"source": f"local:{source}", "target": f"local:{target}"},
        headers=headers,
        timeout=30,
    )
    assert created.status_code == 201, created.text
    binding_id = created.json()["id"]

    runs_url = f"{base}/bindings/{binding_id}/runs"
    queued = requests.post(runs_url, json={}, headers=headers, timeout=30)
    assert queued.status_code == 202, queued.text
    assert queued.json()["status"] == "queued"  # answered before the work
    run_url = f"http://127.0.0.1:{port}{queued.headers['Location']}"

    def finished() -> bool:
        return requests.get(run_url, headers=headers, timeout=10).json()["status"] not in (
            "queued",
            "running",
        )

    wait_for(finished, 90, "the Run to finish", interval=0.5)
    run = requests.get(run_url, headers=headers, timeout=10).json()
    assert run["status"] == "completed", run
    assert run["counters"]["created"] == 16  # main + 10 branches + 5 tags
    assert {k: v for k, v in refs(target).items() if k.startswith("refs/")} == {
        k: v for k, v in refs(source).items() if k.startswith(("refs/heads/", "refs/tags/"))
    }

    stream = requests.get(
        f"{run_url}/events",
        headers={**headers, "Accept": "text/event-stream"},
        timeout=60,
    )
    assert stream.headers["Content-Type"].startswith("text/event-stream")
    messages = sse_events(stream)
    assert messages[-1] == ("end", {"run_id": run["id"], "status": "completed"})
    seqs = [data["seq"] for name, data in messages if name == "message"]
    assert seqs == sorted(seqs)
    assert len(seqs) == len(set(seqs)) > 5

    overview = requests.get(f"{base}/overview", headers=headers, timeout=10).json()
    [entry] = overview["bindings"]
    assert entry["latest_run"]["id"] == run["id"]
    assert entry["active_run"] is None
