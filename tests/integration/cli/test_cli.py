"""The command line: bad input is refused with one line, exit status 2, nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reposync.cli import main
from tests.github_env import github_env
from tests.gitrepo import generate, init_bare, refs, set_ref
from tests.servers import free_port


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return generate(tmp_path / "src.git", commits=4, branches=2, tags=1)


def repo_config(path: Path) -> str:
    return (path / "config").read_text()


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_refused(status: int, err: str, *fragments: str) -> None:
    assert status == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0]


def nothing_written(data_dir: Path, *paths: Path) -> bool:
    no_bindings = not (data_dir / "reposync.db").exists() or _count_bindings(data_dir) == 0
    return no_bindings and not any(path.exists() for path in paths)


def _count_bindings(data_dir: Path) -> int:
    import sqlite3

    with sqlite3.connect(data_dir / "reposync.db") as conn:
        try:
            return conn.execute("SELECT count(*) FROM bindings").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_unknown_provider_prefix(capsys, tmp_path, data_dir, source):
    """``nope:`` is not a provider: exit 2, the known providers named, nothing written."""
    target = tmp_path / "dst.git"
    status, _, err = run_cli(capsys, "sync", "nope:/x", f"local:{target}")
    assert_refused(
        status,
        err,
        "unknown provider 'nope'",
        "known providers: forgejo, git, gitea, github, local",
        "[invalid_locator]",
    )
    assert nothing_written(data_dir, target)


def test_locator_without_a_provider(capsys, tmp_path, data_dir, source):
    """A bare path is not a locator: the expected form is shown."""
    target = tmp_path / "dst.git"
    status, _, err = run_cli(capsys, "sync", str(source), f"local:{target}")
    assert_refused(status, err, "is not a locator", "PROVIDER:LOCATION")
    assert nothing_written(data_dir, target)


def test_missing_source(capsys, tmp_path, data_dir):
    """A source that does not exist is named in the error; the target is not created."""
    target = tmp_path / "dst.git"
    missing = tmp_path / "missing.git"
    status, _, err = run_cli(capsys, "sync", f"local:{missing}", f"local:{target}")
    assert_refused(status, err, f"source local:{missing} does not exist", "[repository_not_found]")
    assert nothing_written(data_dir, target)


def test_unreachable_database(capsys, tmp_path, data_dir, source, monkeypatch):
    """A database nobody listens on: named (without password), exit 2, nothing written."""
    url = f"postgresql://reposync:secret@127.0.0.1:{free_port()}/reposync"
    monkeypatch.setenv("REPOSYNC_DATABASE_URL", url)
    target = tmp_path / "dst.git"
    config_before = repo_config(source)
    status, _, err = run_cli(capsys, "sync", f"local:{source}", f"local:{target}")
    assert_refused(status, err, "cannot reach the database", "[database_unavailable]")
    assert "secret" not in err
    assert not target.exists()
    assert repo_config(source) == config_before


def test_target_that_is_not_a_git_repository(capsys, tmp_path, data_dir, source):
    """A directory holding other files is refused and left exactly as it was."""
    target = tmp_path / "photos"
    target.mkdir()
    (target / "cat.jpg").write_bytes(b"\xff\xd8")
    status, _, err = run_cli(capsys, "sync", f"local:{source}", f"local:{target}")
    assert_refused(status, err, "is a directory but not a Git repository", "[not_a_repository]")
    assert sorted(p.name for p in target.iterdir()) == ["cat.jpg"]
    assert nothing_written(data_dir)


@pytest.mark.parametrize("under", ["notes.txt/app.git", "notes.txt/deeper/app.git"])
def test_target_that_cannot_be_created(capsys, tmp_path, data_dir, source, under):
    """A missing target under a file cannot be made: exit 2 with the file named and a
    stable code, no traceback, no Binding recorded, the file untouched."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("keep me")
    assert run_cli(capsys, "bindings", "list")[0] == 0  # the data directory's first use
    status, _, err = run_cli(capsys, "sync", f"local:{source}", f"local:{tmp_path / under}")
    assert_refused(
        status,
        err,
        f"cannot create a repository at {tmp_path / under}",
        f"{blocker} is a file, not a directory",
        "[repository_not_creatable]",
    )
    assert blocker.read_text() == "keep me"
    assert nothing_written(data_dir)


