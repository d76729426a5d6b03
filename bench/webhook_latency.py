"""Benchmark: from a change on a forge to the standby, driven by webhooks (issues 14, 24).

The distributed mode for real: ``reposync api`` (gunicorn), two ``celery worker``s (one
with beat), PostgreSQL and Redis, started from this machine's binaries as the tests do;
the GitHub test server (``--forge github``, the default) or the Forgejo test server
(``--forge forgejo``) is the authority, a local bare repository the standby. After a
full Run, sync is enabled with no schedule, so only webhooks move the standby.

* 50 pushes (``git push`` over HTTP to the test server), one after the other: the time
  from the push having landed to the standby's ref being equal to it;
* 20 edits of an issue comment (``PATCH`` through the REST API): the time from the edit
  to the standby's comment carrying the new text.

Each change is made with the Binding at rest (no Run active or owed), so each is timed
from cold: the debounce window plus a whole checkpoint Run. (A change made while the
previous Run still finishes rides on that Run's end and is faster.)

Deliveries (``deliverer()``, the one place that chooses): by default the test server's
own hooks send them (the repository's hook points at the API: GitHub's Hookshot, or
Forgejo's hook of type ``forgejo`` signed with the instance's ``webhook_secret``), so
the time includes its delivery; ``--self-signed`` (GitHub only) has the bench build
GitHub's payload from the schema, sign it and post it the moment the change landed
instead. Prints p50/p95 (goal: p50 <= 5 s, p95 <= 10 s) with the debounce window
(REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS, default 2 s) included.

    python bench/webhook_latency.py
    python bench/webhook_latency.py --forge forgejo
    python bench/webhook_latency.py --pushes 20 --edits 10 --debounce 1 --self-signed
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reposync.lifecycle import AuditMode  # noqa: E402
from reposync.models.db import Database  # noqa: E402
from reposync.providers.local import LocalForge  # noqa: E402
from reposync.service.bindings import SyncRequest, bind, update_binding  # noqa: E402
from reposync.service.context import ServiceContext  # noqa: E402
from reposync.service.runs import enqueue_run  # noqa: E402
from reposync.sync.vocabulary import ObjectType  # noqa: E402
from tests import webhooks  # noqa: E402
from tests.fakes.forgejo import ForgejoFake  # noqa: E402
from tests.fakes.github import GitHubFake  # noqa: E402
from tests.forgejo_env import instance as forgejo_instance  # noqa: E402
from tests.forgejo_env import locator as forgejo_locator  # noqa: E402
from tests.gitrepo import refs  # noqa: E402
from tests.servers import PostgresServer, RedisServer, free_port  # noqa: E402
from tests.workers import start_api, start_worker, wait_for, worker_environment  # noqa: E402

REPO = "bench/app"
SECRET = "bench webhook secret"
WEBHOOK_PATH = "/api/ext/v1/sync/webhooks/{forge}"


class SelfSigned:
    """Posts the delivery GitHub would send, built from the schema and signed, at once."""

    name = "self-signed deliveries posted by the bench"

    def __init__(self, url: str, repository_id: int) -> None:
        self.url, self.repository_id = url, repository_id

    def pushed(self, ref: str, before: str, after: str) -> None:
        self._post("push", webhooks.push(self.repository_id, REPO, ref, before, after))

    def comment_edited(self, comment: dict[str, Any], issue_number: int) -> None:
        body = webhooks.issue_comment_edited(self.repository_id, REPO, comment["body"])
        body["comment"]["id"] = comment["id"]
        body["issue"]["number"] = issue_number
        self._post("issue_comment", body)

    def _post(self, event: str, body: dict[str, Any]) -> None:
        raw = webhooks.encode(body)
        response = requests.post(
            self.url, data=raw, headers=webhooks.headers(event, raw, SECRET), timeout=30
        )
        response.raise_for_status()


class ByTestServer:
    """The GitHub test server's own Hookshot delivers: the repository's hook points at
    the API, so a push over smart HTTP and a REST edit are delivered as GitHub does."""

    name = "the GitHub test server's own deliveries"

    def __init__(self, fake: GitHubFake, url: str) -> None:
        fake.add_webhook(REPO, url, SECRET, events=["push", "issue_comment"])
        (ping,) = fake.webhooks.flush()
        if ping.status_code != 200:
            raise RuntimeError(f"the API answered the hook's ping with {ping.status_code}")

    def pushed(self, ref: str, before: str, after: str) -> None:
        return None  # delivered by the test server

    def comment_edited(self, comment: dict[str, Any], issue_number: int) -> None:
        return None


class ByForgejoTestServer:
    """The Forgejo test server's own hook delivers (type ``forgejo``, JSON, signed with
    the instance's ``webhook_secret``): a push over smart HTTP and a REST edit are
    delivered as Forgejo does. Forgejo sends no ping: the first push's delivery is
    checked instead."""

    name = "the Forgejo test server's own hook"

    def __init__(self, fake: ForgejoFake, url: str) -> None:
        self.fake = fake
        fake.add_webhook(REPO, url, SECRET, events=["push", "issue_comment"])

    def pushed(self, ref: str, before: str, after: str) -> None:
        return None

    def comment_edited(self, comment: dict[str, Any], issue_number: int) -> None:
        return None

    def check(self) -> None:
        refused = [d for d in self.fake.webhook_deliveries if d.status_code not in (200, 202)]
        if refused:
            raise RuntimeError(f"the API answered a delivery {refused[0].status_code}")


Deliverer = SelfSigned | ByTestServer | ByForgejoTestServer


def deliverer(authority: Authority, url: str, *, self_signed: bool) -> Deliverer:
    """How changes reach the API as webhooks: the one place that chooses."""
    if isinstance(authority.fake, ForgejoFake):
        if self_signed:
            raise SystemExit("--self-signed builds GitHub's deliveries: use it with --forge github")
        return ByForgejoTestServer(authority.fake, url)
    if self_signed:
        return SelfSigned(url, authority.repository_id)
    return ByTestServer(authority.fake, url)


@dataclass
class Authority:
    """The forge under test, as the bench uses it: its settings for reposync, the
    repository's locator, a Git remote to push to, and its comment's REST edit."""

    fake: Any
    repository_id: int
    env: dict[str, str]
    locator: str
    remote: str
    comment_url: str
    comment_id: int
    issue_number: int
    session: Any


@contextlib.contextmanager
def github_authority() -> Iterator[Authority]:
    with GitHubFake(validate_responses=False, validate_requests=False) as fake:
        repo = fake.state.create_repo(REPO, private=True, auto_init=True)
        token = fake.add_token("bench")
        issue = fake.state.add_issue(REPO, "Latency", body="measured")
        comment = fake.state.add_comment(REPO, issue.number, "version 0")
        env = {
            "REPOSYNC_GITHUB_API_URL": fake.api_url,
            "REPOSYNC_GITHUB_UPLOADS_URL": fake.uploads_url,
            "REPOSYNC_GITHUB_GIT_URL": fake.git_url,
            "REPOSYNC_GITHUB_TOKEN": token,
            "REPOSYNC_GITHUB_WRITE_INTERVAL": "0",
            "REPOSYNC_GITHUB_WEBHOOK_SECRET": SECRET,
        }
        session = fake.session(token)
        yield Authority(
            fake,
            repo.id,
            env,
            f"github:{REPO}",
            fake.git_remote(REPO, token),
            f"{fake.api_url}/repos/{REPO}/issues/comments/{comment.id}",
            comment.id,
            issue.number,
            session,
        )
        session.close()


@contextlib.contextmanager
def forgejo_authority() -> Iterator[Authority]:
    with ForgejoFake(validate_responses=False, validate_requests=False) as fake:
        repo = fake.state.create_repo(REPO, private=True, auto_init=True)
        token = fake.add_token("bench")
        issue = fake.state.create_issue(REPO, "Latency", author="bench", body="measured")
        comment = fake.state.create_comment(REPO, issue.index, "version 0", author="bench")
        configured = forgejo_instance(fake, token)
        instances = {
            configured.name: {"url": configured.url, "token": token, "webhook_secret": SECRET}
        }
        session = fake.session(token)
        yield Authority(
            fake,
            repo.id,
            {"REPOSYNC_FORGEJO_INSTANCES": json.dumps(instances)},
            f"forgejo:{forgejo_locator(fake, REPO)}",
            fake.git_remote(REPO, token),
            f"{fake.api_url}/repos/{REPO}/issues/comments/{comment.id}",
            comment.id,
            issue.index,
            session,
        )
        session.close()


AUTHORITIES: dict[str, Callable[[], contextlib.AbstractContextManager[Authority]]] = {
    "github": github_authority,
    "forgejo": forgejo_authority,
}


def summary(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    return statistics.median(ordered), p95


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forge", choices=sorted(AUTHORITIES), default="github")
    parser.add_argument("--pushes", type=int, default=50)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--debounce", type=float, default=2.0, help="seconds (the default)")
    parser.add_argument(
        "--self-signed",
        action="store_true",
        help="post GitHub's deliveries from the bench instead of the test server's Hookshot",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="reposync-webhook-bench-"))
    postgres, redis_server = PostgresServer.start(), RedisServer.start()
    processes = []
    try:
        postgres.admin("CREATE DATABASE bench")
        database_url = postgres.database_url("bench")
        db = Database(database_url)
        db.upgrade()
        with AUTHORITIES[args.forge]() as authority:
            env = worker_environment(
                database_url,
                redis_server.url + "/0",
                work / "data",
                **authority.env,
                REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS=str(args.debounce),
                # Production timings, not the tests' shrunk ones (a 3 s lease and a 1 s
                # tick would flatter nothing here, but they are not what runs).
                REPOSYNC_LEASE_TTL="120",
                REPOSYNC_TICK_INTERVAL="15",
            )
            from celery import Celery

            from reposync.config import Settings
            from reposync.tasks.base import CeleryDispatcher

            settings = Settings.from_env(env)
            sender = Celery("reposync-bench", broker=settings.broker_url)
            sender.conf.task_default_queue = "reposync"
            ctx = ServiceContext(settings=settings, db=db, dispatcher=CeleryDispatcher(sender))
            standby = work / "standby.git"
            binding = bind(ctx, SyncRequest(authority.locator, f"local:{standby}"))
            processes.append(start_worker(env, work, "w1", beat=True))
            processes.append(start_worker(env, work, "w2"))
            port = free_port()
            processes.append(start_api(env, work, port))
            full = enqueue_run(ctx, binding.id, audit_mode=AuditMode.FULL)
            wait_for(lambda: _status(ctx, full.id) == "completed", 300, "the full Run")
            update_binding(ctx, binding.id, sync_enabled=True)
            path = WEBHOOK_PATH.format(forge=args.forge)
            send = deliverer(
                authority, f"http://127.0.0.1:{port}{path}", self_signed=args.self_signed
            )

            clone = work / "clone"
            subprocess.run(["git", "clone", "-q", authority.remote, str(clone)], check=True)
            push_seconds = []
            for n in range(args.pushes):
                (clone / "change.txt").write_text(f"change {n}\n")
                git("add", "change.txt", cwd=clone)
                git("-c", "user.name=B", "-c", "user.email=b@e", "commit", "-qm", f"{n}", cwd=clone)
                before = git("rev-parse", "HEAD~1", cwd=clone)
                after = git("rev-parse", "HEAD", cwd=clone)
                git("push", "-q", "origin", "HEAD:main", cwd=clone)
                landed = time.perf_counter()
                send.pushed("refs/heads/main", before, after)
                wait_for(
                    lambda after=after: refs(standby).get("refs/heads/main") == after,
                    120,
                    f"push {n} on the standby",
                    interval=0.02,
                )
                push_seconds.append(time.perf_counter() - landed)
                print(f"push {n + 1}/{args.pushes}: {push_seconds[-1]:.2f} s", flush=True)
                _settle(ctx, binding.id)

            standby_forge = LocalForge(standby)
            edit_seconds = []
            for n in range(args.edits):
                text = f"version {n + 1}"
                response = authority.session.patch(
                    authority.comment_url, json={"body": text}, timeout=30
                )
                response.raise_for_status()
                landed = time.perf_counter()
                send.comment_edited(response.json(), authority.issue_number)
                wait_for(
                    lambda text=text: _has_comment(standby_forge, text),
                    120,
                    f"edit {n} on the standby",
                    interval=0.02,
                )
                edit_seconds.append(time.perf_counter() - landed)
                print(f"edit {n + 1}/{args.edits}: {edit_seconds[-1]:.2f} s", flush=True)
                _settle(ctx, binding.id)
            standby_forge.close()
            if isinstance(send, ByForgejoTestServer):
                send.check()

        print()
        print(
            f"deliveries: {send.name}; debounce {args.debounce:g} s; 2 workers, beat, "
            f"gunicorn API, PostgreSQL, Redis; {args.forge} test server -> local standby"
        )
        for label, seconds in (
            ("push -> standby ref", push_seconds),
            ("comment edit -> standby", edit_seconds),
        ):
            p50, p95 = summary(seconds)
            print(
                f"{label:26} n={len(seconds):3}  p50 {p50:5.2f} s  p95 {p95:5.2f} s  "
                f"(goal p50 <= 5 s, p95 <= 10 s: {'met' if p50 <= 5 and p95 <= 10 else 'MISSED'})"
            )
        db.dispose()
    finally:
        for process in processes:
            process.stop()
        redis_server.stop()
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _status(ctx: ServiceContext, run_id: int) -> str:
    from reposync.models import Run

    with ctx.db.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        if run.status not in ("queued", "running", "completed"):
            raise RuntimeError(f"run {run_id} ended {run.status}: {json.dumps(run.report)[:500]}")
        return run.status


def _settle(ctx: ServiceContext, binding_id: int) -> None:
    """Wait until the Binding is at rest (no active Run, no Run owed), so every change is
    measured from cold: its debounce window and a whole Run. A change made while the
    previous Run still verifies or finalizes would ride on it (a Run owed to an active
    one starts the moment it ends) and look faster than the worst case."""
    from sqlalchemy import select

    from reposync.models import Binding, Run

    def at_rest() -> bool:
        with ctx.db.session() as session:
            due = session.execute(
                select(Binding.event_run_due_at).where(Binding.id == binding_id)
            ).scalar_one()
            active = session.execute(
                select(Run.id).where(
                    Run.binding_id == binding_id, Run.status.in_(["queued", "running"])
                )
            ).first()
        return due is None and active is None

    wait_for(at_rest, 120, "the Binding to come to rest", interval=0.02)


def _has_comment(forge: LocalForge, text: str) -> bool:
    return any(
        obj.payload.get("body") == text for obj in forge.reader.objects_of(ObjectType.ISSUE_COMMENT)
    )


if __name__ == "__main__":
    sys.exit(main())
