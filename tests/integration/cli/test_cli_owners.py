"""``reposync bind-all`` in the embedded mode: the pass, then each Binding synced in the
process; a dry run lists and writes nothing; running it again binds what is new; the
exit status says whether anything needs the operator; bad input is refused as the other
commands refuse it."""

from __future__ import annotations

import json
from pathlib import Path

from reposync import cli_owners
from reposync.service.owners import DEFAULT_PASS_CRON
from tests.gitrepo import generate, refs
from tests.integration.cli.test_cli import assert_refused, nothing_written, run_cli


def sources(root: Path, *names: str) -> Path:
    for name in names:
        generate(root / f"{name}.git", commits=2, branches=1, tags=1)
    return root


def test_bind_all_binds_and_syncs_each_repository_then_only_the_new_one(capsys, tmp_path, data_dir):
    """The first run creates and syncs every target (exit 0); after a new source
    repository appears, the next run binds just it and syncs all (nothing to do for the
    others)."""
    source = sources(tmp_path / "forge", "app", "lib")
    target = tmp_path / "mirror"
    target.mkdir()
    status, out, err = run_cli(capsys, "bind-all", f"local:{source}", f"local:{target}", "--json")
    assert status == 0, err
    answer = json.loads(out)
    assert answer["pass"]["counts"] == {"created": 2}
    assert [run["status"] for run in answer["runs"]] == ["completed", "completed"]
    for name in ("app", "lib"):
        assert refs(target / f"{name}.git") == refs(source / f"{name}.git")
    sources(source, "new")
    status, out, err = run_cli(capsys, "bind-all", f"local:{source}", f"local:{target}")
    assert status == 0, err
    assert "2 already_bound, 1 created" in out
    assert refs(target / "new.git") == refs(source / "new.git")


def test_a_dry_run_lists_what_would_be_bound_and_writes_nothing(capsys, tmp_path, data_dir):
    """--dry-run prints each repository's would-be outcome and leaves no Binding and no
    target behind."""
    source = sources(tmp_path / "forge", "app")
    target = tmp_path / "mirror"
    target.mkdir()
    status, out, _ = run_cli(capsys, "bind-all", f"local:{source}", f"local:{target}", "--dry-run")
    assert status == 0
    assert "would_create" in out
    assert "dry run: nothing was written" in out
    assert nothing_written(data_dir, target / "app.git")


def test_a_clash_exits_1_and_names_the_repository(capsys, tmp_path, data_dir):
    """A target holding other data is reported on its line and the exit status is 1;
    the other repositories are bound and synced anyway."""
    source = sources(tmp_path / "forge", "app", "lib")
    target = tmp_path / "mirror"
    generate(target / "lib.git", commits=1, branches=0, tags=0)
    before = refs(target / "lib.git")
    status, out, _ = run_cli(capsys, "bind-all", f"local:{source}", f"local:{target}")
    assert status == 1
    [line] = [line for line in out.splitlines() if " lib " in line]
    assert line.split()[0] == "clash"
    assert refs(target / "lib.git") == before
    assert refs(target / "app.git") == refs(source / "app.git")


def test_an_owner_that_does_not_exist_is_refused_with_exit_2(capsys, tmp_path, data_dir):
    """A missing source owner: one line naming it, exit 2, nothing written."""
    status, _, err = run_cli(capsys, "bind-all", f"local:{tmp_path / 'none'}", f"local:{tmp_path}")
    assert_refused(status, err, "is not a directory", "[owner_not_found]")
    assert nothing_written(data_dir)


def test_the_command_lines_default_pass_schedule_is_the_services():
    """The parser's default (kept out of the service for start-up) is the service's."""
    assert cli_owners.DEFAULT_PASS_CRON == DEFAULT_PASS_CRON
