"""The GitHub test server's limit on ref updates per push, driven by real ``git push``.

GitHub refuses a push that asks for too many ref updates at once (spokes'
``receive.refupdatecommandlimit``: "maximum ref updates exceeded: N commands sent but max
allowed is M"; users see an HTTP 500). The fake refuses more than
``max_ref_updates_per_push`` (by default 500, what reposync's GitHub provider promises
to stay within) before any Git runs: no object or ref lands.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.fakes.github import GitHubFake, github_fake
from tests.gitrepo import generate, refs

REPO = "acme/widgets"

fake = pytest.fixture(name="fake")(github_fake)


def _with_branches(path: Path, count: int) -> Path:
    """A repository whose ``main`` and ``count`` more branches all point at one commit."""
    source = generate(path, commits=3, branches=0, tags=0)
    tip = refs(source)["refs/heads/main"]
    commands = "".join(f"create refs/heads/b{n:04d} {tip}\n" for n in range(count))
    subprocess.run(
        ["git", "--git-dir", str(source), "update-ref", "--stdin"],
        input=commands,
        text=True,
        check=True,
    )
    return source


def _push(source: Path, url: str, *refspecs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "--git-dir", str(source), "push", url, *refspecs],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_push_of_more_ref_updates_than_the_limit_is_refused_whole(fake, tmp_path):
    """501 ref updates in one push: git is answered HTTP 500 and nothing lands; the same
    refs in pushes of 500 and 1 all land."""
    fake.state.create_repo(REPO)
    url = fake.git_remote(REPO, fake.add_token("acme"))
    source = _with_branches(tmp_path / "src.git", 500)  # + main: 501 refs

    refused = _push(source, url, "refs/heads/*:refs/heads/*")

    assert fake.max_ref_updates_per_push == 500
    assert refused.returncode != 0
    assert "HTTP 500" in refused.stderr
    assert refs(fake.state.git_dir(REPO)) == {}
    [push] = [r for r in fake.requests_log.records if r.path.endswith("/git-receive-pack")]
    assert push.status == 500
    assert fake.receive_pack_requests == []  # receive-pack never ran

    first = _push(source, url, *(f"refs/heads/b{n:04d}" for n in range(500)))
    second = _push(source, url, "refs/heads/main")

    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert refs(fake.state.git_dir(REPO)) == refs(source)
    assert [len(updates) for updates in fake.receive_pack_requests] == [500, 1]
    fake.assert_clean()


def test_the_refusal_names_the_count_and_the_limit_as_github_does(tmp_path):
    """The answer's body carries spokes' words, the number sent and the limit (read
    from git's own trace of what the server answered)."""
    with GitHubFake(max_ref_updates_per_push=3) as server:
        server.state.create_repo(REPO)
        url = server.git_remote(REPO, server.add_token("acme"))
        source = _with_branches(tmp_path / "src.git", 3)
        body = subprocess.run(
            ["git", "--git-dir", str(source), "push", url, "refs/heads/*:refs/heads/*"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "GIT_TRACE_CURL": str(tmp_path / "curl.trace")},
        )

        assert body.returncode != 0
        trace = (tmp_path / "curl.trace").read_text(errors="replace").splitlines()
        received = "".join(
            line.split("<= Recv data: ", 1)[1] for line in trace if "<= Recv data: " in line
        )
        assert "maximum ref updates exceeded: 4 commands sent but max allowed is 3" in received
        assert refs(server.state.git_dir(REPO)) == {}
        server.assert_clean()


def test_no_limit_takes_any_number_of_ref_updates(tmp_path):
    """``max_ref_updates_per_push=None``: 501 refs land in one push."""
    with GitHubFake(max_ref_updates_per_push=None) as server:
        server.state.create_repo(REPO)
        url = server.git_remote(REPO, server.add_token("acme"))
        source = _with_branches(tmp_path / "src.git", 500)

        pushed = _push(source, url, "refs/heads/*:refs/heads/*")

        assert pushed.returncode == 0, pushed.stderr
        assert refs(server.state.git_dir(REPO)) == refs(source)
        assert [len(updates) for updates in server.receive_pack_requests] == [501]
        server.assert_clean()
