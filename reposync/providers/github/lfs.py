"""GitHub's LFS store through the Git LFS Batch API (``providers/lfs_batch.py``).

``POST <git host>/<owner>/<name>.git/info/lfs/objects/batch``, authenticated exactly like
Git over HTTPS (HTTP Basic, ``x-access-token`` and the token: ``GitHubProvider.git_remote``).
Our token goes only to the Batch endpoint on the configured Git host; an action's
``href`` gets only the headers GitHub put in that action.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import requests

from reposync.providers.base import Clock
from reposync.providers.lfs_batch import LfsBatchClient


class GitHubLfs(LfsBatchClient):
    """One repository's LFS endpoint on GitHub (``<remote url>/info/lfs``)."""

    def __init__(
        self,
        session: requests.Session,
        remote_url: str,
        token: Callable[[], str],
        *,
        timeout: float,
        clock: Clock,
    ) -> None:
        def authorization() -> str:
            basic = base64.b64encode(f"x-access-token:{token()}".encode()).decode()
            return f"Basic {basic}"

        super().__init__(
            session, remote_url, authorization, timeout=timeout, clock=clock, forge="GitHub"
        )
