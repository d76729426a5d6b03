"""Issue 23 #7 under ``reposync api``: the throttle holds across gunicorn's worker
processes (its count is in the database they share, not in one process's memory), and
behind a declared proxy it counts the forwarded client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from reposync.service.accounts.users import create_user, issue_token
from reposync.service.context import ServiceContext
from tests.servers import free_port
from tests.workers import WorkerProcess, start_api

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

LIMIT = 4


@pytest.fixture
def api(tmp_path, dctx: ServiceContext, env) -> Iterator[str]:
    """``reposync api`` (two worker processes) behind one declared proxy hop."""
    port = free_port()
    env.update(REPOSYNC_AUTH_FAILURE_LIMIT=str(LIMIT), REPOSYNC_PROXY_HOPS="1")
    process: WorkerProcess = start_api(env, tmp_path, port)
    yield f"http://127.0.0.1:{port}/api/ext/v1/sync"
    process.stop()


def overview(base: str, token: str, client: str) -> requests.Response:
    """One request on a connection of its own (gunicorn's workers take turns accepting)."""
    return requests.get(
        f"{base}/overview",
        headers={
            "Authorization": f"Bearer {token}",
            "X-Forwarded-For": client,
            "Connection": "close",
        },
        timeout=10,
    )


def test_the_throttle_holds_across_the_apis_processes(api, dctx):
    """LIMIT refusals spread over the workers, then 429 from any of them, a valid token
    included; another forwarded client still gets in."""
    token = issue_token(dctx, create_user(dctx, "ada", role="admin").id)
    statuses = [overview(api, f"rs_guess_{n}", "192.0.2.1").status_code for n in range(LIMIT)]
    assert statuses == [401] * LIMIT
    for _ in range(4):  # whichever process answers
        refused = overview(api, token, "192.0.2.1")
        assert refused.status_code == 429
        assert refused.json()["code"] == "too_many_attempts"
        assert refused.headers["Retry-After"].isdigit()
        assert refused.headers["X-Content-Type-Options"] == "nosniff"
    assert overview(api, token, "192.0.2.2").status_code == 200
