"""The environment every ``git`` child runs in: nothing of the worker's secrets.

The transport (``push``, ``fetch_refs``, ``run_git``) and the push workspace both start
``git``; both take its environment from here, so neither needs the other for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

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
