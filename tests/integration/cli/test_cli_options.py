"""The command line as its users' habits expect (issue 15): reposync's own options before
or after the subcommand, ``--version``, ``-v``, progress in a log, and where the data
lives said once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from reposync.cli import main
from reposync.errors import RecordNotFound
from tests.gitrepo import commit_on, generate, refs
from tests.integration.cli.test_cli import assert_refused, run_cli

ROOT = Path(__file__).resolve().parents[3]
FIRST_USE = "reposync: first use of data directory"


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$REPOSYNC_DATA_DIR, which an explicit --data-dir must override."""
    directory = tmp_path / "from-environment"
    monkeypatch.setenv("REPOSYNC_DATA_DIR", str(directory))
    monkeypatch.delenv("REPOSYNC_DATABASE_URL", raising=False)
    monkeypatch.setenv("REPOSYNC_PROGRESS_INTERVAL", "600")  # stderr: only what is tested
    return directory


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return generate(tmp_path / "src.git", commits=3, branches=1, tags=1)


def reposync(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``reposync`` as a user runs it: its own process, stderr a pipe (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "reposync", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "REPOSYNC_PROGRESS_INTERVAL": "600",  # stderr: only what a test looks for
            **(env or {}),
        },
        timeout=120,
    )


def test_global_options_after_the_subcommand(capsys, tmp_path, elsewhere, source):
    """Issue 15: ``reposync sync A B --data-dir X`` was refused (exit 2, "unrecognized
    arguments"); every global option now works after the subcommand, at any depth."""
    chosen = tmp_path / "chosen"
    target = tmp_path / "dst.git"
    status, _, err = run_cli(
        capsys, "sync", f"local:{source}", f"local:{target}", "--data-dir", str(chosen), "-v"
    )
    assert status == 0, err
    assert (chosen / "reposync.db").exists()
    assert not elsewhere.exists()
    assert refs(target) == refs(source)

    status, token, err = run_cli(capsys, "user", "add", "ada", "--data-dir", str(chosen))
    assert status == 0, err
    assert token.startswith("rs_")
    assert not elsewhere.exists()


def test_a_global_option_before_the_subcommand_is_kept(capsys, tmp_path, elsewhere, source):
    """The subcommand's parser does not reset what was given before it."""
    chosen = tmp_path / "chosen"
    target = tmp_path / "dst.git"
    status, _, err = run_cli(
        capsys, "--data-dir", str(chosen), "-v", "sync", f"local:{source}", f"local:{target}"
    )
    assert status == 0, err
    assert (chosen / "reposync.db").exists()
    assert not elsewhere.exists()


def test_an_unknown_option_is_still_refused(capsys, tmp_path, elsewhere, source):
    """Accepting options anywhere does not accept anything: argparse's usage error."""
    with pytest.raises(SystemExit) as exit_status:
        main(["sync", f"local:{source}", f"local:{tmp_path / 'dst.git'}", "--nope"])
    assert exit_status.value.code == 2
    assert "unrecognized arguments: --nope" in capsys.readouterr().err
    assert not elsewhere.exists()