def test_target_that_is_a_file(capsys, tmp_path, data_dir, source):
    """A file is not a repository either."""
    target = tmp_path / "notes.txt"
    target.write_text("hello")
    status, _, err = run_cli(capsys, "sync", f"local:{source}", f"local:{target}")
    assert_refused(status, err, "is a file but not a Git repository")
    assert target.read_text() == "hello"


def test_json_output_is_exactly_one_report_object(capsys, tmp_path, data_dir, source):
    """``--json`` prints one JSON object: the final report with status and counters."""
    target = tmp_path / "dst.git"
    status, out, _ = run_cli(capsys, "sync", f"local:{source}", f"local:{target}", "--json")
    assert status == 0
    report = json.loads(out)  # the whole of stdout is one object
    assert report["status"] == "completed"
    assert set(report["counters"]) == {
        "scanned",
        "checkpoint_skipped",
        "created",
        "updated",
        "deleted",
        "unchanged",
        "conflicts",
        "failed",
        "blocked",
        "pending_changes",
    }
    assert report["counters"]["created"] == len(refs(source))
    assert refs(target) == refs(source)


def test_conflict_exits_non_zero_and_preserves_the_target(capsys, tmp_path, data_dir, source):
    """A same-named branch Git cannot prove is behind: reported, kept, exit status 1."""
    target = init_bare(tmp_path / "dst.git")
    subprocess.run(
        [
            "git",
            "--git-dir",
            str(target),
            "fetch",
            "-q",
            str(source),
            "refs/heads/main:refs/heads/main",
        ],
        check=True,
    )
    from tests.gitrepo import commit_on

    diverged = commit_on(target, "refs/heads/main", "standby-only work")
    status, out, _ = run_cli(capsys, "sync", f"local:{source}", f"local:{target}", "--json")
    report = json.loads(out)
    assert status == 1
    assert report["status"] == "requires_attention"
    assert report["plan_mode"] == "baseline"
    assert report["counters"]["conflicts"] == 1
    assert refs(target)["refs/heads/main"] == diverged
    problem = report["problems"][0]
    assert (problem["error_code"], problem["examples"]) == ("conflict", ["branch main"])


def test_human_report_names_counters_and_problems(capsys, tmp_path, data_dir, source):
    """Without --json the report is readable text with every counter."""
    set_ref(source, "refs/notes/commits", refs(source)["refs/heads/main"])
    target = tmp_path / "dst.git"
    status, out, _ = run_cli(capsys, "sync", f"local:{source}", f"local:{target}")
    assert status == 0
    assert "completed" in out.splitlines()[0]
    assert "created=4" in out
    assert "[unsupported_ref_namespace] 1 ref(s) under refs/notes are not synced" in out


def test_user_commands_issue_tokens_that_authenticate(capsys, data_dir):
    """``user add`` prints a working token, ``user token`` another; misuse exits 2."""
    from reposync.config import Settings
    from reposync.models.db import Database
    from reposync.service.accounts.users import authenticate
    from reposync.service.context import ServiceContext

    status, first, _ = run_cli(capsys, "user", "add", "alice", "--role", "admin")
    assert status == 0
    status, second, _ = run_cli(capsys, "user", "token", "alice", "--name", "ci")
    assert status == 0
    status, _, err = run_cli(capsys, "user", "add", "alice")
    assert_refused(status, err, "exists already", "[invalid_input]")
    status, _, err = run_cli(capsys, "user", "grant", "bob", "local", "abc")
    assert_refused(status, err, "no user named 'bob'", "[record_not_found]")

    db = Database(f"sqlite:///{data_dir / 'reposync.db'}")
    try:
        ctx = ServiceContext(settings=Settings(data_dir=data_dir), db=db)
        tokens = {first.strip(), second.strip()}
        assert len(tokens) == 2
        assert {authenticate(ctx, token).login for token in tokens} == {"alice"}
    finally:
        db.dispose()


