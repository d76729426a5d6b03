"""``GET /metrics``: Prometheus's text format (not part of the JSON API or its OpenAPI).

What it shows (definitions in ``reposync.metrics``):

* in ``reposync api`` (multi-process mode): the sum over every process directory under
  the metrics directory: the API's gunicorn workers and every ``reposync worker`` (and
  its pool processes) sharing the data directory; otherwise this process's own values;
* read when scraped: the broker's queue depth (``reposync_queue_depth``: messages
  waiting, ``reposync_queue_unacked``: delivered and not yet acknowledged) and
  ``reposync_broker_up``. The broker is asked with a short timeout; when it does not
  answer, ``reposync_broker_up`` is 0 and the two queue gauges are absent (no sample
  rather than a stale or invented one), and ``/metrics`` still answers 200. A broker that
  is not Redis shows none of the three.

No token by default: Prometheus scrapes without credentials and the values name no
secret (accounts are GitHub installation ids or token hashes). ``REPOSYNC_METRICS_TOKEN``
makes it require ``Authorization: Bearer <token>`` (401 without); a wrong one counts
toward the client's throttle as a refused API token does (an operator's chosen secret is
the one most worth guessing). The throttle needs the database: while the database is
away the token is still checked, the count not, so a scrape keeps answering.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import redis
from flask import Flask, Response, current_app, request
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from reposync import metrics
from reposync.config import Settings
from reposync.errors import Unauthenticated
from reposync.models import db
from reposync.service.accounts.users import count_refusal, refuse_if_throttled
from reposync.tasks.settings import QUEUE
from reposync.web.auth import client_address, service_context

log = logging.getLogger(__name__)

#: Seconds the scrape waits for the broker.
BROKER_TIMEOUT = 0.5
#: kombu's Redis transport: a queue's priority lists are its name + this + the step
#: (priority 0 is the name itself), and delivered, unacknowledged messages are a hash.
PRIORITY_SEPARATOR = "\x06\x16"
PRIORITY_STEPS = (0, 3, 6, 9)
UNACKED_KEY = "unacked"
#: prometheus_client's value files start with an 8-byte header (bytes used, padding).
MMAP_HEADER_BYTES = 8


class FilesCollector(Collector):
    """prometheus_client's multi-process merge, over every process directory."""

    def __init__(self, metrics_dir: Path) -> None:
        self._dir = metrics_dir

    def collect(self) -> Iterable[Metric]:
        for _ in range(3):  # a directory emptied by a starting process mid-read
            files = [str(f) for f in self._files()]
            try:
                merged: Iterable[Metric] = MultiProcessCollector.merge(  # type: ignore[no-untyped-call]
                    files, accumulate=True
                )
                return merged
            except FileNotFoundError:
                continue
        return []

    def _files(self) -> Iterator[Path]:
        """Every process's file; one still being created (shorter than its header) is
        skipped rather than failing the scrape."""
        for directory in metrics.collect_dirs(self._dir):
            for path in directory.glob("*.db"):
                try:
                    if path.stat().st_size >= MMAP_HEADER_BYTES:
                        yield path
                except FileNotFoundError:
                    continue


class QueueCollector(Collector):
    """The broker's queue, read at scrape time; absent when Redis does not answer."""

    def __init__(self, broker_url: str) -> None:
        self._url = broker_url

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("reposync_broker_up", "1 when the broker answered this scrape.")
        try:
            client = redis.Redis.from_url(
                self._url, socket_timeout=BROKER_TIMEOUT, socket_connect_timeout=BROKER_TIMEOUT
            )
            try:
                pipe = client.pipeline(transaction=False)
                for step in PRIORITY_STEPS:
                    pipe.llen(QUEUE if step == 0 else f"{QUEUE}{PRIORITY_SEPARATOR}{step}")
                pipe.hlen(UNACKED_KEY)
                *lengths, unacked = pipe.execute()
            finally:
                client.close()
        except redis.RedisError as exc:
            log.debug("queue depth unavailable: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        depth = GaugeMetricFamily(
            "reposync_queue_depth", "Messages waiting in the broker's queue.", labels=["queue"]
        )
        depth.add_metric([QUEUE], sum(int(n) for n in lengths))
        yield depth
        in_flight = GaugeMetricFamily(
            "reposync_queue_unacked",
            "Messages delivered to a worker and not yet acknowledged (running or reserved).",
        )
        in_flight.add_metric([], int(unacked))
        yield in_flight


class Exposition(Collector):
    def __init__(self, sources: list[Collector]) -> None:
        self._sources = sources

    def collect(self) -> Iterator[Metric]:
        for source in self._sources:
            yield from source.collect()


def exposition(settings: Settings) -> Exposition:
    sources: list[Collector] = []
    if metrics.multiprocess_dir() is not None:
        sources.append(FilesCollector(settings.effective_metrics_dir))
    else:
        sources.append(REGISTRY)
    broker = settings.effective_broker_url
    # Runs executed inside the API have no broker to read a queue from.
    if not settings.runs_in_process and urlsplit(broker).scheme in ("redis", "rediss"):
        sources.append(QueueCollector(broker))
    return Exposition(sources)


def metrics_view() -> Response:
    settings: Settings = current_app.extensions["reposync.settings"]
    token = settings.metrics_token
    if token:
        client = client_address()
        _unless_database_away(lambda: refuse_if_throttled(service_context(), client))
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            _unless_database_away(lambda: count_refusal(service_context(), client))
            raise Unauthenticated("/metrics needs the bearer token of REPOSYNC_METRICS_TOKEN")
    body = generate_latest(current_app.extensions["reposync.metrics"])
    return Response(body, mimetype=None, content_type=CONTENT_TYPE_LATEST)


def _unless_database_away(step: Callable[[], None]) -> None:
    """Run a step of the throttle; skip it when the database is away (module)."""
    try:
        step()
    except Exception as exc:
        if db.unavailable(exc) is None:
            raise
        log.warning("/metrics: the throttle is skipped, the database is away: %s", db.reason(exc))


def register(app: Flask, settings: Settings) -> None:
    app.extensions["reposync.metrics"] = exposition(settings)
    app.add_url_rule("/metrics", "metrics", metrics_view, methods=["GET"])
