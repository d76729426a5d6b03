"""The environment every ``git`` child runs in: nothing of the worker's secrets.

The transport (``push``, ``fetch_refs``, ``run_git``) and the push workspace both start
``git``; both take its environment from here, so neither needs the other for it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping

#: What ``git`` (and a local target's hooks, when they run) may see of this process's
#: environment: where programs and the home are, locale, proxies and CA bundles. Never
#: the REPOSYNC_* settings, tokens, key paths or the broker and database URLs.
INHERITED_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "TMPDIR",
        "USER",
        "LOGNAME",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
        "GIT_EXEC_PATH",
    }
)


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: child processes inherit no secret of the worker's."""
    env = {name: value for name, value in os.environ.items() if name in INHERITED_ENV}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "LANG": "C",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
        }
    )
    if extra:
        env.update(extra)
    return env


def stall_guard(seconds: float) -> dict[str, str]:
    """git's environment for a remote reached over HTTP: give up a transfer during which
    not one byte moved for ``seconds`` (git's ``http.lowSpeedLimit`` and
    ``lowSpeedTime``; 0: never), a transport failure a stage's retry takes up. Without
    it, a connection dropped silently on the way holds git, and the Run, until the
    task's time limit (an embedded ``sync`` forever): curl has no timeout of its own.
    Each provider puts it in its HTTP remotes' environment (``REPOSYNC_GIT_STALL_SECONDS``)."""
    if not seconds:
        return {}
    return {
        "GIT_HTTP_LOW_SPEED_LIMIT": "1",
        "GIT_HTTP_LOW_SPEED_TIME": str(max(1, round(seconds))),
    }


#: What git takes for OpenSSH (its ``ssh`` variant, which it hands ``-o`` options too):
#: the command's program name, without a directory or ``.exe``.
_OPENSSH = frozenset({"ssh"})


def ssh_stall_guard(
    seconds: float, env: Mapping[str, str], configured: Callable[[], str | None]
) -> dict[str, str]:
    """The SSH side of ``stall_guard``: OpenSSH gives up a connection whose server has
    answered nothing for ``seconds`` (``ServerAliveInterval`` at a third of it, three
    unanswered; ``ConnectTimeout``, which also bounds the handshake). A connection
    dropped silently on the way (a NAT or firewall forgetting it) otherwise holds
    ``ssh``, git and the Run until the task's time limit, as curl would over HTTP.

    The options go after the SSH command git would run (``GIT_SSH_COMMAND``, else
    ``core.sshCommand``, which ``configured`` reads, else ``ssh``), as git adds its own
    ``-o`` options after it, and only when git takes that command for OpenSSH
    (``GIT_SSH_VARIANT``, else its program's name): a wrapper of another kind, or a
    ``GIT_SSH`` program (no shell words to add to), is left as the operator made it.
    """
    if not seconds or env.get("GIT_SSH"):
        return {}
    command = env.get("GIT_SSH_COMMAND") or configured() or "ssh"
    variant = env.get("GIT_SSH_VARIANT")
    if variant is None or variant == "auto":
        try:
            words = shlex.split(command)
        except ValueError:  # git would fail on it too; not ours to mend
            return {}
        program = os.path.basename(words[0]).removesuffix(".exe") if words else ""
        if program not in _OPENSSH:
            return {}
    elif variant != "ssh":
        return {}
    interval = max(1, round(seconds / 3))
    options = (
        f"-o ServerAliveInterval={interval} -o ServerAliveCountMax=3 "
        f"-o ConnectTimeout={max(1, round(seconds))}"
    )
    return {"GIT_SSH_COMMAND": f"{command} {options}"}