def test_user_commands_list_revoke_ungrant_and_delete(capsys, data_dir):
    """Issue 12 #7: tokens are listed (never their secrets), revoked for good, grants
    taken back and users deleted from the CLI; a revoked token is refused at once."""
    from reposync.config import Settings
    from reposync.errors import Unauthenticated
    from reposync.models.db import Database
    from reposync.service.accounts.users import authenticate
    from reposync.service.context import ServiceContext

    run_cli(capsys, "user", "add", "root", "--role", "admin")
    status, token, _ = run_cli(capsys, "user", "add", "bob", "--days", "0")
    assert status == 0
    status, short, _ = run_cli(capsys, "user", "token", "bob", "--name", "ci", "--days", "7")
    assert status == 0
    status, listing, _ = run_cli(capsys, "user", "tokens", "bob")
    lines = listing.strip().splitlines()
    assert [line.split("\t")[1:3] for line in lines] == [["active", "initial"], ["active", "ci"]]
    assert "expires -" in lines[0]
    assert "expires -" not in lines[1]
    assert token.strip() not in listing
    assert short.strip() not in listing

    status, revoked, _ = run_cli(capsys, "user", "revoke", lines[1].split("\t")[0])
    assert status == 0
    assert "\trevoked\t" in revoked
    db = Database(f"sqlite:///{data_dir / 'reposync.db'}")
    try:
        ctx = ServiceContext(settings=Settings(data_dir=data_dir), db=db)
        with pytest.raises(Unauthenticated):
            authenticate(ctx, short.strip())
        assert authenticate(ctx, token.strip()).login == "bob"

        assert run_cli(capsys, "user", "grant", "bob", "local", "abc")[0] == 0
        assert run_cli(capsys, "user", "ungrant", "bob", "local", "abc")[0] == 0
        status, _, err = run_cli(capsys, "user", "ungrant", "bob", "local", "abc")
        assert_refused(status, err, "has no grant", "[record_not_found]")
        status, _, err = run_cli(capsys, "user", "delete", "root")
        assert status == 1  # a state that forbids it, not a misuse
        assert "last admin" in err
        assert "[not_allowed_now]" in err
        assert run_cli(capsys, "user", "delete", "bob")[0] == 0
        with pytest.raises(Unauthenticated):
            authenticate(ctx, token.strip())
    finally:
        db.dispose()


def test_handoff_makes_the_standby_the_authority(capsys, tmp_path, data_dir, source):
    """``handoff`` switches the pair; afterwards only the new direction is accepted."""
    target = tmp_path / "dst.git"
    old, new = f"local:{source}", f"local:{target}"
    assert run_cli(capsys, "sync", old, new)[0] == 0

    status, out, _ = run_cli(capsys, "handoff", old, new, "--json")
    outcome = json.loads(out)
    assert status == 0
    assert (outcome["switched"], outcome["authority_side"], outcome["authority_epoch"]) == (
        True,
        "b",
        2,  # epochs start at 1
    )

    status, _, err = run_cli(capsys, "handoff", old, new)
    assert_refused(status, err, "is the standby of binding")
    status, _, err = run_cli(capsys, "sync", old, new)
    assert_refused(status, err, "is the standby of binding")

    set_ref(target, "refs/heads/after-handoff", refs(target)["refs/heads/main"])
    status, out, _ = run_cli(capsys, "sync", new, old, "--json")
    assert status == 0
    assert json.loads(out)["counters"]["created"] == 1
    assert refs(source) == refs(target)


