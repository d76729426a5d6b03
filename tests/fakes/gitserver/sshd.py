"""A Git server over SSH: OpenSSH's own ``sshd`` on 127.0.0.1, as a bare server runs it.

``sshd -D -e -f <config>`` on a free port with a host key made for the test, one
authorized key (the test's client key) and nothing else: no password, no PAM, no
forwarding. The key's ``command=`` runs ``serve.py``, what Git hosting's forced commands
do (gitolite's, a forge's): ``git-upload-pack``/``git-receive-pack`` of a path under
``root`` (``ssh://user@host/acme/app.git`` and ``user@host:acme/app.git`` alike), and
``git-lfs-authenticate <path> <operation>``, which answers the LFS endpoint of the HTTP
server beside it with a token (git-lfs's SSH authentication, ``docs/api/authentication.md``),
unless the server is told it serves no LFS. ``GIT_PROTOCOL`` is accepted, so protocol v2
works as over any OpenSSH.

It runs as the current user when that is not root (sshd then logs in only that user); as
root (CI) it logs root in with the key, and needs ``/run/sshd``, sshd's privilege
separation directory. The client side is an SSH command for ``GIT_SSH_COMMAND``: the
test's key and a known_hosts holding this server's host key, nothing of ``~/.ssh``.
"""

from __future__ import annotations

import getpass
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"

#: The forced command: the only thing a login with the test's key can run.
SERVE = """\
import json, os, shlex, sys
SETTINGS = json.loads({settings!r})
words = shlex.split(os.environ.get("SSH_ORIGINAL_COMMAND", ""))
def repository(path):
    relative = os.path.normpath(path.lstrip("/"))
    if relative.startswith("..") or os.path.isabs(relative):
        sys.exit("fatal: '%s' does not appear to be a git repository" % path)
    return relative
with open(SETTINGS["log"], "a") as log:
    log.write(" ".join(words[:1] + words[2:]) + "\\n")
if len(words) == 2 and words[0] in ("git-upload-pack", "git-receive-pack"):
    os.chdir(SETTINGS["root"])
    os.execvp("git", ["git", words[0][4:], repository(words[1])])
if len(words) == 3 and words[0] == "git-lfs-authenticate" and SETTINGS["lfs"]:
    href = "%s/%s/info/lfs" % (SETTINGS["lfs"], repository(words[1]))
    print(json.dumps({{
        "href": href,
        "header": {{"Authorization": "RemoteAuth " + SETTINGS["token"]}},
        "expires_in": 3600,
    }}))
    sys.exit(0)
sys.stderr.write("%s: command not found\\n" % (words[0] if words else "shell"))
sys.exit(127)
"""


@dataclass
class SshServer:
    """``root``: the repositories; ``lfs_base``: the HTTP server whose LFS endpoints
    ``git-lfs-authenticate`` names (None: the server has no such command)."""

    root: Path
    directory: Path
    lfs_base: str | None = None
    lfs_token: str = "ssh-lfs-token"
    port: int = 0
    user: str = field(default_factory=lambda: "root" if os.geteuid() == 0 else getpass.getuser())

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.host_key = self.directory / "host_ed25519"
        self.client_key = self.directory / "client_ed25519"
        self.known_hosts = self.directory / "known_hosts"
        self.log = self.directory / "commands.log"
        self.command_file = self.directory / "serve.py"
        self._process: subprocess.Popen[bytes] | None = None
        for key in (self.host_key, self.client_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", str(key)],
                check=True,
            )
        self.write_command()
        self.start()

    def write_command(self) -> None:
        """(Re)write the forced command with the current LFS settings."""
        settings = json.dumps(
            {
                "root": str(self.root),
                "lfs": self.lfs_base,
                "token": self.lfs_token,
                "log": str(self.log),
            }
        )
        self.command_file.write_text(SERVE.format(settings=settings))

    def start(self) -> None:
        self.port = _free_port()
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        command = f"{sys.executable} {self.command_file}"
        public = self.client_key.with_suffix(".pub").read_text().strip()
        authorized = self.directory / "authorized_keys"
        authorized.write_text(
            f'command="{command}",no-port-forwarding,no-X11-forwarding,'
            f"no-agent-forwarding,no-pty {public}\n"
        )
        authorized.chmod(0o600)
        config = self.directory / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {authorized}",
                    "PidFile none",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitRootLogin prohibit-password",
                    f"AllowUsers {self.user}",
                    "AcceptEnv GIT_PROTOCOL",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        host_public = self.host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_public[0]} {host_public[1]}\n")
        self._process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=(self.directory / "sshd.log").open("ab"),
        )
        deadline = time.monotonic() + 10
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"sshd exited: {(self.directory / 'sshd.log').read_text()[-2000:]}"
                )
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("sshd did not start listening")
            time.sleep(0.05)

    @property
    def ssh_command(self) -> str:
        """``GIT_SSH_COMMAND`` for this server: its key and known host, nothing else."""
        return " ".join(
            shlex.quote(word)
            for word in (
                "ssh",
                "-F",
                "/dev/null",
                "-i",
                str(self.client_key),
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                f"UserKnownHostsFile={self.known_hosts}",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "BatchMode=yes",
                "-o",
                f"Port={self.port}",
            )
        )

    def ssh_command_through(self, port: int) -> str:
        """``ssh_command`` reaching this server through a relay listening on ``port``
        (``SilentLink``): the server's host key still checks, under its own address."""
        return self.ssh_command.replace(f"Port={self.port}", f"Port={port}") + (
            f" -o HostKeyAlias=[127.0.0.1]:{self.port}"
        )

    def url(self, name: str) -> str:
        """``ssh://user@127.0.0.1:port/<name>``."""
        return f"ssh://{self.user}@127.0.0.1:{self.port}/{name}"

    def scp_url(self, name: str) -> str:
        """``user@127.0.0.1:<name>`` (the port comes from the SSH command)."""
        return f"{self.user}@127.0.0.1:{name}"

    def commands(self) -> list[str]:
        """What logins ran, in order (``git-upload-pack``, ``git-lfs-authenticate download``)."""
        return self.log.read_text().splitlines() if self.log.exists() else []

    def close(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
