"""Issue 12 #4 (part): event streams cannot take every request thread of the API.

50 streams on one Run once held every thread (``/health`` took 23 s). Each process now
holds at most ``api_max_streams`` streams (below its thread count) and a user at most
``api_streams_per_user``; beyond either: 429 with Retry-After, never a queued request.
"""

from __future__ import annotations

import pytest

from reposync.config import Settings
from reposync.errors import ConfigurationError
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from tests.integration.web.conftest import assert_problem, bearer, url

STREAM = {"Accept": "text/event-stream"}


@pytest.fixture
def capped(ctx: ServiceContext):
    settings = ctx.settings.with_overrides(api_max_streams=3, api_streams_per_user=2)
    app = create_app(settings, ctx=ServiceContext(settings=settings, db=ctx.db))
    app.config.update(REPOSYNC_SSE_POLL_SECONDS=0.05, REPOSYNC_SSE_MAX_SECONDS=0.3)
    return app.test_client()


def open_stream(client, token: str, run_id: int):
    return client.get(
        url(f"/runs/{run_id}/events"), headers={**bearer(token), **STREAM}, buffered=False
    )


def test_a_user_and_the_server_are_capped_and_slots_come_back(capped, tokens, queued_run):
    first = open_stream(capped, tokens.member, queued_run.id)
    second = open_stream(capped, tokens.member, queued_run.id)
    assert (first.status_code, second.status_code) == (200, 200)

    third = open_stream(capped, tokens.member, queued_run.id)
    assert_problem(third, 429, "too_many_requests")
    assert third.headers["Retry-After"] == "5"
    other_user = open_stream(capped, tokens.admin, queued_run.id)
    assert other_user.status_code == 200
    server_full = open_stream(capped, tokens.admin, queued_run.id)
    assert_problem(server_full, 429, "too_many_requests")
    # The rest of the API answers while every stream slot is taken.
    assert capped.get(url("/runs"), headers=bearer(tokens.admin)).status_code == 200

    first.close()
    again = open_stream(capped, tokens.member, queued_run.id)
    assert again.status_code == 200
    for response in (second, other_user, again):
        response.close()


def test_a_stream_that_ends_gives_its_slot_back(capped, tokens, queued_run):
    for _ in range(5):  # more than the caps: each ends (max seconds) and releases
        response = open_stream(capped, tokens.member, queued_run.id)
        assert response.status_code == 200
        response.get_data()
        response.close()


def test_stream_caps_keep_threads_for_the_rest_of_the_api():
    with pytest.raises(ConfigurationError, match="must be at least 1 and below"):
        Settings(api_threads=8, api_max_streams=8)