def test_an_aborted_handoff_exits_1_and_keeps_the_authority(capsys, tmp_path, data_dir, source):
    """A forward Run that ends in a conflict aborts the handoff; the old direction stands."""
    from tests.gitrepo import commit_on

    target = tmp_path / "dst.git"
    old, new = f"local:{source}", f"local:{target}"
    assert run_cli(capsys, "sync", old, new)[0] == 0
    set_ref(source, "refs/heads/feature", refs(source)["refs/heads/main"])
    set_ref(target, "refs/heads/feature", refs(target)["refs/heads/main"])
    diverged = commit_on(target, "refs/heads/feature", "standby-only work")  # unmanaged

    status, out, _ = run_cli(capsys, "handoff", old, new)
    assert status == 1
    assert out.startswith(f"handoff aborted, {old} stays the authority")
    assert "requires_attention" in out
    assert refs(target)["refs/heads/feature"] == diverged
    status, out, _ = run_cli(capsys, "sync", old, new, "--json")  # still the accepted direction
    assert json.loads(out)["status"] == "requires_attention"


def _signals_as_a_shell_leaves_them() -> None:
    """In the child: SIGINT, SIGTERM and SIGHUP at their defaults, as a terminal's
    foreground job or systemd starts a command. The test process may ignore some (a
    library another test ran in it set SIGINT ignored), and the command keeps an
    ignore it was started with, as ``nohup`` wants."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _applying_forge_items(database: Path) -> int:
    import sqlite3

    if not database.exists():
        return 0
    with sqlite3.connect(database) as conn:
        try:
            return conn.execute(
                "SELECT count(*) FROM run_items WHERE state = 'applying' "
                "AND object_type != 'git_ref'"
            ).fetchone()[0]
        except sqlite3.OperationalError:
            return 0


@pytest.mark.parametrize(
    ("signum", "said"),
    [
        (signal.SIGINT, "interrupted"),
        (signal.SIGTERM, "terminated by SIGTERM"),
        (signal.SIGHUP, "terminated by SIGHUP"),
        (signal.SIGKILL, None),
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"],
)
def test_a_signal_then_the_next_invocation_resumes_and_reports_that_run(
    tmp_path, data_dir, source, signum, said
):
    """Issue 9 #6 and issue 25, as an operator, systemd, a CI runner or a closed terminal
    meet it: a signal while a batch is being written; the very next ``reposync sync``
    resumes the Run (no ``binding_busy`` for a lease TTL: SIGINT, SIGTERM and SIGHUP give
    the lease up, and a SIGKILLed holder on this host is seen to be gone) and prints that
    Run's report."""

    from reposync.providers.base import EndpointSpec
    from reposync.providers.local import LocalProvider
    from reposync.providers.local.authoring import ForgeAuthoring

    provider = LocalProvider.open(EndpointSpec("local", str(source)))
    try:
        authoring = ForgeAuthoring(provider.forge)
        for n in range(5):
            authoring.create_label(f"label-{n}", color="ededed")
    finally:
        provider.close()
    target = tmp_path / "dst.git"
    argv = [sys.executable, "-m", "reposync", "sync", f"local:{source}", f"local:{target}"]
    env = {**os.environ, "REPOSYNC_FAULTS": "local_forge.before_commit:sleep=60:times=1"}
    interrupted = subprocess.Popen(
        argv, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=_signals_as_a_shell_leaves_them
    )
    deadline = time.monotonic() + 60
    while _applying_forge_items(data_dir / "reposync.db") == 0:
        assert interrupted.poll() is None, interrupted.communicate()
        assert time.monotonic() < deadline, "the sync never reached the labels batch"
        time.sleep(0.1)
    time.sleep(0.5)  # inside the target's write transaction, sleeping at the fault point
    interrupted.send_signal(signum)
    _, err = interrupted.communicate(timeout=30)
    if said is None:
        assert interrupted.returncode == -signum  # no last word, the lease left held
    else:
        assert interrupted.returncode == 128 + signum
        assert f"reposync: {said}; run 1 resumes on the next `reposync sync` of this pair" in err

    again = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=120)

    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["run_id"], report["status"]) == (1, "completed")
    assert report["object_types"]["label"]["created"] == 5
    assert refs(target) == {k: v for k, v in refs(source).items() if k in refs(target)}


