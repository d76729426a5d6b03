"""Benchmark: the server's render time of the page's Overview for 500 and 2,000 Bindings
(issue 25: "a page with 500 Bindings renders in under a second").

Bindings in every state with a history of Runs and full-size reports
(``tests/many_bindings.py``) are written straight into a fresh database; the app renders
``GET /`` (the whole page: every statement, every row, the template) in this process
through Flask's test client, a few times after one warm-up, and the median is printed
with the API's ``GET /overview`` for the same Bindings (issue 26: it no longer reads the
reports). The tests check the statement count is the same for 50 and 500 Bindings; how
fast that is belongs here, never in a test.

    python bench/page_overview.py                    # SQLite (the embedded default)
    python bench/page_overview.py --postgres         # PostgreSQL (the distributed mode)
    python bench/page_overview.py --sizes 500 2000 5000 --rounds 9
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flask.testing import FlaskClient  # noqa: E402

from reposync.config import Settings  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.service.accounts.users import create_user, issue_token  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.web.app import API_PREFIX, create_app  # noqa: E402
from tests.many_bindings import seed  # noqa: E402
from tests.servers import PostgresServer  # noqa: E402

#: The bar of issue 25, for 500 Bindings.
TARGET_SECONDS = 1.0


def timed(call: Callable[[], int], rounds: int) -> float:
    """Median seconds of ``call`` (which returns an HTTP status) after one warm-up."""
    if call() != 200:
        raise SystemExit("the page did not answer 200")
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        status = call()
        samples.append(time.perf_counter() - started)
        if status != 200:
            raise SystemExit(f"the page answered {status}")
    return statistics.median(samples)


def sign_in(client: FlaskClient, token: str) -> None:
    import re

    form = client.get("/signin").get_data(as_text=True)
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', form)
    assert found, "no CSRF token on the sign-in form"
    response = client.post("/signin", data={"token": token, "csrf": found.group(1)})
    assert response.status_code == 302, response.get_data(as_text=True)


def measure(ctx: ServiceContext, sizes: list[int], rounds: int) -> list[tuple[int, float, float]]:
    ctx.db.upgrade()
    token = issue_token(ctx, create_user(ctx, "bench", role="admin").id)
    app = create_app(ctx.settings, ctx=ctx)
    page, api = app.test_client(), app.test_client()
    sign_in(page, token)
    headers = {"Authorization": f"Bearer {token}"}
    results = []
    seeded = 0
    for size in sizes:
        seed(ctx, size - seeded)
        seeded = size
        html = page.get("/").get_data(as_text=True)
        rows = html.count('<tr id="binding-')
        if rows != size:
            raise SystemExit(f"the Overview shows {rows} rows for {size} Bindings")
        page_seconds = timed(lambda: page.get("/").status_code, rounds)
        api_seconds = timed(
            lambda: api.get(f"{API_PREFIX}/overview", headers=headers).status_code, rounds
        )
        results.append((size, page_seconds, api_seconds))
        print(
            f"{size:>6} Bindings: page GET / {page_seconds * 1000:7.1f} ms"
            f" ({len(html) / 1024:,.0f} KiB) · API GET /overview {api_seconds * 1000:7.1f} ms",
            flush=True,
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL, not SQLite")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reposync-bench-page-"))
    postgres = PostgresServer.start() if args.postgres else None
    try:
        if postgres is not None:
            postgres.admin("CREATE DATABASE bench_page")
        database_url = (
            postgres.database_url("bench_page")
            if postgres
            else f"sqlite:///{work / 'data' / 'reposync.db'}"
        )
        settings = Settings(data_dir=work / "data", database_url=database_url)
        db = Database(database_url)
        try:
            print(f"database: {db.dialect_name}; median of {args.rounds} after a warm-up")
            results = measure(
                ServiceContext(settings=settings, db=db), sorted(args.sizes), args.rounds
            )
        finally:
            db.dispose()
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(work, ignore_errors=True)
    for size, seconds, _ in results:
        if size == 500:
            verdict = "meets" if seconds < TARGET_SECONDS else "MISSES"
            print(f"500 Bindings: {seconds:.3f} s ({verdict} the bar of {TARGET_SECONDS:.0f} s)")


if __name__ == "__main__":
    main()
