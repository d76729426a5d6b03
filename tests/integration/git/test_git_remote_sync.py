"""A plain Git remote (``git:URL``) end to end, against real servers the tests start:
``git http-backend`` with an LFS server behind HTTP Basic auth, and OpenSSH's ``sshd``
with ``git-lfs-authenticate`` (``tests/fakes/gitserver/plain.py``).

Both ways (a local forge to the remote, the remote to a local forge), over HTTP, SSH
(``ssh://`` and scp-like) and ``file://``: refs and LFS objects arrive, the remote's
``HEAD`` becomes the local default branch, the source's forge objects are counted as
unsupported by the target in every Run's report (never silently dropped), and a second
Run with no change pushes and uploads nothing. Credentials come from git's credential
helper (a test ``HOME``) and ``GIT_SSH_COMMAND``; they never reach the database.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from reposync.cli import main
from reposync.models import RunItem
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from reposync.sync.vocabulary import ObjectType
from tests.fakes.gitserver.plain import GitHttpServer, SshServer, client_home
from tests.fakes.gitserver.silent_link import SilentLink
from tests.gitrepo import commit_on, generate, refs
from tests.integration.conftest import event_messages
from tests.integration.forges.test_forge_sync import populate
from tests.lfsrepo import commit_lfs, git_lfs, stored

BIG = b"a large binary model\n" * 300
T = ObjectType


@pytest.fixture
def ssh_server(
    tmp_path: Path, git_server: GitHttpServer, git_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SshServer]:
    """sshd serving the HTTP server's repositories; ``git-lfs-authenticate`` names its
    LFS endpoints. The process's ``GIT_SSH_COMMAND`` carries the test's key."""
    server = SshServer(
        git_server.root,
        tmp_path / "sshd",
        lfs_base=git_server.base_url,
        lfs_token=git_server.lfs_token,
    )
    monkeypatch.setenv("GIT_SSH_COMMAND", server.ssh_command)
    yield server
    server.close()


def bare(server: GitHttpServer, name: str) -> Path:
    """An empty repository on the server, its ``HEAD`` naming ``main`` (``git init``)."""
    path = server.repository(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


def local_source(tmp_path: Path, *, forge_objects: bool = True) -> Path:
    """A local forge: branches, tags, an LFS object on ``main``, ``HEAD`` on ``main``,
    and (with ``forge_objects``) one of every forge object."""
    source = generate(tmp_path / "a.git", commits=4, branches=2, tags=2)
    commit_lfs(source, "refs/heads/main", {"model.bin": BIG})
    subprocess.run(
        ["git", "--git-dir", str(source), "symbolic-ref", "HEAD", "refs/heads/main"], check=True
    )
    if forge_objects:
        populate(source)
    return source


def listing(path: Path) -> dict[str, str]:
    """The refs and default branch a local forge lists (what a Run syncs of it)."""
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        entries = provider.inventory_index([T.GIT_REF, T.DEFAULT_BRANCH]).entries
        return {e.identity: e.revision for e in entries}
    finally:
        provider.close()


def forge_counts(path: Path) -> dict[str, int]:
    """How many objects of each type other than Git data a local forge holds."""
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    try:
        kinds = [t for t in ObjectType if t not in (T.GIT_REF, T.WIKI_REF, T.DEFAULT_BRANCH)]
        counts: dict[str, int] = {}
        for entry in provider.inventory_index(kinds).entries:
            counts[entry.object_type.value] = counts.get(entry.object_type.value, 0) + 1
        return counts
    finally:
        provider.close()


def unheld(run: Any) -> dict[str, int]:
    """The report's counts of source objects the target cannot hold, by type."""
    return {
        p["object_type"]: p["count"]
        for p in run.report["problems"]
        if p["error_code"] == "unsupported_object_type"
    }


def failures(run: Any) -> list[dict[str, Any]]:
    return [p for p in run.report["problems"] if p["category"] not in ("data_gap", "preserved")]


def items(ctx: Any, run_id: int) -> dict[str, RunItem]:
    with ctx.db.session() as session:
        rows = session.execute(select(RunItem).where(RunItem.run_id == run_id)).scalars()
        return {str(r.source_identity): r for r in rows}


