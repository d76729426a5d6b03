"""A forge's API batch obeys its stage's write guard between writes.

A batch is up to 500 writes, and on GitHub each is a request that may take a second (or
wait for the content-creation limit): a cancel, or a lease the worker no longer holds,
must stop it at the next write rather than at the batch's end. What was written is read
back and linked, nothing is assumed, and the next Run writes the rest once.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from pathlib import Path
from typing import Any

from sqlalchemy import select

from reposync.models import Run
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.service.runs import request_cancel
from tests.fakes.forgejo import ForgejoFake
from tests.fakes.github import GitHubFake
from tests.forgejo_env import embedded_world as forgejo_world
from tests.forgejo_env import locator
from tests.github_env import embedded_world, github_env
from tests.gitrepo import generate, refs
from tests.integration.forges.test_forge_sync import WHEN, forge, items_of
from tests.lfsrepo import commit_lfs, stored

REPO = "acme/widgets"
ISSUES = 30


def _sync_cancelled_once(ctx: Any, request: SyncRequest, begun: Callable[[], bool]) -> Any:
    """``sync`` in a thread, cancelled (as ``runs cancel`` does) once ``begun`` says its
    writes have started; the Run it returned."""
    outcome: dict[str, Any] = {}
    syncing = threading.Thread(target=lambda: outcome.update(run=sync(ctx, request)))
    syncing.start()
    try:
        deadline = time.monotonic() + 60
        while not begun():
            assert syncing.is_alive(), outcome
            assert time.monotonic() < deadline, "the writes never started"
            time.sleep(0.05)
        with ctx.db.session() as session:
            request_cancel(ctx, session.execute(select(Run.id)).scalar_one())
    finally:
        syncing.join(timeout=120)
    assert not syncing.is_alive()
    return outcome["run"]


def _issues_to_sync(tmp_path: Path) -> tuple[Path, list[str]]:
    """A source with ``ISSUES`` issues (and one branch): the source, the titles."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    titles = [f"issue {n:02d}" for n in range(ISSUES)]
    with forge(source) as f:
        for title in titles:
            f.create_issue(title, author="ann", body="steps to reproduce", created_at=WHEN)
    return source, titles


def _issue_creates(fake: GitHubFake) -> int:
    return sum(
        1
        for r in list(fake.requests_log)
        if r.host == "api" and r.method == "POST" and r.path.endswith("/issues")
    )


def test_a_cancel_stops_a_forge_batch_at_its_next_write(tmp_path: Path, github_fake: GitHubFake):
    """Found while closing issue 26: a cancel during a batch of 30 issue creates (a second
    each) waited for the batch's end. It ends the Run ``cancelled`` at the next write; the
    issues that were created are found by their markers, completed and linked, and the
    next Run creates the others, each exactly once."""
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    source, titles = _issues_to_sync(tmp_path)
    # Each create answers after a second: the whole batch would take half a minute.
    fake.faults.add("latency", "POST", r"/issues$", host="api", count=None, seconds=1.0)
    with embedded_world(fake, tmp_path) as (ctx, _):
        request = SyncRequest(f"local:{source}", f"github:{REPO}")
        run = _sync_cancelled_once(ctx, request, lambda: _issue_creates(fake) >= 2)
        assert run.status == "cancelled"
        sent = _issue_creates(fake)
        assert sent < ISSUES, "the batch ran to its end after the cancel"
        on_github = fake.state.issues(REPO)
        completed = [
            i for i in items_of(ctx, run.id) if i.object_type == "issue" and i.state == "completed"
        ]
        assert len(on_github) == len(completed) == sent  # each write read back, none assumed

        fake.faults.clear()
        again = sync(ctx, request)
        assert again.status == "completed", again.report["problems"]
        assert sorted(issue.title for issue in fake.state.issues(REPO)) == titles
        assert again.counters["created"] == ISSUES - sent