def test_sigterm_during_a_push_ends_git_and_everything_it_started(tmp_path, data_dir, source):
    """A SIGTERM while ``git push`` waits on the target ends the push's whole process
    tree (git, receive-pack, the target's hook), not only reposync; the pair then syncs."""
    target = init_bare(tmp_path / "dst.git")
    hook_pid = tmp_path / "hook.pid"
    hook = target / "hooks" / "update"
    hook.write_text(f"#!/bin/sh\necho $$ > {hook_pid}\nexec sleep 120\n")
    hook.chmod(0o755)
    argv = [sys.executable, "-m", "reposync", "sync", f"local:{source}", f"local:{target}"]
    env = {**os.environ, "REPOSYNC_LOCAL_TARGET_HOOKS": "1"}  # the target's hooks run
    syncing = subprocess.Popen(
        argv, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=_signals_as_a_shell_leaves_them
    )
    deadline = time.monotonic() + 60
    while not hook_pid.exists() or not hook_pid.read_text().strip():
        assert syncing.poll() is None, syncing.communicate()
        assert time.monotonic() < deadline, "the push never reached the target's hook"
        time.sleep(0.1)
    sleeper = int(hook_pid.read_text())
    syncing.send_signal(signal.SIGTERM)
    _, err = syncing.communicate(timeout=30)
    assert syncing.returncode == 128 + signal.SIGTERM, err
    assert "terminated by SIGTERM; run 1 resumes" in err
    assert not _running(sleeper), "the target's hook outlived the sync"
    hook.unlink()
    again = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["run_id"] == 1
    assert refs(target) == refs(source)


