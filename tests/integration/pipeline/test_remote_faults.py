"""Seeded faults against real ``reposync sync`` processes writing to a remote forge.

The chaos soak (``tests.chaos``) kills and freezes workers writing to a local forge,
whose batch is one transaction. A remote forge's batch is hundreds of requests, so a
process can die or freeze between any two of them: this kind of test was missing, and
the first write-twice bug it would have caught (a frozen ``reposync sync`` continued
after a takeover and created issues again) was found by reading.

Each seed picks a fault and the write it strikes after: ``sigkill`` (the process dies;
the next ``reposync sync`` resumes its Run at once, the holder being gone) or
``sigstop`` (the process freezes past its lease while a write is in the forge's hands,
its answer held back; a second ``reposync sync`` takes the Run over and finishes it,
then the frozen one is continued). A process frozen between its last guard check and
its request's bytes leaving cannot be fenced by a forge that offers no fenced create
(``providers.http.send_once``): that moment is not what this test strikes. Then one
more sync must complete without writing, and the forge (GitHub's and Forgejo's test
servers: both write through ``ForgeWriter`` and ``send_once``) must hold every issue
and comment exactly once.
CI runs three seeds; ``REPOSYNC_SOAK=1`` runs ``REPOSYNC_SOAK_SEEDS`` (default 20).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.forgejo import ForgejoFake
from tests.fakes.github import GitHubFake
from tests.forgejo_env import instance, locator
from tests.github_env import github_env
from tests.gitrepo import generate
from tests.integration.forges.test_forge_sync import WHEN, forge
from tests.integration.pipeline.test_write_guard import take_over, wait_for_the_lease_to_expire

REPO = "acme/widgets"
SOAK = os.environ.get("REPOSYNC_SOAK", "") not in ("", "0")
SEEDS = range(int(os.environ.get("REPOSYNC_SOAK_SEEDS", "20")) if SOAK else 3)
#: The hosted forges whose batches go through ``ForgeWriter`` and ``send_once``.
FORGES = ("github", "forgejo")


@dataclass
class Remote:
    """One hosted forge's test server as the test sees it: the locator and environment
    a ``reposync sync`` process needs, its write requests, and its issues and comments."""

    fake: Any
    target: str
    env: dict[str, str]

    @classmethod
    def open(cls, name: str, stack: ExitStack) -> Remote:
        if name == "github":
            github = stack.enter_context(GitHubFake())
            github.state.create_repo(REPO, private=True)
            env = {
                **github_env(github, github.add_token("acme")),
                "REPOSYNC_GITHUB_WRITE_INTERVAL": "0",
            }
            return cls(github, f"github:{REPO}", env)
        forgejo = stack.enter_context(ForgejoFake())
        forgejo.state.create_repo(REPO, private=True)
        server = instance(forgejo, forgejo.add_token("acme"))
        instances = {server.name: {"url": server.url, "token": server.token}}
        env = {"REPOSYNC_FORGEJO_INSTANCES": json.dumps(instances)}
        return cls(forgejo, f"forgejo:{locator(forgejo, REPO)}", env)

    def writes(self) -> int:
        """Write requests the forge answered."""
        if isinstance(self.fake, GitHubFake):
            log = [r for r in list(self.fake.requests_log) if r.host == "api"]
        else:
            log = list(self.fake.requests)
        return sum(1 for r in log if r.method == "POST")

    def issues(self) -> dict[int, str]:
        """Titles by number."""
        if isinstance(self.fake, GitHubFake):
            return {i.number: i.title for i in self.fake.state.issues(REPO)}
        return {i.index: i.title for i in self.fake.state.repo(REPO).issues.values()}

    def comments(self) -> list[tuple[int, str]]:
        """(issue number, body) of every comment."""
        if isinstance(self.fake, GitHubFake):
            return [(c.issue_number, c.body) for c in self.fake.state.comments(REPO)]
        return [(c.index, c.body) for c in self.fake.state.repo(REPO).comments.values()]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("forge_name", FORGES)
def test_a_killed_or_frozen_sync_never_writes_twice(
    forge_name: str, seed: int, tmp_path: Path, data_dir: Path
):
    """A seeded kill or freeze between two writes of a remote batch: the pair still
    converges, nothing is lost, nothing is created twice, and a last sync writes nothing."""
    with ExitStack() as stack:
        remote = Remote.open(forge_name, stack)
        _strike(remote, seed, tmp_path, data_dir)
        remote.fake.assert_clean(requests_too=True)  # every exchange met the contract


def _strike(remote: Remote, seed: int, tmp_path: Path, data_dir: Path) -> None:
    rng = random.Random(seed)
    fake = remote.fake
    source = generate(tmp_path / "src.git", commits=2, branches=0, tags=0)
    issues = rng.randint(8, 14)
    comments: dict[str, list[str]] = {}
    with forge(source) as f:
        for n in range(issues):
            title = f"issue {n:02d} of seed {seed}"
            issue = f.create_issue(title, author="ann", body=f"body {n}", created_at=WHEN)
            comments[title] = [f"comment {n}.{k}" for k in range(rng.randint(0, 3))]
            for body in comments[title]:
                f.add_comment("issue", issue, body, author="bob", created_at=WHEN)
    writes = issues + sum(len(c) for c in comments.values())
    fault = rng.choice(["sigkill", "sigstop"])
    strike_after = rng.randint(1, writes - 1)
    # The write a freeze strikes is performed, then its answer held back for 3 s: the
    # freeze lands while it is in the forge's hands, however slow this machine is.
    frozen_at = strike_after if fault == "sigstop" else writes  # a kill needs no hold
    held = fake.faults.add("timeout", "POST", "", host="api", seconds=3.0, after=frozen_at)
    paced = fake.faults.add("latency", "POST", "", host="api", count=None, seconds=0.25)
    env = {**os.environ, **remote.env, "REPOSYNC_LEASE_TTL": "3"}
    argv = [sys.executable, "-m", "reposync", "sync", f"local:{source}", remote.target]
    struck = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not (held.hits if fault == "sigstop" else remote.writes() >= strike_after):
            assert struck.poll() is None, struck.communicate()
            assert time.monotonic() < deadline, "the writes never reached the fault"
            time.sleep(0.02)
        if fault == "sigkill":
            struck.kill()
            struck.communicate()
            # The request the dead process had out is still the forge's to perform: let
            # it land before the next sync reads back (a forge that performs it later
            # than any read-back is the moment no marker can cover).
            while remote.writes() < paced.hits + held.hits:
                assert time.monotonic() < deadline, "the forge never answered"
                time.sleep(0.02)
            taker = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
        else:
            struck.send_signal(signal.SIGSTOP)
            wait_for_the_lease_to_expire(data_dir / "reposync.db")
            taker = take_over(argv, env, struck)
            if struck.poll() is None:
                struck.send_signal(signal.SIGCONT)
                struck.communicate(timeout=60)
        assert taker.returncode == 0, (fault, strike_after, taker.stderr)
    finally:
        if struck.poll() is None:
            struck.send_signal(signal.SIGCONT)
            struck.kill()
            struck.communicate()

    fake.faults.clear()
    before = remote.writes()
    last = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=180)
    assert last.returncode == 0, last.stderr
    assert remote.writes() == before, "the last sync wrote"
    by_number = remote.issues()
    assert sorted(by_number.values()) == sorted(comments), (fault, strike_after)
    found: dict[str, list[str]] = {title: [] for title in comments}
    for number, body in remote.comments():
        found[by_number[number]].append(body)
    for title, bodies in comments.items():
        # Each source comment once, under its own issue (bodies carry an attribution
        # header on these forges, so each is looked for inside one).
        assert len(found[title]) == len(bodies), (fault, strike_after, title, found[title])
        for body in bodies:
            assert sum(body in text for text in found[title]) == 1, (fault, strike_after, body)