def test_a_worker_frozen_mid_batch_writes_nothing_once_continued(
    tmp_path: Path, github_fake: GitHubFake, data_dir: Path
):
    """Found while closing issue 26: a ``reposync sync`` stopped (SIGSTOP) in the middle
    of a batch of issue creates past its lease, while a second ``reposync sync`` takes
    the Run over and finishes it, went on with its batch once continued and created
    issues a second time. Now its next write finds the lease gone: it sends nothing,
    and GitHub holds each issue once."""
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    source, titles = _issues_to_sync(tmp_path)
    # The third create is performed, then its answer held back for 3 s: the freeze lands
    # while it is in GitHub's hands (test_remote_faults says which moment no forge fences).
    held = fake.faults.add("timeout", "POST", r"/issues$", host="api", seconds=3.0, after=2)
    fake.faults.add("latency", "POST", r"/issues$", host="api", count=None, seconds=0.5)
    env = {
        **os.environ,
        **github_env(fake, fake.add_token("acme")),
        "REPOSYNC_GITHUB_WRITE_INTERVAL": "0",
        "REPOSYNC_LEASE_TTL": "3",
    }
    argv = [sys.executable, "-m", "reposync", "sync", f"local:{source}", f"github:{REPO}"]
    frozen = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not held.hits:
            assert frozen.poll() is None, frozen.communicate()
            assert time.monotonic() < deadline, "the batch never started"
            time.sleep(0.05)
        frozen.send_signal(signal.SIGSTOP)
        sent_before = _issue_creates(fake)
        wait_for_the_lease_to_expire(data_dir / "reposync.db")

        taker = take_over(argv, env, frozen)
        assert taker.returncode == 0, taker.stderr
        assert sorted(issue.title for issue in fake.state.issues(REPO)) == titles
        taken_over = _issue_creates(fake)

        frozen.send_signal(signal.SIGCONT)
        frozen.communicate(timeout=60)
    finally:
        if frozen.poll() is None:
            frozen.send_signal(signal.SIGCONT)
            frozen.kill()
            frozen.communicate()
    assert sent_before < ISSUES
    assert _issue_creates(fake) == taken_over, "the continued worker wrote after its lease"
    assert sorted(issue.title for issue in fake.state.issues(REPO)) == titles


def take_over(
    argv: list[str], env: dict[str, str], frozen: subprocess.Popen[bytes]
) -> subprocess.CompletedProcess[str]:
    """A second ``reposync sync`` of the pair while ``frozen`` is stopped.

    Frozen inside a transaction of the embedded SQLite database (its heartbeat renewing
    the lease, say), the stopped process holds the write lock: nobody can take over (a
    clear ``database_unavailable``, nothing written) until it is continued and ends by
    itself, its lease gone; then the second sync runs again.
    """
    taker = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    if taker.returncode != 0 and "[database_unavailable]" in taker.stderr:
        frozen.send_signal(signal.SIGCONT)
        frozen.communicate(timeout=60)
        taker = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    return taker


def wait_for_the_lease_to_expire(database: Path) -> None:
    """Until the Binding's lease has run out (reading the file the stopped process left
    in WAL mode): then a takeover may claim it."""
    deadline = time.monotonic() + 60
    while True:
        with sqlite3.connect(database) as connection:
            (expires,) = connection.execute("SELECT lease_expires_at FROM bindings").fetchone()
        if expires is not None and datetime.fromisoformat(expires).replace(
            tzinfo=UTC
        ) < datetime.now(UTC) - timedelta(seconds=0.5):
            return
        assert time.monotonic() < deadline, "the frozen worker's lease never ran out"
        time.sleep(0.2)


