"""``/metrics`` and JSON logs of the distributed mode, through real processes: ``reposync
api`` (gunicorn, two worker processes) and real ``celery worker`` processes (prefork) on
PostgreSQL and Redis. The counts of every process are summed on the API's scrape."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from reposync.lifecycle import Stage
from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from tests.gitrepo import generate
from tests.servers import free_port
from tests.workers import start_api, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

PIPELINE = [
    stage.value
    for stage in (
        Stage.CHECKING_ACCESS,
        Stage.INVENTORY_SOURCE,
        Stage.INVENTORY_TARGET,
        Stage.PLANNING,
        Stage.APPLYING,
        Stage.VERIFYING,
        Stage.FINALIZING,
    )
]


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """(sample name, labels) → value, parsed with prometheus_client's own parser."""
    found: dict[tuple[str, frozenset], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in found, f"{key} exposed twice"
            found[key] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def by_label(found: dict, name: str, label: str, **fixed: str) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for (sample, labels), number in found.items():
        labels = dict(labels)
        if sample == name and all(labels.get(k) == v for k, v in fixed.items()):
            totals[labels[label]] += number
    return dict(totals)


def run_two(tmp_path: Path, base: str, headers: dict) -> list[dict]:
    """Two Bindings, one Run each, at the same time; both finished."""
    urls = []
    for name in ("a", "b"):
        source = generate(tmp_path / f"{name}-src.git", commits=12, branches=4, tags=2)
        created = requests.post(
            f"{base}/bindings",
            json={"source": f"local:{source}", "target": f"local:{tmp_path / f'{name}-dst.git'}"},
            headers=headers,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        queued = requests.post(
            f"{base}/bindings/{created.json()['id']}/runs", json={}, headers=headers, timeout=30
        )
        assert queued.status_code == 202, queued.text
        urls.append(f"{base}/runs/{queued.json()['id']}")

    def finished() -> bool:
        return all(
            requests.get(u, headers=headers, timeout=10).json()["status"]
            not in ("queued", "running")
            for u in urls
        )

    wait_for(finished, 120, "both Runs to finish", interval=0.5)
    runs = [requests.get(u, headers=headers, timeout=10).json() for u in urls]
    assert [run["status"] for run in runs] == ["completed", "completed"], runs
    return runs


def test_scrape_sums_every_process(
    tmp_path: Path, dctx: ServiceContext, env: dict[str, str], processes
):
    env = {**env, "REPOSYNC_LOG_FORMAT": "json"}
    port = free_port()
    processes.append(start_worker(env, tmp_path, "w1"))
    processes.append(start_worker(env, tmp_path, "w2"))
    api = start_api(env, tmp_path, port)
    processes.append(api)
    admin = create_user(dctx, "ops", role="admin")
    headers = {"Authorization": f"Bearer {issue_token(dctx, admin.id)}"}
    base = f"http://127.0.0.1:{port}/api/ext/v1/sync"

    runs = run_two(tmp_path, base, headers)

    metrics_dir = Path(env["REPOSYNC_DATA_DIR"]) / "metrics"
    roles = sorted(path.name.split("-")[0] for path in metrics_dir.iterdir())
    assert roles == ["api", "worker", "worker"]  # one directory per main process
    recording = {  # the pool processes that counted (their files carry their pids)
        f.stem.rsplit("_", 1)[1] for f in metrics_dir.glob("worker-*/counter_*.db")
    }
    assert recording

    # Any of gunicorn's two workers answers, each with the same sums (without a token).
    texts = {requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text for _ in range(8)}
    assert len(texts) == 1
    response = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    found = samples(response.text)

    assert value(found, "reposync_runs_finished_total", status="completed", trigger="manual") == 2
    for stage in PIPELINE:
        # Each stage ran at least once per Run; all but applying exactly once.
        count = sum(
            by_label(
                found, "reposync_stage_duration_seconds_count", "outcome", stage=stage
            ).values()
        )
        assert count == 2 if stage != Stage.APPLYING.value else count >= 2, (stage, count)
    assert (
        value(found, "reposync_stage_duration_seconds_count", stage="finalizing", outcome="stopped")
        == 2
    )
    completed = by_label(found, "reposync_items_settled_total", "object_type", state="completed")
    assert sum(completed.values()) == sum(run["counters"]["created"] for run in runs) > 0
    assert by_label(found, "reposync_items_settled_total", "state").keys() == {"completed"}
    assert value(found, "reposync_broker_up") == 1
    assert value(found, "reposync_queue_depth", queue="reposync") == 0

    # The API's own logs (gunicorn's error and access logs, the app's) are JSON lines too.
    api_lines = [line for line in api.log().splitlines() if line.strip()]
    assert api_lines
    for line in api_lines:
        json.loads(line)
    assert any('"GET /metrics' in json.loads(line)["message"] for line in api_lines)


def test_worker_logs_json_lines_with_the_runs_context(
    tmp_path: Path, dctx: ServiceContext, env: dict[str, str], processes
):
    env = {**env, "REPOSYNC_LOG_FORMAT": "json"}
    port = free_port()
    worker = start_worker(env, tmp_path, "w1")
    processes.append(worker)
    processes.append(start_api(env, tmp_path, port))
    admin = create_user(dctx, "ops", role="admin")
    headers = {"Authorization": f"Bearer {issue_token(dctx, admin.id)}"}
    runs = run_two(tmp_path, f"http://127.0.0.1:{port}/api/ext/v1/sync", headers)

    lines = worker.log().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("{"))
    records = [json.loads(line) for line in lines[first:] if line.strip()]  # all JSON
    for run in runs:
        own = [r for r in records if r.get("run_id") == run["id"]]
        stages = {r["stage"] for r in own if "generation" in r}
        assert stages == set(PIPELINE), stages
        for record in own:
            if "generation" in record:  # after the claim: every field
                assert record["binding_id"] == run["binding_id"]
                assert isinstance(record["generation"], int)
                assert record["task_id"]
                assert record["process"]
        # Each claim its own generation; a task runs several of the Run's stages in a
        # row (its chain of steps), each logged with that task's id.
        claimed = [
            r
            for r in own
            if r["message"].startswith(f"run {run['id']}: ") and "attempt" in r["message"]
        ]
        assert len(claimed) >= len(PIPELINE)
        assert all(r["task_id"] for r in claimed)
        assert len({r["generation"] for r in claimed}) == len(claimed)
    # Celery's own records of a task carry its id too.
    assert any(
        r["logger"].startswith("celery") and r.get("task_id") and "succeeded" in r["message"]
        for r in records
    )


def test_worker_logs_stay_text_by_default(
    tmp_path: Path, dctx: ServiceContext, env: dict[str, str], processes
):
    env = {k: v for k, v in env.items() if k != "REPOSYNC_LOG_FORMAT"}
    port = free_port()
    worker = start_worker(env, tmp_path, "w1")
    processes.append(worker)
    api = start_api(env, tmp_path, port)
    processes.append(api)
    admin = create_user(dctx, "ops", role="admin")
    headers = {"Authorization": f"Bearer {issue_token(dctx, admin.id)}"}
    runs = run_two(tmp_path, f"http://127.0.0.1:{port}/api/ext/v1/sync", headers)

    text = worker.log()
    assert f"run {runs[0]['id']}: checking_access (binding" in text
    for log in (text, api.log()):
        assert not [line for line in log.splitlines() if line.startswith("{")]
    assert "INFO/ForkPoolWorker" in text  # Celery's own format, unchanged