def seed_with_git_lfs(url: str, work: Path, home: Path) -> dict[str, bytes]:
    """Push a branch and a tag with an LFS-tracked file to ``url`` with the real git and
    git-lfs clients (credentials from ``home``'s helper): the server's LFS API is what
    git-lfs itself uploads through."""
    env = {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    work.mkdir(parents=True)
    git_lfs(work, "init", "-q", "-b", "main", env=env)
    git_lfs(work, "lfs", "install", "--local", env=env)
    git_lfs(work, "lfs", "track", "*.bin", env=env)
    content = {"weights.bin": b"weights " * 700, "data.bin": b"data " * 900}
    for name, data in content.items():
        (work / name).write_bytes(data)
    (work / "README").write_text("plain text\n")
    git_lfs(work, "add", ".", env=env)
    git_lfs(work, "commit", "-q", "-m", "LFS files", env=env)
    git_lfs(work, "tag", "v1", env=env)
    git_lfs(work, "push", "-q", url, "main", "v1", env=env)
    return content


# -- HTTP ----------------------------------------------------------------------------------


def assert_mirrored(run: Any, local: Path, remote: Path, content: dict[str, bytes]) -> None:
    """A Run from a remote seeded by ``seed_with_git_lfs`` left its refs, its LFS objects
    and its HEAD as the default branch in the local forge ``local``."""
    assert run.status == "completed", run.report["problems"]
    assert refs(local) == refs(remote)
    assert sorted(stored(local).values()) == sorted(content.values())
    assert listing(local)["HEAD"] == "main"


def test_a_local_forge_mirrors_to_an_http_remote_and_a_rerun_pushes_nothing(
    ctx, tmp_path, git_server, git_home
):
    """Refs and the LFS object reach the remote (credentials from git's helper); every
    forge object and the default branch are reported unsupported by count, in each Run;
    the second Run pushes nothing and uploads nothing."""
    source = local_source(tmp_path)
    target = bare(git_server, "acme/app.git")
    request = SyncRequest(f"local:{source}", "git:" + git_server.url("acme/app.git"))

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    expected = listing(source)
    assert refs(target) == {k: v for k, v in expected.items() if k.startswith("refs/")}
    assert stored(target) == stored(source)
    assert unheld(first) == {**forge_counts(source), "default_branch": 1}
    assert not failures(first)
    pushes = len(git_server.pushes())
    assert pushes >= 1
    seen = len(git_server.requests)

    second = sync(ctx, request)

    assert second.status == "completed", second.report["problems"]
    assert len(git_server.pushes()) == pushes
    assert "git" not in second.report["io"]
    assert not [r for r in git_server.requests[seen:] if r.service == "lfs"]
    assert unheld(second) == unheld(first)  # said again, never dropped
    assert refs(target) == {k: v for k, v in expected.items() if k.startswith("refs/")}


def test_an_http_remote_syncs_to_a_local_forge_with_lfs_and_its_head(
    ctx, tmp_path, git_server, git_home
):
    """What git and git-lfs pushed to the remote arrives whole: refs, the LFS objects, and
    HEAD as the default branch. A second Run fetches nothing; a new commit moves alone."""
    target_repo = bare(git_server, "acme/data.git")
    content = seed_with_git_lfs(git_server.url("acme/data.git"), tmp_path / "work", git_home)
    local = tmp_path / "b.git"
    request = SyncRequest("git:" + git_server.url("acme/data.git"), f"local:{local}")

    first = sync(ctx, request)

    assert_mirrored(first, local, target_repo, content)

    second = sync(ctx, request)
    assert second.status == "completed", second.report["problems"]
    assert "git" not in second.report["io"]
    assert "lfs" not in second.report["io"]

    work = tmp_path / "work"
    env = {"HOME": str(git_home), "GIT_CONFIG_NOSYSTEM": "1"}
    (work / "more.bin").write_bytes(b"more " * 500)
    git_lfs(work, "add", "more.bin", env=env)
    git_lfs(work, "commit", "-q", "-m", "more", env=env)
    git_lfs(work, "push", "-q", git_server.url("acme/data.git"), "main", env=env)

    third = sync(ctx, request)
    assert third.status == "completed", third.report["problems"]
    assert third.counters["updated"] == 1
    assert refs(local) == refs(target_repo)
    assert b"more " * 500 in stored(local).values()


def test_refs_that_need_lfs_stay_out_of_a_remote_that_serves_no_lfs(
    ctx, tmp_path, git_server, git_home
):
    """A bare git http-backend (no LFS API): the branch whose history has an LFS pointer
    fails lfs_not_served and is not pushed; every other ref is."""
    git_server.lfs.enabled = False
    source = generate(tmp_path / "a.git", commits=3, branches=1, tags=1)
    commit_lfs(source, "refs/heads/assets", {"model.bin": BIG})
    target = bare(git_server, "acme/plain.git")

    run = sync(ctx, SyncRequest(f"local:{source}", "git:" + git_server.url("acme/plain.git")))

    by_ref = items(ctx, run.id)
    assert by_ref["refs/heads/assets"].error_code == "lfs_not_served"
    assert "refs/heads/assets" not in refs(target)
    pushed = {k: v for k, v in refs(source).items() if k != "refs/heads/assets"}
    assert refs(target) == pushed
    assert any(p["error_code"] == "lfs_not_served" for p in run.report["problems"])


def test_credentials_that_may_only_read_are_refused_before_a_push_and_never_stored(
    ctx, tmp_path, git_server, monkeypatch, caplog
):
    """A reader's credentials (from the helper) list the remote but cannot push: the Run
    stops at its access check with permission_denied; no password is in the database,
    the report or the log."""
    home = client_home(tmp_path / "reader", [f"http://bob:bob-secret@127.0.0.1:{git_server.port}"])
    monkeypatch.setenv("HOME", str(home))
    source = local_source(tmp_path, forge_objects=False)
    target = bare(git_server, "acme/guarded.git")
    caplog.set_level("DEBUG")

    run = sync(ctx, SyncRequest(f"local:{source}", "git:" + git_server.url("acme/guarded.git")))

    assert run.error_code == "permission_denied", run.report["problems"]
    assert refs(target) == {}
    assert not git_server.pushes()
    database = b"".join(p.read_bytes() for p in ctx.settings.data_dir.glob("reposync.db*"))
    for secret in ("bob-secret", "alice-secret"):
        assert secret.encode() not in database
        assert secret not in str(run.report)
        assert secret not in caplog.text


def test_the_command_line_syncs_to_an_http_remote_and_again_with_nothing_to_push(
    capsys, tmp_path, git_server, git_home, data_dir
):
    """``reposync sync local:A git:URL`` twice: exit 0 both times, one push in all."""
    source = local_source(tmp_path, forge_objects=False)
    target = bare(git_server, "acme/cli.git")
    url = "git:" + git_server.url("acme/cli.git")

    assert main(["sync", f"local:{source}", url]) == 0
    pushes = len(git_server.pushes())
    assert main(["sync", f"local:{source}", url]) == 0

    assert len(git_server.pushes()) == pushes
    assert refs(target)["refs/heads/main"] == refs(source)["refs/heads/main"]
    assert "unsupported_object_type" in capsys.readouterr().out


# -- SSH -----------------------------------------------------------------------------------


def test_a_local_forge_mirrors_over_ssh_with_lfs_and_a_rerun_pushes_nothing(
    ctx, tmp_path, git_server, ssh_server
):
    """ssh:// with GIT_SSH_COMMAND's key: refs pushed, the LFS object uploaded to where
    git-lfs-authenticate pointed; the second Run pushes and authenticates nothing."""
    source = local_source(tmp_path)
    target = bare(git_server, "acme/app.git")
    request = SyncRequest(f"local:{source}", "git:" + ssh_server.url("acme/app.git"))

    first = sync(ctx, request)

    assert first.status == "completed", first.report["problems"]
    assert refs(target) == {k: v for k, v in listing(source).items() if k.startswith("refs/")}
    assert stored(target) == stored(source)
    assert "git-lfs-authenticate upload" in ssh_server.commands()
    assert unheld(first) == {**forge_counts(source), "default_branch": 1}
    before = refs(target)
    commands = len(ssh_server.commands())

    second = sync(ctx, request)

    assert second.status == "completed", second.report["problems"]
    assert "git" not in second.report["io"]
    later = ssh_server.commands()[commands:]
    assert not [c for c in later if c.startswith("git-lfs-authenticate")]
    assert refs(target) == before


def test_an_scp_like_ssh_remote_syncs_to_a_local_forge_with_lfs(
    ctx, tmp_path, git_server, git_home, ssh_server
):
    """``user@host:path``: refs, HEAD and LFS objects (downloaded through
    git-lfs-authenticate's endpoint) arrive; a second Run fetches nothing."""
    served = bare(git_server, "acme/data.git")
    content = seed_with_git_lfs(git_server.url("acme/data.git"), tmp_path / "work", git_home)
    local = tmp_path / "b.git"
    request = SyncRequest("git:" + ssh_server.scp_url("acme/data.git"), f"local:{local}")

    first = sync(ctx, request)

    assert_mirrored(first, local, served, content)
    assert "git-lfs-authenticate download" in ssh_server.commands()

    second = sync(ctx, request)
    assert second.status == "completed", second.report["problems"]
    assert "git" not in second.report["io"]
    assert "lfs" not in second.report["io"]


def test_an_ssh_server_without_git_lfs_authenticate_serves_no_lfs(
    ctx, tmp_path, git_server, ssh_server
):
    """No git-lfs-authenticate on the server: the ref needing an LFS object fails
    lfs_not_served, the others are pushed over SSH."""
    ssh_server.lfs_base = None
    ssh_server.write_command()
    source = generate(tmp_path / "a.git", commits=3, branches=1, tags=0)
    commit_lfs(source, "refs/heads/assets", {"model.bin": BIG})
    target = bare(git_server, "acme/nolfs.git")

    run = sync(ctx, SyncRequest(f"local:{source}", "git:" + ssh_server.url("acme/nolfs.git")))

    assert items(ctx, run.id)["refs/heads/assets"].error_code == "lfs_not_served"
    assert refs(target) == {k: v for k, v in refs(source).items() if k != "refs/heads/assets"}


# -- file:// -------------------------------------------------------------------------------


def test_a_file_remote_takes_refs_and_lfs_objects_and_gives_them_back(ctx, tmp_path):
    """git:file:// as a target (created when missing, its lfs/objects written as git-lfs
    keeps them) and then as the source of another local forge: the same refs and objects."""
    source = local_source(tmp_path, forge_objects=False)
    remote = tmp_path / "mirror.git"

    out = sync(ctx, SyncRequest(f"local:{source}", f"git:file://{remote}"))
    assert out.status == "completed", out.report["problems"]
    assert refs(remote) == refs(source)
    assert stored(remote) == stored(source)

    back = tmp_path / "c.git"
    again = sync(ctx, SyncRequest(f"git:file://{remote}", f"local:{back}"))
    assert again.status == "completed", again.report["problems"]
    assert refs(back) == refs(source)
    assert stored(back) == stored(source)


def test_a_ref_locked_on_a_remote_is_pushed_again_never_failed(ctx, tmp_path):
    """A ref's lock on a plain Git remote (another git's push, or one killed: reposync
    never removes locks there). Its push is neither a conflict nor the target's refusal:
    the batch goes again after the stage's backoff; while the lock stays, the Run ends
    ``git_transport_failed`` naming it, and its ref is not failed; once the lock is gone
    the next Run lands it. Before, the ref failed ``target_refused_push``."""
    source = generate(tmp_path / "src.git", commits=5, branches=2, tags=1)
    remote = tmp_path / "mirror.git"
    request = SyncRequest(f"local:{source}", f"git:file://{remote}")
    assert sync(ctx, request).status == "completed"
    commit_on(source, "refs/heads/branch-00001", "more on the authority")
    lock = remote / "refs" / "heads" / "branch-00001.lock"
    lock.write_text("0" * 40 + "\n")
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=2)

    run = sync(ctx, request)

    assert run.status == "failed"
    codes = [p["error_code"] for p in run.report["problems"]]
    assert codes[0] == "git_transport_failed", codes
    assert "target_refused_push" not in codes
    assert (
        "locked by another git process, refs/heads/branch-00001"
        in (run.report["problems"][0]["message"])
    )
    lock.unlink()
    assert sync(ctx, request).status == "completed"
    assert refs(remote) == refs(source)


