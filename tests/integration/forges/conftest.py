"""Either forge's test server with ``REPO``, and a Run context pointed at it: what the
fault matrices of the Git host and of LFS run against, one forge after the other."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reposync.service.context import ServiceContext
from tests.fakes.forge_server.clock import ManualClock
from tests.fakes.forgejo import ForgejoFake
from tests.fakes.gitserver import lfs_store
from tests.forgejo_env import embedded_world as forgejo_world
from tests.forgejo_env import locator
from tests.gitrepo import refs
from tests.integration.forges.test_github_sync import (
    REPO,
    _git_refs,
    _receive_pack_statuses,
    _world,
)

#: Where each forge serves LFS requests: (method, path pattern) by what the request does.
LFS_PLACES = {
    "github": {
        "batch": ("POST", r"/widgets\.git/info/lfs/objects/batch$"),
        "upload": ("PUT", r"^/_lfs/\d+/[0-9a-f]{64}$"),
        "verify": ("POST", r"^/_lfs/\d+/[0-9a-f]{64}/verify$"),
    },
    "forgejo": {
        "batch": ("POST", r"/widgets\.git/info/lfs/objects/batch$"),
        "upload": ("PUT", r"/widgets\.git/info/lfs/objects/[0-9a-f]{64}/\d+$"),
        "verify": ("POST", r"/widgets\.git/info/lfs/verify$"),
    },
}


@dataclass
class Host:
    """A test server with ``REPO``, and a Run context pointed at it."""

    ctx: ServiceContext
    #: ``GitHubFake`` or ``ForgejoFake``: both take faults for their host ``"git"``.
    fake: Any
    target: str
    #: The target repository's refs, as its Git directory holds them.
    refs: Callable[[], dict[str, str]]
    #: The statuses of the pushes' requests, as the Git host answered them.
    pushes: Callable[[], list[int]]
    #: The target's LFS objects, OID -> bytes.
    lfs_objects: Callable[[], dict[str, bytes]]
    #: Every LFS request the Git host answered: (method, path, status; 0 for none).
    lfs_requests: Callable[[], list[tuple[str, str, int]]]
    #: ``LFS_PLACES`` of this forge.
    lfs_places: dict[str, tuple[str, str]]
    #: What the target holds, per kind, by what names each object: labels' names,
    #: milestones' titles, issues' and pull requests' titles, comments' bodies (each
    #: carries its source's marker), releases' tags. One object written twice shows
    #: as its name twice.
    held: Callable[[], dict[str, list[str]]]
    #: Every write request (not a GET or HEAD) the forge's API answered.
    api_writes: Callable[[], list[str]]


_READS = ("GET", "HEAD")


def _is_lfs(path: str) -> bool:
    return "/info/lfs/" in path or path.startswith("/_lfs/")


@pytest.fixture(params=["github", "forgejo"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    if request.param == "github":
        fake = request.getfixturevalue("github_fake")
        for ctx, _, _ in _world(fake, tmp_path):
            yield Host(
                ctx,
                fake,
                f"github:{REPO}",
                lambda: _git_refs(fake),
                lambda: _receive_pack_statuses(fake),
                lambda: fake.lfs.objects(REPO),
                lambda: [
                    (r.method, r.path, r.status)
                    for r in fake.requests_log
                    if r.host == "git" and _is_lfs(r.path)
                ],
                LFS_PLACES["github"],
                lambda: {
                    "labels": [label.name for label in fake.state.labels(REPO)],
                    "milestones": [m.title for m in fake.state.milestones(REPO)],
                    "issues": [i.title for i in fake.state.issues(REPO) + fake.state.pulls(REPO)],
                    "comments": [c.body for c in fake.state.comments(REPO)],
                    "releases": [r.tag_name for r in fake.state.releases(REPO)],
                },
                lambda: [
                    f"{r.method} {r.path}"
                    for r in fake.requests_log
                    if r.host in ("api", "uploads") and r.method not in _READS
                ],
            )
        return
    with ForgejoFake(clock=ManualClock()) as forgejo:
        repo = forgejo.state.create_repo(REPO, private=True)
        with forgejo_world(forgejo, tmp_path) as ctx:
            yield Host(
                ctx,
                forgejo,
                f"forgejo:{locator(forgejo, REPO)}",
                lambda: refs(repo.git_dir),
                lambda: [
                    status
                    for _, path, status in forgejo.git_requests
                    if path.endswith("/git-receive-pack")
                ],
                lambda: lfs_store.stored_objects(repo.git_dir),
                lambda: [request for request in forgejo.git_requests if _is_lfs(request[1])],
                LFS_PLACES["forgejo"],
                lambda: {
                    "labels": [label.name for label in repo.labels.values()],
                    "milestones": [m.title for m in repo.milestones.values()],
                    "issues": [i.title for i in repo.issues.values()],
                    "comments": [c.body for c in repo.comments.values() if c.review_id is None],
                    "releases": [r.tag_name for r in repo.releases.values()],
                },
                lambda: [
                    f"{r.method} {r.path}" for r in forgejo.requests if r.method not in _READS
                ],
            )
