"""``GET /metrics`` of an in-process app: the format, the optional token, the broker's
queue read at scrape time (real Redis), and an answer when Redis is down."""

from __future__ import annotations

import pytest
from celery import Celery
from prometheus_client.parser import text_string_to_metric_families

from reposync.config import Settings
from reposync.models.db import Database
from reposync.service.context import ServiceContext
from reposync.web.app import create_app
from tests.integration.web.conftest import assert_problem
from tests.servers import free_port


def scrape(client) -> dict[str, float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type.startswith("text/plain; version=")
    return {
        sample.name + str(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.get_data(as_text=True))
        for sample in family.samples
    }


def app_for(ctx: ServiceContext, **settings: object):
    return create_app(ctx.settings.with_overrides(**settings), ctx=ctx).test_client()


def test_an_in_process_app_shows_its_own_counts(ctx: ServiceContext, finished_run):
    """Not under ``reposync api``: this process's values (the embedded sync just ran)."""
    found = scrape(app_for(ctx, broker_url=f"redis://127.0.0.1:{free_port()}/0"))
    finished = [k for k in found if k.startswith("reposync_runs_finished_total")]
    assert finished
    assert all(found[k] >= 1 for k in finished)
    assert any(k.startswith("reposync_stage_duration_seconds_bucket") for k in found)


def test_redis_down_still_answers_without_queue_depth(ctx: ServiceContext):
    found = scrape(app_for(ctx, broker_url=f"redis://127.0.0.1:{free_port()}/0"))
    assert found["reposync_broker_up[]"] == 0
    assert not [
        k for k in found if k.startswith(("reposync_queue_depth", "reposync_queue_unacked"))
    ]


def test_a_broker_that_is_not_redis_shows_no_queue(ctx: ServiceContext):
    found = scrape(app_for(ctx, broker_url="memory://"))
    assert not [k for k in found if k.startswith(("reposync_broker_up", "reposync_queue_"))]


@pytest.mark.redis
def test_queue_depth_is_read_from_redis_at_scrape_time(ctx: ServiceContext, broker_url: str):
    client = app_for(ctx, broker_url=broker_url)
    before = scrape(client)
    assert before["reposync_broker_up[]"] == 1
    assert before["reposync_queue_depth[('queue', 'reposync')]"] == 0
    sender = Celery("metrics-test", broker=broker_url)
    sender.conf.task_default_queue = "reposync"
    try:
        for run_id in range(3):  # nobody consumes them
            sender.send_task("reposync.run.resume", args=[run_id, None])
    finally:
        sender.close()
    after = scrape(client)
    assert after["reposync_queue_depth[('queue', 'reposync')]"] == 3
    assert after["reposync_queue_unacked[]"] == 0


def test_a_metrics_token_is_required_once_set(ctx: ServiceContext):
    client = app_for(ctx, metrics_token="s3cret", broker_url="memory://")
    assert_problem(client.get("/metrics"), 401, "unauthenticated")
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert_problem(wrong, 401, "unauthenticated")
    right = client.get("/metrics", headers={"Authorization": "Bearer s3cret"})
    assert right.status_code == 200
    assert b"reposync_" in right.data


def test_wrong_metrics_tokens_are_throttled_with_the_api_tokens(ctx: ServiceContext):
    """A wrong /metrics token counts as a refused API token: beyond the limit that client
    gets 429 for the right token too; another client still scrapes (issue 23 #7)."""
    client = app_for(ctx, metrics_token="s3cret", broker_url="memory://")
    client.environ_base["REMOTE_ADDR"] = "198.51.100.40"
    for n in range(ctx.settings.auth_failure_limit):
        wrong = client.get("/metrics", headers={"Authorization": f"Bearer guess{n}"})
        assert_problem(wrong, 401, "unauthenticated")
    right = {"Authorization": "Bearer s3cret"}
    throttled = client.get("/metrics", headers=right)
    assert_problem(throttled, 429, "too_many_attempts")
    assert throttled.headers["Retry-After"].isdigit()
    other = client.application.test_client()
    assert other.get("/metrics", headers=right).status_code == 200


def test_the_metrics_token_is_checked_while_the_database_is_away(tmp_path):
    """/metrics keeps answering a scraper while the database is away (the throttle's
    count is skipped, the token is not)."""
    settings = Settings(data_dir=tmp_path, metrics_token="s3cret", broker_url="memory://")
    db = Database(f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    client = create_app(settings, ctx=ServiceContext(settings=settings, db=db)).test_client()
    assert client.get("/metrics", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert_problem(wrong, 401, "unauthenticated")
    db.dispose()
