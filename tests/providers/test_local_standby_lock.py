"""The standby lock of a local repository (``providers/local/hooks.py``): while it is a
Binding's standby a plain ``git push`` is refused naming the authority, reposync's own
push passes, a user's pre-receive hook keeps running, and ``reposync hooks install``'s
post-receive hears only what was accepted."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reposync.errors import UsageError
from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local import hooks as local_hooks
from reposync.providers.local.authoring import ForgeAuthoring
from tests.gitrepo import generate, refs

AUTHORITY = "github:acme/app"


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[tuple[Path, LocalProvider]]:
    path = generate(tmp_path / "standby.git", commits=2, branches=0, tags=0)
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    yield path, provider
    provider.close()


def push(path: Path, work: Path, ref: str, env: dict[str, str] | None = None) -> str:
    """Commit in a clone of ``path`` and push it to ``ref``; git's stderr, or raises."""
    if not work.exists():
        subprocess.run(["git", "clone", "-q", "-b", "main", str(path), str(work)], check=True)
    (work / "change.txt").write_text(f"{ref}\n{os.urandom(4).hex()}\n")
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "change"],
        cwd=work,
        check=True,
    )
    done = subprocess.run(
        ["git", "push", "origin", f"HEAD:{ref}"],
        cwd=work,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PushRefused(done.stderr)
    return done.stderr


class PushRefused(Exception):
    pass


def test_a_standby_refuses_a_plain_push_naming_its_authority(repo, tmp_path):
    """Marked standby: ``git push`` fails with the authority's name, nothing moves."""
    path, provider = repo
    before = refs(path)
    provider.mark_standby(AUTHORITY)

    with pytest.raises(PushRefused, match=f"standby of {AUTHORITY}; push to the authority"):
        push(path, tmp_path / "work", "refs/heads/main")

    assert refs(path) == before


def test_reposyncs_own_push_passes_the_lock(repo, tmp_path):
    """The environment of reposync's pushes (``git_remote(write=True).env``) opens it."""
    path, provider = repo
    provider.mark_standby(AUTHORITY)
    remote = provider.git_remote(write=True)

    push(path, tmp_path / "work", "refs/heads/synced", dict(remote.env))

    assert "refs/heads/synced" in refs(path)
    assert provider.git_remote(write=False).env == {}  # only writes carry it


def test_unmarked_the_repository_takes_pushes_again_and_the_lock_is_gone(repo, tmp_path):
    """The handoff's thaw: the hook goes, the mark goes, a plain push lands."""
    path, provider = repo
    provider.mark_standby(AUTHORITY)
    provider.mark_standby(None)

    push(path, tmp_path / "work", "refs/heads/main")

    assert not (path / "hooks" / "pre-receive").exists()
    assert provider.standby_of() is None


def test_a_lock_removed_by_hand_comes_back_at_the_next_mark(repo, tmp_path):
    """Every applying Run marks its target again: a deleted lock is restored."""
    path, provider = repo
    provider.mark_standby(AUTHORITY)
    (path / "hooks" / "pre-receive").unlink()

    provider.mark_standby(AUTHORITY)

    with pytest.raises(PushRefused, match=AUTHORITY):
        push(path, tmp_path / "work", "refs/heads/main")


def test_a_users_pre_receive_hook_is_chained_then_restored_unchanged(repo, tmp_path):
    """The user's hook runs after the lock (for reposync's pushes, which pass it), never
    for a refused push, and is back byte for byte once the repository is no standby."""
    path, provider = repo
    seen = tmp_path / "seen"
    own = path / "hooks" / "pre-receive"
    text = f"#!/bin/sh\ncat >> {seen}\n"
    own.write_text(text)
    own.chmod(0o755)
    provider.mark_standby(AUTHORITY)
    work = tmp_path / "work"

    with pytest.raises(PushRefused):
        push(path, work, "refs/heads/main")
    assert not seen.exists()  # refused before the user's hook ran
    push(path, work, "refs/heads/synced", dict(provider.git_remote(write=True).env))
    assert "refs/heads/synced" in seen.read_text()  # the user's hook read the ref lines

    provider.mark_standby(None)

    assert own.read_text() == text
    assert not (path / "hooks" / local_hooks.CHAINED).exists()
    push(path, work, "refs/heads/main")
    assert "refs/heads/main" in seen.read_text()


def test_a_users_hook_is_never_clobbered_when_one_is_already_moved_aside(repo):
    """Both a user's pre-receive and one moved aside exist: refused, both kept."""
    path, provider = repo
    hooks_dir = path / "hooks"
    (hooks_dir / "pre-receive").write_text("#!/bin/sh\necho new\n")
    (hooks_dir / local_hooks.CHAINED).write_text("#!/bin/sh\necho old\n")

    with pytest.raises(UsageError, match="both exist"):
        provider.mark_standby(AUTHORITY)

    assert (hooks_dir / "pre-receive").read_text() == "#!/bin/sh\necho new\n"
    assert (hooks_dir / local_hooks.CHAINED).read_text() == "#!/bin/sh\necho old\n"


def test_the_lock_and_the_change_hooks_work_together(repo, tmp_path):
    """``reposync hooks install``'s post-receive reports only pushes the lock accepted."""
    path, provider = repo
    reported = tmp_path / "reported"
    notify = tmp_path / "notify.sh"
    notify.write_text(f"#!/bin/sh\ncat >> {reported}\n")
    notify.chmod(0o755)
    provider.install_change_hooks([str(notify)], {})
    provider.mark_standby(AUTHORITY)
    work = tmp_path / "work"

    with pytest.raises(PushRefused):
        push(path, work, "refs/heads/main")
    assert not reported.exists()
    push(path, work, "refs/heads/synced", dict(provider.git_remote(write=True).env))
    assert "refs/heads/synced" in reported.read_text()

    provider.mark_standby(None)
    push(path, work, "refs/heads/main")
    assert "refs/heads/main" in reported.read_text()
    assert local_hooks.MARKER in (path / "hooks" / "post-receive").read_text()


def test_the_wiki_is_locked_with_its_repository(repo, tmp_path):
    """A wiki reposync creates on a standby refuses plain pushes too; unmarked, it
    takes them again."""
    _, provider = repo
    provider.mark_standby(AUTHORITY)
    remote = provider.wiki_remote(write=True)  # the first wiki write creates it
    seed = generate(tmp_path / "seed.git", commits=1, branches=0, tags=0)
    pushed = {**os.environ, **dict(remote.env)}
    subprocess.run(["git", "push", "-q", remote.url, "main"], cwd=seed, env=pushed, check=True)

    with pytest.raises(PushRefused, match=AUTHORITY):
        push(provider.wiki_path, tmp_path / "work", "refs/heads/main")

    provider.mark_standby(None)
    push(provider.wiki_path, tmp_path / "work", "refs/heads/main")
    assert not local_hooks.is_locked(provider.wiki_path)


def test_the_authoring_api_and_a_push_are_refused_alike(repo, tmp_path):
    """Both doors of a local forge name the same authority."""
    path, provider = repo
    provider.mark_standby(AUTHORITY)

    with pytest.raises(Exception, match=f"standby of {AUTHORITY}"):
        ForgeAuthoring(provider.forge).create_label("late", color="000000")
    with pytest.raises(PushRefused, match=f"standby of {AUTHORITY}"):
        push(path, tmp_path / "work", "refs/heads/main")


def test_a_repository_that_runs_no_hooks_cannot_be_locked_but_is_still_marked(repo):
    """``core.hooksPath=/dev/null``: nothing to install; the forge's own guard holds."""
    path, provider = repo
    subprocess.run(["git", f"--git-dir={path}", "config", "core.hooksPath", os.devnull], check=True)

    provider.mark_standby(AUTHORITY)

    assert provider.standby_of() == AUTHORITY
    assert not local_hooks.is_locked(path)
