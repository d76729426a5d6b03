"""Local repositories report their own changes: ``reposync hooks install`` writes a
post-receive hook and the notify script the local forge's authoring API runs; both end
in the same intake as GitHub's webhooks. What reposync writes itself is never reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from reposync.errors import UsageError
from reposync.lifecycle import AuditMode, Trigger
from reposync.models import IncomingWebhook, Run
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalForge, LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring
from reposync.service.bindings import SyncRequest, bind, update_binding
from reposync.service.context import ServiceContext
from reposync.service.embedded import sync
from reposync.service.runs import enqueue_run
from reposync.service.webhooks.intake import install_hooks
from reposync.sync.vocabulary import ObjectType
from tests.gitrepo import generate, refs
from tests.integration.conftest import TERMINAL, wait_terminal
from tests.workers import ROOT, start_worker, wait_for


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "reposync.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def git_push_commit(source: Path, work: Path, message: str) -> str:
    """Clone, commit, ``git push``: the post-receive hook of ``source`` runs."""
    if not work.exists():
        subprocess.run(["git", "clone", "-q", "-b", "main", str(source), str(work)], check=True)
    (work / f"{message}.txt").write_text(message)
    for command in (
        ["git", "add", "-A"],
        ["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", message],
    ):
        subprocess.run(command, cwd=work, check=True)
    pushed = subprocess.run(
        ["git", "push", "-q", "origin", "HEAD:main"],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    )
    assert "reported" in pushed.stderr, pushed.stderr  # the hook's line, "remote: ..."
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True, text=True
    ).stdout.strip()


def authoring(path: Path) -> ForgeAuthoring:
    return ForgeAuthoring(LocalProvider.open(EndpointSpec("local", str(path))).forge)


def recorded(ctx: ServiceContext) -> list[IncomingWebhook]:
    with ctx.db.session() as session:
        return list(session.execute(select(IncomingWebhook).order_by(IncomingWebhook.id)).scalars())


def test_hooks_report_pushes_and_edits_but_never_what_a_sync_writes(tmp_path, ctx, settings):
    """Hooks on both sides; a sync (target hooks off, the default) reports nothing; a
    push into the source and an edit through its authoring API are reported once each."""
    source = generate(tmp_path / "src.git", commits=3, branches=1, tags=0)
    target = tmp_path / "dst.git"
    bind(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    env = {**os.environ, "REPOSYNC_DATA_DIR": str(settings.data_dir), "PYTHONPATH": str(ROOT)}
    for path in (source, target):
        out = cli(env, "hooks", "install", f"local:{path}")
        assert f"installed {path / 'hooks' / 'post-receive'}" in out
        assert ((path / "hooks" / "reposync-notify").stat().st_mode & 0o777) == 0o700
    authoring(source).create_label("bug")  # an edit before the sync: one report
    assert [(d.event, d.hints["object_types"]) for d in recorded(ctx)] == [("forge", ["label"])]

    run = sync(ctx, SyncRequest(f"local:{source}", f"local:{target}"))
    assert run.status == "completed", run.report
    assert refs(target)["refs/heads/main"] == refs(source)["refs/heads/main"]
    assert LocalForge(target).reader.count(ObjectType.LABEL) == 1
    assert len(recorded(ctx)) == 1  # the target's hooks reported nothing of the sync

    sha = git_push_commit(source, tmp_path / "work", "pushed")
    deliveries = recorded(ctx)
    assert [d.event for d in deliveries] == ["forge", "push"]
    source_id = LocalProvider.open(EndpointSpec("local", str(source))).endpoint().repository_id
    assert deliveries[1].repository_id == source_id
    assert deliveries[1].hints["refs"][0][1:] == [refs(target)["refs/heads/main"], sha]


def test_install_keeps_a_hook_it_did_not_write_and_refuses_github(tmp_path, ctx):
    source = generate(tmp_path / "src.git", commits=1, branches=0, tags=0)
    own = source / "hooks" / "post-receive"
    own.write_text("#!/bin/sh\necho mine\n")
    with pytest.raises(UsageError, match="reposync did not write it"):
        install_hooks(ctx, f"local:{source}", ["true"], {})
    assert own.read_text() == "#!/bin/sh\necho mine\n"
    own.unlink()
    first = install_hooks(ctx, f"local:{source}", ["true"], {"REPOSYNC_X": "a b'c"})
    again = install_hooks(ctx, f"local:{source}", ["true"], {"REPOSYNC_X": "a b'c"})
    assert first == again  # reinstalling replaces its own hooks
    script = (source / "hooks" / "reposync-notify").read_text()
    assert "export REPOSYNC_X='a b'\"'\"'c'" in script
    with pytest.raises(UsageError, match="webhooks"):
        install_hooks(ctx, "github:acme/app", ["true"], {})


def cli_failing(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reposync.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_password_never_goes_into_a_hook_it_reads_an_env_file_instead(tmp_path, ctx, settings):
    """A database URL with a password is refused for a hook (it would sit in the
    repository's hooks directory) unless the settings come from an owner-only file the
    hook names; with that file the hook carries no URL at all and still reports a push."""
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    bind(ctx, SyncRequest(f"local:{source}", f"local:{tmp_path / 'dst.git'}"))
    env = {**os.environ, "REPOSYNC_DATA_DIR": str(settings.data_dir), "PYTHONPATH": str(ROOT)}
    secret_url = "postgresql+psycopg://reposync:s3cret@db.example/reposync"

    refused = cli_failing(
        {**env, "REPOSYNC_DATABASE_URL": secret_url}, "hooks", "install", f"local:{source}"
    )
    assert refused.returncode == 2, refused.stderr
    assert "--env-file" in refused.stderr
    assert "REPOSYNC_DATABASE_URL" in refused.stderr
    assert not (source / "hooks" / "reposync-notify").exists()

    env_file = tmp_path / "hooks.env"
    env_file.write_text(f"# the hook's settings\nexport REPOSYNC_DATABASE_URL='{ctx.db.url}'\n")
    env_file.chmod(0o644)
    readable = cli_failing(env, "hooks", "install", f"local:{source}", "--env-file", str(env_file))
    assert readable.returncode == 2
    assert "chmod 600" in readable.stderr
    env_file.chmod(0o600)

    cli(
        {**env, "REPOSYNC_DATABASE_URL": secret_url},
        "hooks",
        "install",
        f"local:{source}",
        "--env-file",
        str(env_file),
    )
    script = (source / "hooks" / "reposync-notify").read_text()
    assert "s3cret" not in script
    assert "DATABASE_URL" not in script
    assert str(env_file) in script
    git_push_commit(source, tmp_path / "work", "pushed")
    assert [d.event for d in recorded(ctx)] == ["push"]


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_local_push_and_a_forge_edit_start_runs_on_a_worker(tmp_path, dctx, env, workers):
    """local -> local in the distributed mode: ``git push`` into the authority and an
    issue comment through its authoring API each reach the standby by a webhook Run."""
    source = generate(tmp_path / "src.git", commits=5, branches=1, tags=1)
    target = tmp_path / "dst.git"
    binding = bind(dctx, SyncRequest(f"local:{source}", f"local:{target}"))
    workers.append(start_worker(env, tmp_path, "w1", beat=True))
    full = wait_terminal(dctx, enqueue_run(dctx, binding.id, audit_mode=AuditMode.FULL).id)
    assert full.status == "completed", full.report
    update_binding(dctx, binding.id, sync_enabled=True)
    cli(env, "hooks", "install", f"local:{source}")

    sha = git_push_commit(source, tmp_path / "work", "event driven")
    wait_for(lambda: refs(target).get("refs/heads/main") == sha, 60, "the pushed commit")

    forge = authoring(source)
    issue = forge.create_issue("from the hook", author="ada")
    forge.add_comment(ObjectType.ISSUE, issue, "a comment", author="ada")
    target_forge = LocalForge(target)
    wait_for(lambda: target_forge.reader.count(ObjectType.ISSUE_COMMENT) == 1, 60, "the comment")

    def runs() -> list[Run]:
        with dctx.db.session() as session:
            return list(session.execute(select(Run).where(Run.binding_id == binding.id)).scalars())

    wait_for(lambda: all(r.status in TERMINAL for r in runs()), 60, "the Runs to end")
    webhook_runs = [r for r in runs() if r.trigger == Trigger.WEBHOOK.value]
    assert 2 <= len(webhook_runs) <= 3  # the push; the issue and its comment (folded or not)
    assert all(r.status == "completed" for r in webhook_runs)
