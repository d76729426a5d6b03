"""The plain Git provider's own behaviour: its locators, what a failing server means in
the error tree, git's credential helpers for LFS requests, and the SSH command it runs.
The contract itself is the conformance suite's (``test_conformance_git.py``)."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reposync.errors import (
    InvalidLocator,
    PermissionDenied,
    ProviderUnavailable,
    RepositoryMismatch,
    RepositoryNotFound,
    UsageError,
)
from reposync.providers.base import EndpointSpec, LfsOperation
from reposync.providers.gitremote import GitRemoteProvider
from reposync.providers.gitremote.lfs import ssh_command
from reposync.providers.gitremote.urls import parse
from reposync.providers.registry import parse_locator
from tests.fakes.gitserver.plain import client_home
from tests.gitrepo import generate
from tests.lfsrepo import pointer_of
from tests.servers import free_port

CANONICAL = {
    "https://Git.Example.com:443/acme/app.git/": "https://git.example.com/acme/app.git",
    "http://alice@127.0.0.1:8080/app": "http://alice@127.0.0.1:8080/app",
    "ssh://git@host:22/acme/app.git": "ssh://git@host/acme/app.git",
    "ssh://git@[::1]:2222/x.git": "ssh://git@[::1]:2222/x.git",
    "git@HOST:acme/app.git": "git@host:acme/app.git",
    "host:/srv/app.git": "host:/srv/app.git",
    "file:///srv/git//app.git": "file:///srv/git/app.git",
}

REFUSED = {
    "https://alice:secret@host/app.git": "password",
    "git://host/app.git": "not supported",
    "ext::sh -c touch% /tmp/x": "remote helpers",
    "fd::3": "remote helpers",
    "/srv/app.git": "git:file:///srv/app.git",
    "ssh://-oProxyCommand=touch/x.git": "not a host name",
    "host:-oProxyCommand=x": "not a repository path",
    "https://host/app.git?x=1": "no query",
    "https://host": "no path",
    "https://git.example.com/acme/../secret.git": ". or ..",
    "ssh://git@host/acme/./app.git": ". or ..",
    "file://otherhost/srv/app.git": "names no host",
    "https://host/a\x00b.git": "control characters",
}


@pytest.mark.parametrize("given", list(CANONICAL))
def test_a_locator_is_spelled_one_way_and_that_spelling_is_stable(given):
    """The canonical spelling drops case, default ports and trailing slashes, keeps the
    path as the server names it, and is its own canonical spelling."""
    spec = parse_locator(f"git:{given}")
    assert spec.provider == "git"
    assert spec.locator == CANONICAL[given]
    assert GitRemoteProvider.normalize_locator(spec.locator) == spec.locator


@pytest.mark.parametrize("given", list(REFUSED))
def test_a_locator_that_is_no_remote_url_or_carries_a_secret_is_refused(given):
    """Passwords, other transports, option-like hosts and paths, dot segments, queries:
    refused with a message that says why."""
    with pytest.raises(InvalidLocator, match=REFUSED[given].replace(".", r"\.")):
        parse_locator(f"git:{given}")


def test_the_lfs_endpoint_is_where_git_lfs_looks():
    """git-lfs's server discovery: ``<url>.git/info/lfs``, ``.git`` added when missing."""
    assert parse("https://h/acme/app").lfs_endpoint == "https://h/acme/app.git/info/lfs"
    assert parse("https://h/acme/app.git").lfs_endpoint == "https://h/acme/app.git/info/lfs"


# -- what a server's answer means ----------------------------------------------------------


def test_a_repository_the_server_does_not_have_does_not_exist(git_server, git_home):
    """404 from the server: exists() is False, and opening it reads as not found."""
    spec = parse_locator("git:" + git_server.url("acme/missing.git"))
    assert GitRemoteProvider.exists(spec) is False
    with pytest.raises(RepositoryNotFound):
        GitRemoteProvider.open(spec).check_access(write=False)


def test_wrong_credentials_are_permission_denied(git_server, tmp_path, monkeypatch):
    """The helper's password is refused: permission_denied, naming where credentials
    come from; the password itself appears nowhere in the error."""
    generate(git_server.repository("acme/app.git"), commits=1, branches=0, tags=0)
    home = client_home(tmp_path / "h", [f"http://alice:wrong-password@127.0.0.1:{git_server.port}"])
    monkeypatch.setenv("HOME", str(home))
    provider = GitRemoteProvider.open(parse_locator("git:" + git_server.url("acme/app.git")))
    with pytest.raises(PermissionDenied) as denied:
        provider.check_access(write=False)
    assert "credential helpers" in denied.value.message
    assert "wrong-password" not in denied.value.message


def test_a_reader_passes_the_read_check_and_fails_the_write_check(
    git_server, tmp_path, monkeypatch
):
    """Write access is proven by a dry-run push reaching receive-pack: a reader lists
    the refs but is permission_denied for writing; nothing is pushed either way."""
    generate(git_server.repository("acme/app.git"), commits=1, branches=0, tags=0)
    home = client_home(tmp_path / "h", [f"http://bob:bob-secret@127.0.0.1:{git_server.port}"])
    monkeypatch.setenv("HOME", str(home))
    provider = GitRemoteProvider.open(parse_locator("git:" + git_server.url("acme/app.git")))
    provider.check_access(write=False)
    with pytest.raises(PermissionDenied):
        provider.check_access(write=True)
    assert not git_server.pushes()