def test_a_cancel_stops_a_running_push_within_seconds_and_the_next_sync_syncs(
    capsys, tmp_path, data_dir, source
):
    """Issue 25: ``runs cancel`` while ``git push`` waits on the target (an update hook
    that would sleep ten minutes) stops the push's whole process tree at once instead of
    waiting for it; the Run ends ``cancelled`` with its refs read back (none landed), and
    the very next ``reposync sync`` of the pair syncs everything."""
    target = init_bare(tmp_path / "dst.git")
    hook_pid = tmp_path / "hook.pid"
    hook = target / "hooks" / "update"
    hook.write_text(f"#!/bin/sh\necho $$ > {hook_pid}\nexec sleep 600\n")
    hook.chmod(0o755)
    argv = [sys.executable, "-m", "reposync", "sync", f"local:{source}", f"local:{target}"]
    env = {**os.environ, "REPOSYNC_LOCAL_TARGET_HOOKS": "1"}  # the target's hooks run
    syncing = subprocess.Popen([*argv, "--json"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not hook_pid.exists() or not hook_pid.read_text().strip():
            assert syncing.poll() is None, syncing.communicate()
            assert time.monotonic() < deadline, "the push never reached the target's hook"
            time.sleep(0.1)
        sleeper = int(hook_pid.read_text())
        status, out, _ = run_cli(capsys, "runs", "cancel", "1")
        assert status == 0
        assert "cancel requested" in out
        # Without the cancel reaching the push this waits for the hook's ten minutes.
        out, _ = syncing.communicate(timeout=120)
    finally:
        if syncing.poll() is None:
            syncing.kill()
            syncing.communicate()
    report = json.loads(out)
    assert (report["run_id"], report["status"]) == (1, "cancelled")
    assert syncing.returncode == 1
    assert not _running(sleeper), "the target's hook outlived the cancel"
    assert refs(target) == {}
    assert report["counters"]["created"] == 0  # read back: nothing of the push landed
    status, out, _ = run_cli(capsys, "runs", "events", "1")
    assert "the running push stopped" in out

    hook.unlink()
    again = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert (second["run_id"], second["status"]) == (2, "completed")
    assert refs(target) == refs(source)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its parent is not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_ctrl_c_before_a_run_exists_promises_no_resume(
    capsys, tmp_path, data_dir, source, monkeypatch
):
    """Interrupted while the sides are still being opened: no Run exists, so the message
    says nothing was queued rather than promise a resume."""
    from reposync.service import embedded

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded, "sync", interrupted)
    status = main(["sync", f"local:{source}", f"local:{tmp_path / 'dst.git'}"])
    err = capsys.readouterr().err
    assert status == 130
    assert "interrupted before a Run started; nothing was queued" in err
    assert "resumes" not in err


def test_a_handoff_from_github_needs_the_confirmation_that_writes_stopped(
    capsys, tmp_path, data_dir, github_fake, monkeypatch
):
    """reposync cannot freeze a GitHub authority: without ``--confirm-writes-stopped``
    the handoff exits 1 naming the flag, and no Run starts."""
    github_fake.state.create_repo("acme/app", private=True, auto_init=True)
    _github_in_env(github_fake, monkeypatch)
    old, new = "github:acme/app", f"local:{tmp_path / 'dst.git'}"

    status, _, err = run_cli(capsys, "handoff", old, new)

    assert status == 1
    assert "[writes_not_stopped]" in err
    assert "--confirm-writes-stopped" in err
    status, out, _ = run_cli(capsys, "runs", "list", "--json")
    assert status == 0
    assert json.loads(out)["items"] == []


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_sync_deferred_by_a_rate_limit_says_which_limit_and_why(
    capsys, tmp_path, data_dir, github_fake, monkeypatch, as_json
):
    """A rate limit longer than ``sync`` waits in place leaves the Run deferred, and the
    command says which limit stopped it (its code) and which request met it, from the
    Run's last ``deferred`` event. Before, it said "the target's rate limit" whatever
    the limit was: a source's, the API's or the Git host's alike."""
    _push_answered(github_fake, monkeypatch, 429, REPOSYNC_GIT_RATE_LIMIT_WAIT="600")
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)

    status, out, _ = run_cli(
        capsys, "sync", f"local:{source}", "github:acme/app", *(["--json"] if as_json else [])
    )

    assert status == 1
    if as_json:
        said = json.loads(out)
        assert (said["status"], said["error_code"]) == ("deferred", "git_rate_limited")
        assert "the Git host's rate limit (HTTP 429)" in said["message"]
    else:
        assert "is deferred by a rate limit until" in out
        assert "(git_rate_limited: git push to " in out
        assert "run the same command again to resume it" in out


def test_a_sync_waiting_for_a_retry_longer_than_it_waits_says_so(
    capsys, tmp_path, data_dir, github_fake, monkeypatch
):
    """The same when a stage's retry is further off than ``sync`` waits: the Run waits
    for a retry's backoff, not a rate limit, and the command says which error it was."""
    _push_answered(github_fake, monkeypatch, 503, REPOSYNC_RETRY_BACKOFF="600")
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)

    status, out, _ = run_cli(capsys, "sync", f"local:{source}", "github:acme/app")

    assert status == 1
    assert "is deferred by a retry's backoff until" in out
    assert "(git_transport_failed: git push to " in out


def _github_in_env(github_fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line pointed at the GitHub test server with acme's token."""
    for name, value in github_env(github_fake, github_fake.add_token("acme")).items():
        monkeypatch.setenv(name, value)


def _push_answered(
    github_fake: Any, monkeypatch: pytest.MonkeyPatch, status: int, **env: str
) -> None:
    """acme/app on the GitHub test server, whose Git host answers every push ``status``;
    ``sync`` waits for nothing in place (``env``: how long the Run's wait is)."""
    github_fake.state.create_repo("acme/app", private=True)
    _github_in_env(github_fake, monkeypatch)
    for name, value in {"REPOSYNC_EMBEDDED_MAX_WAIT": "0", **env}.items():
        monkeypatch.setenv(name, value)
    github_fake.faults.error("POST", r"/app\.git/git-receive-pack$", status=status, host="git")