def test_a_cancel_stops_lfs_uploads_before_the_next_object(tmp_path: Path, github_fake: GitHubFake):
    """Found while closing issue 26: a cancel while a batch's LFS objects go up (twelve
    uploads, a second each) waited for every one of them. It stops the uploads at the
    next object; no ref is pushed (its objects are not all there), the Run ends
    ``cancelled``, and the next Run uploads the rest and pushes."""
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    files = {f"model-{n:02d}.bin": f"weights {n} ".encode() * 500 for n in range(12)}
    commit_lfs(source, "refs/heads/main", files)
    fake.faults.add("latency", "PUT", r"^/_lfs/", count=None, seconds=1.0)
    with embedded_world(fake, tmp_path) as (ctx, _):
        request = SyncRequest(f"local:{source}", f"github:{REPO}")
        run = _sync_cancelled_once(ctx, request, lambda: _lfs_uploads(fake) >= 2)
        assert run.status == "cancelled"
        assert _lfs_uploads(fake) < len(files), "every upload ran after the cancel"
        assert refs(Path(fake.state.git_dir(REPO))) == {}

        fake.faults.clear()
        again = sync(ctx, request)
        assert again.status == "completed", again.report["problems"]
        assert fake.lfs.objects(REPO) == stored(source)


def _release_with_a_big_asset(tmp_path: Path) -> tuple[Path, bytes]:
    """A source whose release ``v1`` has one asset far larger than a socket's buffers."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=1)
    content = os.urandom(48 * 1024 * 1024)
    with forge(source) as f:
        release = f.create_release("v1", author="ann", created_at=WHEN, published_at=WHEN)
        f.upload_asset(release, "big.bin", content)
    return source, content


def test_a_cancel_stops_a_release_asset_upload_mid_stream(tmp_path: Path, github_fake: GitHubFake):
    """Found while closing issue 26: a cancel during the upload of a large release asset
    waited for the upload's end (a 2 GiB asset: minutes). The body is read under the
    write guard: the upload stops unfinished, GitHub keeps nothing of it, the Run ends
    ``cancelled``, and the next Run uploads the asset once."""
    fake = github_fake
    fake.state.create_repo(REPO, private=True)
    source, content = _release_with_a_big_asset(tmp_path)
    # The upload host reads nothing of the body for 3 s: the client is mid-stream.
    held = fake.faults.add(
        "latency", "POST", r"/releases/\d+/assets$", host="uploads", count=1, seconds=3.0
    )
    with embedded_world(fake, tmp_path) as (ctx, _):
        request = SyncRequest(f"local:{source}", f"github:{REPO}")
        run = _sync_cancelled_once(ctx, request, lambda: held.hits >= 1)
        assert run.status == "cancelled"
        [on_github] = fake.state.releases(REPO)
        assert fake.state.assets(REPO, on_github.id) == [], "the upload ran to its end"

        again = sync(ctx, request)
        assert again.status == "completed", again.report["problems"]
        [asset] = fake.state.assets(REPO, on_github.id)
        assert (asset.name, asset.digest) == ("big.bin", f"sha256:{sha256(content).hexdigest()}")


def test_a_cancel_stops_an_attachment_upload_to_forgejo_mid_stream(tmp_path: Path):
    """The same on Forgejo, which keeps two attachments of one name (its API refuses no
    second one): an upload that ran on after a cancel, or after another process took the
    Run over, could leave the release two copies. It stops unfinished; the next Run
    uploads the attachment once."""
    with ForgejoFake() as fake:
        repo = fake.state.create_repo(REPO, private=True)
        source, content = _release_with_a_big_asset(tmp_path)
        held = fake.faults.add(
            "latency", "POST", r"/releases/\d+/assets$", host="api", count=1, seconds=3.0
        )
        with forgejo_world(fake, tmp_path) as ctx:
            request = SyncRequest(f"local:{source}", f"forgejo:{locator(fake, REPO)}")
            run = _sync_cancelled_once(ctx, request, lambda: held.hits >= 1)
            assert run.status == "cancelled"
            assert repo.attachments == {}, "the upload ran to its end"

            again = sync(ctx, request)
            assert again.status == "completed", again.report["problems"]
            [attachment] = repo.attachments.values()
            assert (attachment.name, attachment.path.read_bytes()) == ("big.bin", content)
        fake.assert_clean(requests_too=True)


def _lfs_uploads(fake: GitHubFake) -> int:
    return sum(1 for r in list(fake.requests_log) if r.method == "PUT" and "/_lfs/" in r.path)
