"""GitHub's LFS store: the Batch API (``providers/lfs_batch.py``) at
``<git host>/<owner>/<name>.git/info/lfs``, authenticated exactly like Git over HTTPS
(HTTP Basic, ``x-access-token`` and the token: ``GitHubProvider.git_remote``). Our own
token goes only to the Batch endpoint on the configured Git host; an action's ``href``
gets only the headers GitHub put in that action. GitHub answers "not found" for what a
caller may not see, so a 404 from the endpoint is ``PermissionDenied``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import requests

from reposync.providers.base import Clock, LfsOperation
from reposync.providers.lfs_batch import BatchRequest, LfsBatchStore


class _TokenAccess:
    """The installation or personal token, read fresh for each request (it rotates)."""

    def __init__(self, endpoint: str, token: Callable[[], str]) -> None:
        self.endpoint = endpoint
        self._token = token

    def request(self, operation: LfsOperation) -> BatchRequest:
        basic = base64.b64encode(f"x-access-token:{self._token()}".encode()).decode()
        return BatchRequest(self.endpoint, {"Authorization": f"Basic {basic}"})

    def refused(self, request: BatchRequest) -> bool:
        return False  # the token is the only credential there is

    def accepted(self, request: BatchRequest) -> None:
        pass


class GitHubLfs(LfsBatchStore):
    """One repository's LFS endpoint (``<remote url>/info/lfs``)."""

    def __init__(
        self,
        session: requests.Session,
        remote_url: str,
        token: Callable[[], str],
        *,
        timeout: float,
        clock: Clock,
    ) -> None:
        self.endpoint = remote_url.rstrip("/") + "/info/lfs"
        super().__init__(
            session,
            _TokenAccess(self.endpoint, token),
            name="GitHub",
            timeout=timeout,
            clock=clock,
            missing_means="denied",
        )