@pytest.mark.parametrize("argv", [["--version"], ["runs", "list", "--version"]])
def test_version(capsys, argv):
    """``--version`` prints the packaged version (pyproject.toml's) and exits 0."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as exit_status:
        main(argv)
    assert exit_status.value.code == 0
    assert capsys.readouterr().out == f"reposync {version}\n"


def test_the_process_ends_with_mains_status_and_everything_it_printed(tmp_path, source):
    """``reposync`` ends without the interpreter's teardown (``cli.run``): what it wrote
    to a pipe still arrives whole, its status is the command's, and a reader that went
    away makes it 120 without a traceback (it was a ``BrokenPipeError`` traceback and
    status 1 when the output filled the pipe's buffer)."""
    data = str(tmp_path / "data")
    target = tmp_path / "dst.git"
    done = reposync("--data-dir", data, "sync", f"local:{source}", f"local:{target}", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"

    missing = reposync("--data-dir", data, "runs", "show", "999")
    assert missing.returncode == RecordNotFound.exit_status
    assert "[record_not_found]" in missing.stderr

    read, write = os.pipe()
    os.close(read)
    try:
        gone = subprocess.run(
            [sys.executable, "-m", "reposync", "--data-dir", data, "runs", "list", "--json"],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
    finally:
        os.close(write)
    assert gone.returncode == 120
    assert b"Traceback" not in gone.stderr


def test_verbose_logs_what_it_does(tmp_path, source):
    """``-v`` logs to stderr: the database, the Binding, each stage and each push; without
    it stderr stays quiet; stdout is the report either way."""
    data = tmp_path / "data"
    target = tmp_path / "dst.git"
    quiet = reposync("sync", f"local:{source}", f"local:{target}", "--data-dir", str(data))
    assert quiet.returncode == 0, quiet.stderr
    assert [line for line in quiet.stderr.splitlines() if not line.startswith(FIRST_USE)] == []

    commit_on(source, "refs/heads/main", "something to push again")
    loud = reposync("sync", f"local:{source}", f"local:{target}", "-v", "--data-dir", str(data))
    assert loud.returncode == 0, loud.stderr
    assert loud.stdout.startswith("Run 2 ")
    for expected in (
        f"INFO reposync.cli: database sqlite:///{data / 'reposync.db'}",
        f"binding 1 (existing): local:{source} -> local:{target}",
        "run 2: planning (binding 1",
        "run 2: finalizing done in",
        f"git push to {target}: ",
    ):
        assert expected in loud.stderr, loud.stderr


def test_progress_lines_when_stderr_is_not_a_terminal(tmp_path, source):
    """A log gets a line every few seconds (REPOSYNC_PROGRESS_INTERVAL): the stage, item
    counts and rate, also while one long batch holds the sync (here: a target forge
    that takes 2 s to commit)."""
    from reposync.providers.base import EndpointSpec
    from reposync.providers.local import LocalProvider
    from reposync.providers.local.authoring import ForgeAuthoring

    provider = LocalProvider.open(EndpointSpec("local", str(source)))
    try:
        for n in range(3):
            ForgeAuthoring(provider.forge).create_label(f"label-{n}", color="ededed")
    finally:
        provider.close()
    result = reposync(
        "sync",
        f"local:{source}",
        f"local:{tmp_path / 'dst.git'}",
        "--data-dir",
        str(tmp_path / "data"),
        env={
            "REPOSYNC_PROGRESS_INTERVAL": "0.3",
            "REPOSYNC_FAULTS": "local_forge.before_commit:sleep=2:times=1",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Run 1 ")  # stdout is the report alone
    line = re.compile(
        r"reposync: run 1 applying, (\d+)/(\d+) items \(\d+%\)(, \d+ items/s)?, \d+s elapsed"
    )
    progress = [line.fullmatch(text) for text in result.stderr.splitlines()]
    found = [match for match in progress if match is not None]
    assert len(found) >= 3, result.stderr  # about 6 in the 2 s the batch is held
    assert all(match.group(3) for match in found[1:])  # a rate from the second line on
    assert {int(match.group(2)) for match in found} == {len(refs(source)) + 3}


def test_the_data_directory_is_said_once_on_first_use(capsys, tmp_path, elsewhere, source):
    """The invocation that creates the embedded database says where it and the data
    directory are, on stderr; later ones do not, nor does a refused first invocation
    (one error line, and nothing was created)."""
    target = tmp_path / "dst.git"
    status, _, err = run_cli(capsys, "sync", "nope:/x", f"local:{target}")
    assert_refused(status, err, "[invalid_locator]")

    status, out, err = run_cli(capsys, "sync", f"local:{source}", f"local:{target}")
    assert status == 0
    assert FIRST_USE not in out
    assert err.splitlines() == [
        f"{FIRST_USE} {elsewhere}; its database is {elsewhere / 'reposync.db'} "
        "(--data-dir or REPOSYNC_DATA_DIR chooses another)"
    ]

    for argv in (("sync", f"local:{source}", f"local:{target}"), ("runs", "list")):
        status, _, err = run_cli(capsys, *argv)
        assert status == 0
        assert FIRST_USE not in err


def test_a_configured_database_is_not_announced(capsys, tmp_path, elsewhere, pg_url, monkeypatch):
    """The distributed mode's database was chosen by its operator: nothing to say."""
    monkeypatch.setenv("REPOSYNC_DATABASE_URL", pg_url)
    status, out, err = run_cli(capsys, "bindings", "list")
    assert status == 0, err
    assert err == ""
    assert out.splitlines()[0].startswith("BINDING")