def test_an_ssh_connection_gone_silent_mid_push_is_given_up_and_pushed_again(
    ctx, tmp_path, git_server, ssh_server, monkeypatch
):
    """A connection dropped silently on the way (a NAT forgetting it) mid-push: nothing
    reaches either side and neither is told. ssh's keepalives notice within
    REPOSYNC_GIT_STALL_SECONDS, git fails, and the stage's retry pushes again over a
    new connection; the Run completes. Before, ssh waited for the server forever, and
    the Run with it (an embedded sync had no time limit at all)."""
    source = generate(tmp_path / "a.git", commits=2, branches=1, tags=0)
    commit_on(source, "refs/heads/main", "a pack well past the handshake", os.urandom(512 * 1024))
    target = bare(git_server, "acme/app.git")
    link = SilentLink(ssh_server.port, silent_after=128 * 1024)
    monkeypatch.setenv("GIT_SSH_COMMAND", ssh_server.ssh_command_through(link.port))
    request = SyncRequest(f"local:{source}", "git:" + ssh_server.scp_url("acme/app.git"))
    ctx = type(ctx)(
        settings=ctx.settings.with_overrides(git_stall_seconds=3.0, retry_backoff=0.01), db=ctx.db
    )
    runs: list[Any] = []
    syncing = threading.Thread(target=lambda: runs.append(sync(ctx, request)), daemon=True)
    try:
        syncing.start()
        syncing.join(timeout=120)
        assert not syncing.is_alive(), "the sync still waits on a silent connection"
    finally:
        link.close()  # a sync still waiting is told, so it ends with the test
        syncing.join(timeout=30)

    run = runs[0]
    assert link.silenced == 1
    assert run.status == "completed", run.report["problems"]
    assert refs(target) == {k: v for k, v in refs(source).items() if k.startswith("refs/")}
    retries = event_messages(ctx, run.id, "retry_scheduled")
    assert retries, "the silent push was never given up and tried again"