def test_a_server_that_does_not_answer_is_unavailable(git_home):
    """Nothing listens on the port: provider_unavailable (retryable), not a refusal."""
    provider = GitRemoteProvider.open(
        parse_locator(f"git:http://127.0.0.1:{free_port()}/acme/app.git")
    )
    with pytest.raises(ProviderUnavailable) as unavailable:
        provider.check_access(write=False)
    assert unavailable.value.retryable


def test_only_a_file_remote_is_created_here(tmp_path, git_server):
    """create() makes a bare repository for file://, and refuses a server's URL."""
    path = tmp_path / "new.git"
    spec = parse_locator(f"git:file://{path}")
    assert GitRemoteProvider.exists(spec) is False
    GitRemoteProvider.create(spec)
    assert GitRemoteProvider.exists(spec) is True
    assert (path / "HEAD").is_file()
    assert not (path / ".git").exists()
    with pytest.raises(UsageError, match="create the repository on its server"):
        GitRemoteProvider.create(parse_locator("git:" + git_server.url("acme/new.git")))


# -- git's credential helpers for LFS -------------------------------------------------------


def recording_helper(home: Path, password: str, port: int) -> Path:
    """A credential helper that answers ``alice``/``password`` and records each call:
    its arguments and the attributes it was given (never the password's own line)."""
    log = home / "helper.log"
    helper = home / "helper.py"
    helper.write_text(
        "import json, sys\n"
        "action = sys.argv[1]\n"
        "given = dict(l.split('=', 1) for l in sys.stdin.read().splitlines() if '=' in l)\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(json.dumps({'argv': sys.argv[1:], 'action': action,\n"
        "        'keys': sorted(given), 'user': given.get('username'),\n"
        f"        'right': given.get('password') == {password!r}}}) + '\\n')\n"
        "if action == 'get':\n"
        f"    print('username=alice'); print('password={password}')\n"
    )
    helper.chmod(helper.stat().st_mode | stat.S_IEXEC)
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = !{sys.executable} {helper}\n")
    return log


def calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_lfs_asks_git_s_helper_once_and_approves_what_the_server_took(
    git_server, tmp_path, monkeypatch
):
    """First Batch request anonymous (401), then the helper's credential, approved once
    accepted; the password travels on the helper's stdin, never in its arguments."""
    home = tmp_path / "home"
    home.mkdir()
    log = recording_helper(home, "alice-secret", git_server.port)
    monkeypatch.setenv("HOME", str(home))
    generate(git_server.repository("acme/app.git"), commits=1, branches=0, tags=0)
    provider = GitRemoteProvider.open(parse_locator("git:" + git_server.url("acme/app.git")))
    content = b"object bytes\n"
    pointer = pointer_of(content)

    (upload,) = provider.lfs_batch(LfsOperation.UPLOAD, [pointer])
    provider.lfs_upload(upload, io.BytesIO(content))
    (again,) = provider.lfs_batch(LfsOperation.UPLOAD, [pointer])

    assert again.present
    assert [c["action"] for c in calls(log)] == ["get", "store"]
    assert calls(log)[1]["right"] is True
    assert all("alice-secret" not in " ".join(c["argv"]) for c in calls(log))
    statuses = [r.status for r in git_server.requests if r.service == "lfs"]
    assert statuses[:2] == [401, 200]


def test_lfs_rejects_a_credential_the_server_refused(git_server, tmp_path, monkeypatch):
    """The helper's password is wrong: the Batch request is refused (permission_denied)
    and the helper is told to forget that credential."""
    home = tmp_path / "home"
    home.mkdir()
    log = recording_helper(home, "not-alices", git_server.port)
    monkeypatch.setenv("HOME", str(home))
    generate(git_server.repository("acme/app.git"), commits=1, branches=0, tags=0)
    provider = GitRemoteProvider.open(parse_locator("git:" + git_server.url("acme/app.git")))

    with pytest.raises(PermissionDenied):
        provider.lfs_batch(LfsOperation.DOWNLOAD, [pointer_of(b"x")])

    assert [c["action"] for c in calls(log)] == ["get", "erase"]


# -- the SSH command -----------------------------------------------------------------------


def test_the_ssh_command_is_the_one_git_would_run(tmp_path, monkeypatch):
    """GIT_SSH_COMMAND (shell words) first, then GIT_SSH (a program), then
    core.sshCommand, then plain ssh."""
    home = client_home(tmp_path / "home")
    monkeypatch.setenv("HOME", str(home))
    shell = ["sh", "-c", 'ssh -i key "$@"', "ssh"]
    assert ssh_command({"GIT_SSH_COMMAND": "ssh -i key"}) == shell
    assert ssh_command({"GIT_SSH": "/usr/bin/my-ssh"}) == ["/usr/bin/my-ssh"]
    assert ssh_command({}) == ["ssh"]
    subprocess.run(
        ["git", "config", "--global", "core.sshCommand", "ssh -F /etc/reposync/ssh_config"],
        check=True,
        env={**os.environ, "HOME": str(home)},
    )
    assert ssh_command({}) == ["sh", "-c", 'ssh -F /etc/reposync/ssh_config "$@"', "ssh"]


def test_a_remote_s_repository_id_is_its_url_and_a_moved_url_is_another(tmp_path):
    """The URL is the id: a Binding made for one URL refuses to open another."""
    path = generate(tmp_path / "a.git", commits=1, branches=0, tags=0)
    spec = parse_locator(f"git:file://{path}")
    info = GitRemoteProvider.open(spec).endpoint()
    assert info.repository_id == info.locator == f"file://{path}"
    with pytest.raises(RepositoryMismatch):
        GitRemoteProvider.open(EndpointSpec("git", spec.locator, repository_id="file:///other"))
