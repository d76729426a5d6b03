"""A plain Git remote's LFS store, found and authenticated as git-lfs finds it.

* ``http(s)``: the Batch API at ``<url>.git/info/lfs`` (git-lfs's server discovery).
  The first request goes without credentials, as git's own do; a 401 asks git's
  credential helpers (``credentials.fill``), a success approves what they gave, a second
  401 rejects it.
* ``ssh``: ``git-lfs-authenticate <path> <operation>`` run over SSH with the same SSH
  command git uses (``GIT_SSH_COMMAND``, ``GIT_SSH``, ``core.sshCommand``, else
  ``ssh``; the agent or the service user's keys authenticate). Its JSON answer names the
  Batch endpoint (``href``) and the headers to send there, for ``expires_in`` seconds.
  A server without that command (``git-lfs-transfer``-only servers included: reposync
  does not speak the pure-SSH transfer protocol) serves no LFS to reposync: its objects
  are answered ``lfs_not_served``.
* ``file``: the repository's ``lfs/objects``, exactly as a local forge keeps them
  (``providers/lfs_files.py``).

A server whose Batch endpoint answers "not found" serves no LFS (a bare
``git http-backend``): each object is answered ``lfs_not_served``, so only the refs
that need LFS objects stay out of a push.
"""

from __future__ import annotations

import base64
import json
import shlex
import time
from collections.abc import Mapping
from typing import Any

from reposync.errors import LfsNotServed, PermissionDenied, ProviderUnavailable
from reposync.git.process import last_line, run_git
from reposync.providers.base import LfsOperation
from reposync.providers.gitremote import credentials
from reposync.providers.gitremote.urls import RemoteUrl
from reposync.providers.lfs_batch import BatchRequest

#: An answer of ``git-lfs-authenticate`` is asked for again this long before it expires.
_EXPIRY_MARGIN = 30.0
#: How long an answer without ``expires_in`` is used (git-lfs: until a 401).
_DEFAULT_LIFETIME = 600.0
#: What ``ssh`` and shells print when the server has no such command.
_NO_COMMAND = ("not found", "unknown command", "invalid command", "not recognized", "not allowed")
#: What ``ssh`` prints when it cannot reach the server at all.
_UNREACHABLE = (
    "could not resolve hostname",
    "connection refused",
    "connection timed out",
    "no route to host",
    "network is unreachable",
    "connection closed",
    "connection reset",
)


class HelperAccess:
    """HTTP(S): anonymous first, then whatever git's credential helpers hold."""

    def __init__(self, remote: RemoteUrl, env: Mapping[str, str]) -> None:
        self.remote = remote
        self.endpoint = remote.lfs_endpoint
        self._env = dict(env)
        self._credential: credentials.Credential | None = None
        self._approved = False

    def request(self, operation: LfsOperation) -> BatchRequest:
        if self._credential is None:
            return BatchRequest(self.endpoint, {})
        return BatchRequest(self.endpoint, {"Authorization": _basic(self._credential)})

    def refused(self, request: BatchRequest) -> bool:
        if "Authorization" not in request.headers:
            self._credential = credentials.fill(self.remote.url, self._env)
            return self._credential is not None
        if self._credential is not None:
            credentials.reject(self._credential, self._env)
        self._credential = None
        self._approved = False
        return False

    def accepted(self, request: BatchRequest) -> None:
        if self._credential is not None and not self._approved:
            credentials.approve(self._credential, self._env)
            self._approved = True


class SshAccess:
    """SSH: ``git-lfs-authenticate`` names the endpoint and its headers."""

    def __init__(self, remote: RemoteUrl, env: Mapping[str, str]) -> None:
        self.remote = remote
        self._env = dict(env)
        self._answers: dict[LfsOperation, tuple[BatchRequest, float]] = {}

    def request(self, operation: LfsOperation) -> BatchRequest:
        known = self._answers.get(operation)
        if known is not None and time.monotonic() < known[1]:
            return known[0]
        request, lifetime = self._authenticate(operation)
        self._answers[operation] = (request, time.monotonic() + lifetime - _EXPIRY_MARGIN)
        return request

    def refused(self, request: BatchRequest) -> bool:
        """A 401: what the server said is spent; ask it once more."""
        self._answers.clear()
        return True

    def accepted(self, request: BatchRequest) -> None:
        pass

    def _authenticate(self, operation: LfsOperation) -> tuple[BatchRequest, float]:
        remote = self.remote
        command = f"git-lfs-authenticate {shlex.quote(remote.path)} {operation.value}"
        argv = [*ssh_command(self._env), *(["-p", str(remote.port)] if remote.port else [])]
        argv += [remote.ssh_destination, command]
        result = run_git(argv, env=self._env, check=False)
        where = f"git:{remote.url}"
        if result.returncode != 0:
            said = last_line(result.stderr)
            lowered = result.stderr.lower()
            if "permission denied" in lowered or "host key verification failed" in lowered:
                raise PermissionDenied(f"{where}: ssh refused git-lfs-authenticate: {said}")
            if result.returncode == 255 and any(word in lowered for word in _UNREACHABLE):
                raise ProviderUnavailable(f"{where}: ssh could not reach the server: {said}")
            if result.returncode == 127 or any(word in lowered for word in _NO_COMMAND):
                raise LfsNotServed(
                    f"{where} serves no Git LFS over SSH (git-lfs-authenticate: {said})"
                )
            raise LfsNotServed(
                f"{where}: git-lfs-authenticate failed (exit {result.returncode}): {said}"
            )
        try:
            answer: Any = json.loads(result.stdout)
        except ValueError:
            answer = None
        href = answer.get("href") if isinstance(answer, dict) else None
        if not isinstance(href, str) or not href.startswith(("https://", "http://")):
            raise LfsNotServed(f"{where}: git-lfs-authenticate gave no HTTP(S) endpoint")
        header = answer.get("header") or {}
        headers = {str(k): str(v) for k, v in header.items()} if isinstance(header, dict) else {}
        expires_in = answer.get("expires_in")
        lifetime = (
            float(expires_in)
            if isinstance(expires_in, int | float) and expires_in > 0
            else _DEFAULT_LIFETIME
        )
        return BatchRequest(href, headers), max(lifetime, _EXPIRY_MARGIN + 1.0)


def ssh_command(env: Mapping[str, str]) -> list[str]:
    """The SSH command git would run for this environment, as an argument list.

    ``GIT_SSH_COMMAND`` and ``core.sshCommand`` are shell words (git runs them through
    ``sh``, and so does this, appending the arguments); ``GIT_SSH`` is a program.
    """
    shell = env.get("GIT_SSH_COMMAND")
    if not shell and not env.get("GIT_SSH"):
        shell = configured_ssh(env)
    if shell:
        return ["sh", "-c", f'{shell} "$@"', "ssh"]
    return [env.get("GIT_SSH") or "ssh"]


def configured_ssh(env: Mapping[str, str]) -> str | None:
    """git's ``core.sshCommand``, as git would read it in ``env``, if one is set."""
    configured = run_git(["git", "config", "--get", "core.sshCommand"], env=env, check=False)
    return configured.stdout.strip() or None if configured.returncode == 0 else None


def _basic(credential: credentials.Credential) -> str:
    token = f"{credential.username}:{credential.password}".encode()
    return "Basic " + base64.b64encode(token).decode()
