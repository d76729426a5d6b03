"""Issue 12 #8: requests gunicorn refuses before Flask sees them answer problem JSON too
(an oversized or NUL-carrying ``Authorization`` header got gunicorn's HTML)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from reposync.service.context import ServiceContext
from tests.servers import free_port
from tests.workers import WorkerProcess, start_api

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def api(tmp_path, dctx: ServiceContext, env) -> Iterator[int]:
    port = free_port()
    process: WorkerProcess = start_api(env, tmp_path, port)
    yield port
    process.stop()


def raw_request(port: int, header_value: bytes) -> tuple[str, dict[str, str], bytes]:
    request = (
        b"GET /api/ext/v1/sync/bindings HTTP/1.1\r\nHost: localhost\r\n"
        b"Authorization: Bearer " + header_value + b"\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return status, headers, body


@pytest.mark.parametrize(
    ("value", "status", "code"),
    [
        (b"x" * 10_000, 431, "request_header_fields_too_large"),
        (b"abc\x00def", 400, "invalid_request"),
    ],
)
def test_a_header_gunicorn_refuses_gets_problem_json(api, value, status, code):
    line, headers, body = raw_request(api, value)
    assert line.startswith(f"HTTP/1.1 {status} ")
    assert headers["content-type"] == "application/problem+json"
    assert headers["x-content-type-options"] == "nosniff"  # issue 23 #7
    problem = json.loads(body)
    assert (problem["status"], problem["code"]) == (status, code)
    assert problem["type"].endswith(code)
